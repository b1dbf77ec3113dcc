"""Lineage, trust, open-item and conflict checks: what the contract cannot see.

These run on lossgate records only (the fact-contract fixture format, ``fact-contract``,
has no events, trust, open items or conflicts). All codes are critical.

``unsupported_claim`` (subject: the claim's fact id)
    the claim's ``derived_from`` is empty, or names nothing in the snapshot
    (no fact, no event, no tombstone a fact points to). Invariant 5: every claim
    names what it was derived from. Ids of earlier artifacts may appear beside
    real inputs; only a claim with *no* resolvable input is unsupported.
``stale_input`` (subject: the claim's fact id, or the open item's)
    ``derived_from`` names a deleted or revoked event, or a superseded, deleted or
    revoked fact: the claim rests on content the authorized view no longer has.
    An event is known to be invalid when the snapshot holds it with another state,
    or when a fact cites it and the snapshot's valid view does not hold it.
``untrusted_elevated`` (subject: the claim's fact id)
    the claim rests only on untrusted inputs (facts of authority ``untrusted``,
    events of trust ``untrusted``, including the ledger fact of the same id) and
    says so with more force than that: an authority other than ``untrusted``,
    modality ``asserted``, or an ``instruction``/``preference`` predicate that is
    not ``quoted`` (invariant 8).
``open_item_dropped`` (subject: the obligation's fact id)
    an active fact of category ``obligation`` is not in ``open_items``. An open item
    naming a fact that is no longer active is ``forbidden_<status>_fact``; one naming
    no fact at all is ``unsupported_fact``.
``conflict_dropped`` (subject: the conflict id)
    an unresolved conflict of the snapshot is not in ``unresolved_conflicts``, or is
    carried with other fact ids.
``conflict_resolved_by_compressor`` (subject: the conflict id)
    the artifact states exactly one side of an unresolved conflict as a claim without
    carrying the conflict, or carries the conflict with only one side among its claims:
    the compressor picked a winner it had no authority to pick.
``conflict_unsupported`` (subject: the conflict id)
    the artifact carries a conflict the snapshot does not have, or one already resolved.
"""

from __future__ import annotations

from lossgate.gate.outcome import FORBIDDEN, Code, Violation
from lossgate.model.records import ArtifactBody, Claim, Fact, Snapshot
from lossgate.model.registry import Registry

__all__ = ["check_integrity"]

_ELEVATING_CATEGORIES = frozenset({"instruction", "preference"})


def _v(code: Code, subject: str, detail: str) -> Violation:
    return Violation(code=code, subject=subject, severity="critical", detail=detail)


