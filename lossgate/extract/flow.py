"""From candidates to proposals and facts (see :mod:`lossgate.extract`)."""

from __future__ import annotations

import hashlib

from lossgate.errors import InvalidInput, LifecycleError, LossgateError, NotFound
from lossgate.extract.cues import AtomExtractor, Candidate, Extractor
from lossgate.extract.model_extractor import ExtractionError
from lossgate.gate.typed import dump_json
from lossgate.ledger.lifecycle import Ledger, transaction
from lossgate.model.records import AUTHORITY_FOR_TRUST, TRUST_RANK, Event, NewFact, Proposal, utcnow
from lossgate.model.registry import Registry
from lossgate.model.values import ValueMismatch, canonical_value, coerce_value
from lossgate.store import Store

__all__ = ["extract", "accept_proposal", "reject_proposal"]


def _id(tenant_id: str, subject_id: str, c: Candidate) -> str:
    key = dump_json([tenant_id, subject_id, c.predicate, c.value, list(c.qualifiers), sorted(c.source_event_ids)])
    return "p-" + hashlib.sha256(key.encode()).hexdigest()[:20]


def extract(
    store: Store, registry: Registry, tenant_id: str, subject_id: str, *, extractor: Extractor | None = None
) -> list[Proposal]:
    """Read the subject's valid events not read before, and record what the extractor proposes.
    Returns the new proposals (a candidate proposed before is not proposed again)."""
    extractor = extractor or AtomExtractor()
    with store.read() as tx:
        since = tx.extracted_through(tenant_id, subject_id)
        events = tx.events(tenant_id, subject_id, states=["valid"], after_seq=since)
    if not events:
        return []
    candidates = _proposed(extractor, events, registry)  # outside any transaction: a model may take seconds
    now = utcnow()
    with transaction(store, registry=registry) as led:
        tx = led.tx
        tx.lock_clock(tenant_id, subject_id)
        ids = [_id(tenant_id, subject_id, c) for c in candidates]
        seen = {p.proposal_id for p in tx.proposals(tenant_id, subject_id, ids=ids)} if ids else set()
        out: list[Proposal] = []
        for pid, c in zip(ids, candidates, strict=False):
            if pid in seen:
                continue
            seen.add(pid)
            sources = tx.events(tenant_id, subject_id, ids=list(c.source_event_ids), states=["valid"])
            if not c.source_event_ids or len(sources) != len(set(c.source_event_ids)):
                continue  # a source left the view while the extractor read it: its text is not ours to keep
            weakest = min((e.trust for e in sources), key=lambda t: TRUST_RANK[t])
            authority = AUTHORITY_FOR_TRUST[weakest]
            proposal = Proposal(
                proposal_id=pid,
                tenant_id=tenant_id,
                subject_id=subject_id,
                predicate=c.predicate,
                value=c.value,
                qualifiers=c.qualifiers,
                source_event_ids=c.source_event_ids,
                authority=authority,
                modality="quoted" if authority == "untrusted" else "asserted",
                extractor=extractor.name,
                status="review",
                created_at=now,
            )
            out.append(_decide(led, registry, proposal))
        if out:
            tx.save_proposals(out)
        tx.set_extracted_through(tenant_id, subject_id, max(e.seq for e in events))
    return out


def _proposed(extractor: Extractor, events: list[Event], registry: Registry) -> list[Candidate]:
    """What ``extractor`` proposes, checked: an extractor is foreign code, and what it hands back
    is input like any other (:class:`ExtractionError` names what is wrong; nothing is recorded)."""
    name = getattr(extractor, "name", type(extractor).__name__)
    try:
        proposed = extractor.propose(events, registry)
    except LossgateError:
        raise
    except Exception as exc:
        raise ExtractionError(f"extractor {name!r} failed: {type(exc).__name__}: {exc}"[:500]) from exc
    if not isinstance(proposed, (list, tuple)):
        raise ExtractionError(f"extractor {name!r} returned {type(proposed).__name__}, not a list of Candidate")
    for i, c in enumerate(proposed):
        if not isinstance(c, Candidate):
            raise ExtractionError(f"extractor {name!r}: item {i} is {type(c).__name__}, not a Candidate")
        if (
            not isinstance(c.predicate, str)
            or not c.predicate
            or not isinstance(c.source_event_ids, (list, tuple))
            or not all(isinstance(e, str) for e in c.source_event_ids)
            or not isinstance(c.qualifiers, (list, tuple))
            or not all(
                isinstance(q, (list, tuple)) and len(q) == 2 and all(isinstance(x, str) and x for x in q)
                for q in c.qualifiers
            )
        ):
            raise ExtractionError(
                f"extractor {name!r}: item {i} needs a predicate, source event ids and "
                "qualifiers as (key, value) strings"
            )
    return list(proposed)


