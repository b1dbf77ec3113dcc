"""The deterministic compressor: the embedded default, no model and no network.

It emits one claim per active fact (derived from the fact and its source events),
carries open items and unresolved conflicts as such, and renders a prose summary
from the claims and the recent conversation (:mod:`lossgate.model.wording` writes every
line). Under a token budget it drops, in order: older conversation, contextual
facts, important facts; never a fact the gate must preserve
(``CompressionRequest.must_keep``: critical facts, negations, exact numbers,
dates, identifiers, permissions, open items, conflicts). If those alone exceed
the budget it raises :class:`~lossgate.consolidate.compressor.BudgetExceeded`
rather than truncate. Same snapshot, same bytes (invariant 10).
"""

from __future__ import annotations

import re
from typing import Any

from lossgate.consolidate.compressor import BudgetExceeded, CompressionRequest, claim_of
from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.model.records import Fact
from lossgate.model.wording import CONVERSATION_TITLE, conflict_line, event_line, fact_line, header_line, section_lines

__all__ = ["DeterministicCompressor"]

_RANK = {"critical": 0, "important": 1, "contextual": 2}
# What a period digest keeps first: a digit, a currency sign, a negation or a word that dates
# something ("yesterday", "last Friday", "in May"). A heuristic of the compressor's own; the
# gate's atom extractor judges the result independently.
_SALIENT = re.compile(
    r"\d|[$€£¥]|\b(?:not|no|never|cannot|can't|won't|don't|didn't|isn't|wasn't"
    r"|yesterday|today|tonight|tomorrow|ago|last|next|weekend"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|january|february|march|april|may|june|july|august|september|october|november|december)\b",
    re.IGNORECASE,
)


class DeterministicCompressor:
    """Renders claims and prose from the ledger and the conversation; same snapshot, same bytes."""

    name = "deterministic"
    version = "1"
    prompt_version = "render-v1"

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter

    def count(self, text: str) -> int:
        return (self._counter or default_counter())(text)

    def compress(self, request: CompressionRequest) -> dict[str, Any]:
        """Return the artifact body as a JSON-ready dict. Raises :class:`BudgetExceeded`."""
        conflicted = {fid for c in request.conflicts for fid in c.fact_ids}
        keep = request.must_keep | conflicted
        # Must-keep facts first, then by criticality: what does not fit is the most disposable.
        facts = sorted(
            request.facts,
            key=lambda f: (
                f.fact_id not in keep,
                _RANK[request.predicates[f.predicate].criticality],
                f.predicate,
                f.seq,
            ),
        )
        budget = request.budget_tokens
        header = header_line(request.tenant_id, request.subject_id)
        if request.period:
            header += "\n" + request.period
        lines = [header]
        # The open conflicts' lines must be carried: their room is taken before any fact's.
        conflict_lines = [conflict_line(c.predicate, c.fact_ids) for c in request.conflicts]
        used = self.count(header) + sum(self.count(line) + 1 for line in conflict_lines)
        kept: list[Fact] = []
        for fact in facts:
            line = fact_line(fact)
            cost = self.count(line) + 1
            if budget is not None and used + cost > budget:
                if fact.fact_id in keep:
                    raise BudgetExceeded(
                        f"the facts that must be preserved alone exceed the budget of {budget} tokens "
                        f"(at {fact.fact_id}); raise the budget: lossgate never truncates a critical fact"
                    )
                continue  # disposable: dropped, and the gate records the loss
            lines.append(line)
            used += cost
            kept.append(fact)
        lines += conflict_lines
        if budget is not None and used > budget:
            raise BudgetExceeded(f"critical facts and open conflicts exceed the budget of {budget} tokens")
        lines += self._continuity(request, budget, used)
        kept_ids = {f.fact_id for f in kept}
        return {
            "tenant_id": request.tenant_id,
            "subject_id": request.subject_id,
            "claims": [claim_of(f, request.withdrawn_event_ids) for f in kept],
            "open_items": sorted(f.fact_id for f in kept if request.predicates[f.predicate].category == "obligation"),
            "unresolved_conflicts": [
                {"conflict_id": c.conflict_id, "fact_ids": list(c.fact_ids)}
                for c in request.conflicts
                if set(c.fact_ids) <= kept_ids
            ],
            "summary": "\n".join(lines),
        }

    def _continuity(self, request: CompressionRequest, budget: int | None, used: int) -> list[str]:
        """Recent conversation, newest kept first, whole events only (a cut event could cut a number)."""
        candidates = [event_line(e) for e in request.events if e.text and e.event_id not in request.outdated_event_ids]
        if request.parent is not None:
            candidates = section_lines(request.parent.summary, CONVERSATION_TITLE) + candidates
        title = CONVERSATION_TITLE
        used += self.count(title) + 1
        if request.period is None:
            order = list(range(len(candidates) - 1, -1, -1))  # newest first, until the budget ends
        else:
            # A period's digest: lines with a number, an amount, a date, an identifier or a
            # negation first (newest first within each rank), then the rest while room is left.
            order = sorted(range(len(candidates)), key=lambda i: (not _SALIENT.search(candidates[i]), -i))
        chosen: set[int] = set()
        for i in order:
            cost = self.count(candidates[i]) + 1
            if budget is not None and used + cost > budget:
                if request.period is None:
                    break
                continue
            chosen.add(i)
            used += cost
        return [title, *(candidates[i] for i in sorted(chosen))] if chosen else []
