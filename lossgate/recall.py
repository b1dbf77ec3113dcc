"""The read side: what an agent gets back, and the evidence of what it got.

Recall returns the published summary only when it is fresh: the alias points
at a published artifact whose ``source_epoch`` equals the clock's
``input_epoch`` (invariant 2). Otherwise it falls back to the raw layer:
active facts and valid events. Either way the active critical facts are always
included, everything is scoped to one tenant and subject (invariant 7), and a
recall record (query, filters, candidate ids, selected ids, alias and clock
versions, mode) is persisted so a later failure can be traced to compression,
storage, retrieval or response (seed 000).
"""

from __future__ import annotations

import uuid
from functools import lru_cache

from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.factline import fact_line
from lossgate.derived import RecallMode, RecallRecord, RecallResult
from lossgate.records import Event, Fact, utcnow
from lossgate.store import Store
from lossgate.store.protocol import FactFilter

__all__ = ["recall"]


def recall(store: Store, tenant_id: str, subject_id: str, *, query: str | None = None, k: int = 20,
           budget: int | None = None, counter: TokenCounter | None = None) -> RecallResult:
    """Read memory for one subject. ``k`` bounds events and non-critical facts; ``budget``
    (tokens) trims events first, then non-critical facts, never critical facts."""
    terms = [t.lower() for t in (query or "").split() if t]
    with store.read() as tx:
        clock, alias, artifact = tx.recall_head(tenant_id, subject_id)
        fresh = (artifact is not None and artifact.state == "published"
                 and alias.source_epoch == clock.input_epoch)
        mode: RecallMode = "summary" if fresh else "raw_fallback"
        # Critical facts, the newest non-critical ones (without a query) and deleted facts
        # (their source text is deleted content: never recalled, see selection) in one read.
        wanted = [FactFilter(statuses=["active"], criticalities=["critical"]), FactFilter(statuses=["deleted"])]
        if not terms:
            wanted.append(FactFilter(statuses=["active"], criticalities=["important", "contextual"],
                                     limit=k, newest_first=True))
        critical, deleted, *newest = tx.fact_sets(tenant_id, subject_id, wanted)
        suppressed = {e for f in deleted for e in f.source_event_ids}
        if terms:  # the best full-text matches instead
            critical_ids = {f.fact_id for f in critical}
            hit_facts = [i for i in tx.search_facts(tenant_id, subject_id, query or "", limit=k + len(critical_ids))
                         if i not in critical_ids][:k]
            rank_f = {fid: i for i, fid in enumerate(hit_facts)}
            pool = sorted(tx.facts(tenant_id, subject_id, ids=hit_facts), key=lambda f: rank_f[f.fact_id])
        else:
            pool = newest[0]
        others = pool[:k]
        after = alias.covers_through if fresh else None
        if terms:
            hit_ids = tx.search_events(tenant_id, subject_id, query or "", limit=k * 4)
            events = [e for e in tx.events(tenant_id, subject_id, ids=hit_ids, states=["valid"])
                      if (after is None or e.seq > after) and e.event_id not in suppressed]
            rank = {eid: i for i, eid in enumerate(hit_ids)}
            events.sort(key=lambda e: rank[e.event_id])
            events = events[:k]
        else:
            events = tx.events(tenant_id, subject_id, states=["valid"], after_seq=after,
                               limit=k + len(suppressed), newest_first=True)
            events = [e for e in events if e.event_id not in suppressed][:k]
        candidates = [f.fact_id for f in critical] + [f.fact_id for f in pool] + [e.event_id for e in events]

    summary = artifact.summary if fresh and artifact else None
    events, others, tokens = _fit(summary, critical, others, events, budget, counter)
    events.sort(key=lambda e: e.seq)
    now = utcnow()
    record = RecallRecord(
        recall_id=f"rc-{uuid.uuid4().hex[:16]}", tenant_id=tenant_id, subject_id=subject_id, at=now,
        query=query, filters={"tenant_id": tenant_id, "subject_id": subject_id, "k": k, "budget": budget},
        mode=mode, candidate_ids=tuple(candidates),
        selected_ids=tuple([f.fact_id for f in critical + others] + [e.event_id for e in events]),
        alias=alias, clock=clock,
    )
    store.record_recall(record)
    return RecallResult(
        tenant_id=tenant_id, subject_id=subject_id, mode=mode,
        artifact_id=artifact.artifact_id if fresh and artifact else None, summary=summary,
        open_items=artifact.open_items if fresh and artifact else (),
        facts=tuple(critical + others), events=tuple(events), record=record, tokens=tokens,
    )


@lru_cache(maxsize=1024)
def _summary_tokens(summary: str, count: TokenCounter) -> int:
    # A published summary is immutable and recalled many times: count it once.
    return count(summary)


def _fit(summary: str | None, critical: list[Fact], others: list[Fact], events: list[Event],
         budget: int | None, counter: TokenCounter | None) -> tuple[list[Event], list[Fact], int]:
    """Trim to the token budget: events (oldest first), then non-critical facts; never critical facts."""
    count = counter or default_counter()
    cost_summary = _summary_tokens(summary, count) if summary else 0
    if budget is None:  # nothing to trim: one tokenizer call for the rest
        text = "\n".join([fact_line(f) for f in critical + others] + [e.text or "" for e in events])
        return events, others, cost_summary + count(text)
    fact_costs = [count(fact_line(f)) for f in critical]
    other_costs = [count(fact_line(f)) for f in others]
    event_costs = [count(e.text or "") for e in events]
    total = cost_summary + sum(fact_costs) + sum(other_costs) + sum(event_costs)
    events, others = list(events), list(others)
    # events are newest first here: drop from the end (the oldest)
    while total > budget and events:
        events.pop()
        total -= event_costs.pop()
    while total > budget and others:
        others.pop()
        total -= other_costs.pop()
    return events, others, total