class _Index:
    """Lookups over one snapshot, built once per gate run."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.facts: dict[str, Fact] = {f.fact_id: f for f in snapshot.facts}
        self.events = {e.event_id: e for e in snapshot.events}
        cited = {s for f in snapshot.facts for s in f.source_event_ids}
        retired = {s for f in snapshot.facts if f.status != "active" for s in f.source_event_ids}
        # An event the snapshot holds in another state is invalid; so is a tombstone: an
        # event a retired fact cites that the authorized (valid-only) view no longer holds.
        self.invalid_events = {eid for eid, e in self.events.items() if e.state != "valid"}
        self.invalid_events |= retired - self.events.keys()
        self.known_events = set(self.events) | cited

    def untrusted(self, ref: str) -> bool | None:
        """True/False for an input of known trust, None for an id that resolves to nothing."""
        fact = self.facts.get(ref)
        if fact is not None:
            return fact.authority == "untrusted"
        event = self.events.get(ref)
        if event is not None:
            return event.trust == "untrusted"
        return None


def _lineage(claim: Claim, idx: _Index, out: list[Violation]) -> None:
    fid = claim.fact_id
    if not claim.derived_from:
        out.append(_v("unsupported_claim", fid, "derived_from is empty"))
        return
    resolved = [r for r in claim.derived_from if r in idx.facts or r in idx.known_events]
    if not resolved:
        out.append(
            _v("unsupported_claim", fid, f"derived_from names nothing in the snapshot: {sorted(claim.derived_from)}")
        )
    stale = sorted(
        r for r in resolved if r in idx.invalid_events or (r in idx.facts and idx.facts[r].status != "active")
    )
    if stale:
        out.append(_v("stale_input", fid, f"derived from invalid input(s): {', '.join(stale)}"))


def _trust(claim: Claim, idx: _Index, registry: Registry, out: list[Violation]) -> None:
    basis = [idx.untrusted(r) for r in claim.derived_from]
    own = idx.facts.get(claim.fact_id)
    if own is not None:
        basis.append(own.authority == "untrusted")
    known = [b for b in basis if b is not None]
    if not known or not all(known):
        return
    pred = registry.predicates.get(claim.predicate)
    reasons = []
    if claim.authority != "untrusted":
        reasons.append(f"authority {claim.authority!r}")
    if claim.modality == "asserted":
        reasons.append("modality 'asserted'")
    if pred is not None and pred.category in _ELEVATING_CATEGORIES and claim.modality != "quoted":
        reasons.append(f"an unquoted {pred.category}")
    if reasons:
        out.append(_v("untrusted_elevated", claim.fact_id, "untrusted input stated as " + ", ".join(reasons)))


def _open_items(
    snapshot: Snapshot, artifact: ArtifactBody, idx: _Index, registry: Registry, out: list[Violation]
) -> None:
    carried = set(artifact.open_items)
    for fact in snapshot.facts:
        pred = registry.predicates.get(fact.predicate)
        if fact.status == "active" and pred is not None and pred.category == "obligation":
            if fact.fact_id not in carried:
                out.append(
                    _v("open_item_dropped", fact.fact_id, f"open obligation ({fact.predicate}) not in open_items")
                )
    for item in sorted(carried):
        named = idx.facts.get(item)
        if named is None:
            out.append(_v("unsupported_fact", item, "open item names no fact in the ledger"))
        elif named.status != "active":
            out.append(_v(FORBIDDEN[named.status], item, f"open item names a {named.status} fact"))


def _conflicts(snapshot: Snapshot, artifact: ArtifactBody, out: list[Violation]) -> None:
    claimed = {c.fact_id for c in artifact.claims}
    carried = {ref.conflict_id: frozenset(ref.fact_ids) for ref in artifact.unresolved_conflicts}
    open_ids = set()
    for conflict in snapshot.conflicts:
        if conflict.status != "unresolved":
            continue
        cid, sides = conflict.conflict_id, frozenset(conflict.fact_ids)
        open_ids.add(cid)
        stated = sorted(sides & claimed)
        ref = carried.get(cid)
        if ref is None:
            out.append(_v("conflict_dropped", cid, f"unresolved conflict over {conflict.predicate} not carried"))
            if len(stated) == 1:
                out.append(
                    _v("conflict_resolved_by_compressor", cid, f"states {stated[0]} as fact, drops the conflict")
                )
            continue
        if ref != sides:
            out.append(_v("conflict_dropped", cid, f"carried with fact ids {sorted(ref)}, expected {sorted(sides)}"))
        if len(stated) == 1:
            out.append(
                _v("conflict_resolved_by_compressor", cid, f"carries the conflict but only the side {stated[0]}")
            )
    for cid in sorted(carried.keys() - open_ids):
        out.append(_v("conflict_unsupported", cid, "the snapshot has no such unresolved conflict"))


def check_integrity(snapshot: Snapshot, artifact: ArtifactBody, registry: Registry) -> list[Violation]:
    """Lineage, trust, open-item and conflict violations of ``artifact`` (unordered)."""
    idx = _Index(snapshot)
    out: list[Violation] = []
    for claim in artifact.claims:
        _lineage(claim, idx, out)
        _trust(claim, idx, registry, out)
    _open_items(snapshot, artifact, idx, registry, out)
    _conflicts(snapshot, artifact, out)
    return out
