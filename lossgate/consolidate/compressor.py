"""The compressor protocol and the deterministic compressor (the embedded default).

A compressor turns a :class:`CompressionRequest` (the authorized inputs of one
snapshot) into raw output: a JSON object in the shape of
:class:`~lossgate.records.ArtifactBody`. Raw, because output from a model can be
malformed; the pipeline parses it, keeps the raw text with the attempt, and
lets the gate judge the result. A compressor never sees deleted or revoked
content: the request is built from the authorized view only.

The deterministic compressor needs no model and no network. It emits one claim
per active fact (derived from the fact and its source events), carries open
items and unresolved conflicts as such, and renders a prose summary from the
claims and the recent conversation. Under a token budget it drops, in order:
older conversation, contextual facts, important facts; never a fact the gate
must preserve (``CompressionRequest.must_keep``: critical facts, negations,
exact numbers, dates, identifiers, permissions, open items, conflicts). If
those alone exceed the budget it raises :class:`BudgetExceeded` rather than
truncate.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.errors import ConfigError, LossgateError
from lossgate.lines import conflict_line, event_line, fact_line, header_line
from lossgate.records import ArtifactBody, Conflict, Event, Fact, Predicate
from lossgate.values import encode_value

__all__ = ["CompressionRequest", "Compressor", "DeterministicCompressor", "BudgetExceeded", "CompressionError",
           "load_compressor", "claim_of"]

_RANK = {"critical": 0, "important": 1, "contextual": 2}
CONVERSATION_TITLE = "Conversation:"  # heads the recent-conversation section of a summary


class CompressionError(LossgateError):
    """The compressor could not produce an artifact (the attempt is kept as an error)."""


class BudgetExceeded(CompressionError):
    """The must-keep content alone does not fit the token budget."""


class CompressionRequest(BaseModel):
    """The authorized inputs of one consolidation, as a compressor sees them."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject_id: str
    facts: tuple[Fact, ...]
    predicates: dict[str, Predicate]
    conflicts: tuple[Conflict, ...] = ()
    events: tuple[Event, ...] = ()
    parent: ArtifactBody | None = None
    budget_tokens: int | None = None
    # Events whose only facts were superseded or revoked: history lives in the ledger, not in the
    # summary, so the prose must not carry the old value (seed 000, temporal collapse).
    outdated_event_ids: frozenset[str] = frozenset()
    # Facts the gate will refuse to lose (its must-preserve set, hard reasons): never dropped
    # under budget pressure. Everything else may go, contextual first.
    must_keep: frozenset[str] = frozenset()
    # Sources of active facts that are no longer in the authorized view (deleted, revoked or
    # erased with a deleted fact). A fact stands on its other sources; a claim never cites these.
    withdrawn_event_ids: frozenset[str] = frozenset()
    # Retries escalate (seed 003): how many attempts in a row failed since the last
    # publication, and what the gate refused the last one for. A model compressor uses them
    # to tighten its prompt, then change model, then write no narrative at all.
    failures: int = 0
    refused_for: tuple[str, ...] = ()


class Compressor(Protocol):
    """Turns a request into raw artifact output (a dict or JSON text)."""

    name: str
    version: str
    prompt_version: str

    def compress(self, request: CompressionRequest) -> dict[str, Any] | str: ...


def load_compressor(spec: str) -> Compressor:
    """The compressor a name or path designates: ``deterministic`` (the default), ``chat``
    (an OpenAI-compatible model set by ``LOSSGATE_LLM_URL`` and ``LOSSGATE_LLM_MODEL``, see
    :mod:`lossgate.consolidate.chat`), or ``module:Class`` (called with no arguments).
    Raises :class:`~lossgate.errors.ConfigError` with one line when it cannot be made."""
    if spec == "deterministic":
        return DeterministicCompressor()
    if spec == "chat":
        from lossgate.consolidate.chat import ChatCompressor

        return ChatCompressor.from_env()
    import importlib

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"compressor {spec!r}: expected deterministic, chat or MODULE:CLASS")
    try:
        made = getattr(importlib.import_module(module_name), attr)()
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        raise ConfigError(f"compressor {spec}: {exc}") from exc
    if not callable(getattr(made, "compress", None)):
        raise ConfigError(f"compressor {spec}: {type(made).__name__} has no compress(request) method")
    return made


def claim_of(fact: Fact, withdrawn: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The claim that carries a fact through compression, with its provenance: the fact and
    the source events it still stands on (``withdrawn`` ones left the authorized view)."""
    return {
        "fact_id": fact.fact_id, "tenant_id": fact.tenant_id, "subject_id": fact.subject_id,
        "predicate": fact.predicate, "value_type": fact.value_type,
        "value": encode_value(fact.value_type, fact.value), "qualifiers": [list(q) for q in fact.qualifiers],
        "polarity": fact.polarity, "modality": fact.modality, "authority": fact.authority,
        "derived_from": [fact.fact_id, *(e for e in fact.source_event_ids if e not in withdrawn)],
    }


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
        facts = sorted(request.facts, key=lambda f: (
            f.fact_id not in keep, _RANK[request.predicates[f.predicate].criticality], f.predicate, f.seq))
        budget = request.budget_tokens
        header = header_line(request.tenant_id, request.subject_id)
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
            "open_items": sorted(f.fact_id for f in kept
                                 if request.predicates[f.predicate].category == "obligation"),
            "unresolved_conflicts": [
                {"conflict_id": c.conflict_id, "fact_ids": list(c.fact_ids)} for c in request.conflicts
                if set(c.fact_ids) <= kept_ids
            ],
            "summary": "\n".join(lines),
        }

    def _continuity(self, request: CompressionRequest, budget: int | None, used: int) -> list[str]:
        """Recent conversation, newest kept first, whole events only (a cut event could cut a number)."""
        candidates = [event_line(e) for e in request.events
                      if e.text and e.event_id not in request.outdated_event_ids]
        if request.parent is not None:
            candidates = _section(request.parent.summary, CONVERSATION_TITLE) + candidates
        chosen: list[str] = []
        title = CONVERSATION_TITLE
        used += self.count(title) + 1
        for line in reversed(candidates):
            cost = self.count(line) + 1
            if budget is not None and used + cost > budget:
                break
            chosen.append(line)
            used += cost
        return [title, *reversed(chosen)] if chosen else []


def _section(summary: str, title: str) -> list[str]:
    lines = summary.splitlines()
    if title not in lines:
        return []
    return [ln for ln in lines[lines.index(title) + 1:] if ln.startswith("- ")]