def _decide(led: Ledger, registry: Registry, p: Proposal) -> Proposal:
    pred = registry.predicates.get(p.predicate)
    if pred is None:
        return p.model_copy(update={"status": "refused", "reason": f"unknown predicate {p.predicate!r}"})
    unknown = sorted({k for k, _ in p.qualifiers} - set(pred.qualifiers))
    if unknown:
        return p.model_copy(
            update={
                "status": "refused",
                "reason": f"qualifier(s) {', '.join(unknown)} not in predicate {p.predicate!r}",
            }
        )
    try:
        canon = canonical_value(pred.value_type, coerce_value(pred.value_type, p.value, enum_values=pred.enum_values))
    except (ValueMismatch, ValueError, TypeError, ArithmeticError) as exc:
        return p.model_copy(update={"status": "refused", "reason": f"{pred.value_type} value refused: {exc}"})
    for f in led.tx.facts(p.tenant_id, p.subject_id, statuses=["active"], predicate=p.predicate):
        if f.value is not None and canonical_value(pred.value_type, f.value) == canon:
            return p.model_copy(update={"status": "known", "fact_id": f.fact_id})
    if pred.extraction != "auto" or p.authority in _NEVER_AT_ONCE:
        return p
    return _assert(led, p)


# A proposal drawn from a model's or a tool's words waits for a person even where the
# predicate's extraction is "auto": a model's guess ("Your deadline is ...") never becomes a
# fact on its own say-so. (Untrusted text still becomes a quoted fact at once: quoted, it
# states what was said and authorizes nothing.)
_NEVER_AT_ONCE = frozenset({"tool"})


def _assert(led: Ledger, p: Proposal) -> Proposal:
    """Make the proposal a fact; a disagreement with an active fact opens a conflict."""
    try:
        fact = led.assert_fact(
            NewFact(
                tenant_id=p.tenant_id,
                subject_id=p.subject_id,
                fact_id="x" + p.proposal_id[1:],
                predicate=p.predicate,
                value=p.value,
                qualifiers=p.qualifiers,
                authority=p.authority,
                modality=p.modality,
                source_event_ids=p.source_event_ids,
            )
        )
    except InvalidInput as exc:  # checked before anything is written
        return p.model_copy(update={"status": "refused", "reason": str(exc)[:500]})
    open_ = led.tx.conflicts(p.tenant_id, p.subject_id, unresolved_only=True, fact_id=fact.fact_id)
    return p.model_copy(
        update={
            "status": "conflict" if open_ else "accepted",
            "fact_id": fact.fact_id,
            "reason": f"conflicts with {open_[0].conflict_id}" if open_ else None,
        }
    )


def _pending(led: Ledger, tenant_id: str, subject_id: str, proposal_id: str) -> Proposal:
    found = led.tx.proposals(tenant_id, subject_id, ids=[proposal_id])
    if not found:
        raise NotFound(f"proposal {proposal_id} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
    if found[0].status != "review":
        raise LifecycleError(f"proposal {proposal_id} is {found[0].status}, not waiting for review")
    return found[0]


def accept_proposal(led: Ledger, tenant_id: str, subject_id: str, proposal_id: str) -> Proposal:
    """A person accepts a proposal in review: it becomes a fact (or a conflict)."""
    p = _pending(led, tenant_id, subject_id, proposal_id)
    decided = _assert(led, p)
    led.tx.save_proposals([decided])
    return decided


def reject_proposal(led: Ledger, tenant_id: str, subject_id: str, proposal_id: str, *, reason: str = "") -> Proposal:
    """A person rejects a proposal in review; it is kept, with the reason."""
    p = _pending(led, tenant_id, subject_id, proposal_id)
    decided = p.model_copy(update={"status": "rejected", "reason": reason or "rejected in review"})
    led.tx.save_proposals([decided])
    return decided
