"""Snapshot and selection: what one consolidation may read, pinned by hash.

A job reads the clock (``high_water`` H and ``input_epoch``) and the alias
(parent artifact, source epoch, covers_through) in one transaction, then
selects from the *authorized view*: valid events and active facts with
seq <= H. Deleted and revoked events never enter a selection, nor does the
text of an event a deleted fact was drawn from (invariant 1).

Two paths produce the same active fact set:

* **direct**: every valid event and active fact up to H;
* **incremental**: the published parent artifact plus the events after its
  ``covers_through``; allowed only when the parent is fresh (published, built
  at the current epoch), so nothing it carries can be stale or deleted.

:func:`select_delta` reads an incremental selection without the history: the events after
the parent's coverage, the active facts, the facts citing those events in any status, the
valid events all of these cite, and the open conflicts (``Selection.bounded``). The gate
then reads what is new against that snapshot and the parent's lines by reference
(:func:`lossgate.consolidate.pipeline.Consolidator`), or the whole snapshot at the same
high-water when what the compressor wrote is not made of those lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from lossgate.gate.superseded import Retired
from lossgate.model.canonical import content_hash
from lossgate.model.derived_records import Artifact, ExpectedAlias, InputRef
from lossgate.model.records import Event, Fact, Snapshot
from lossgate.model.registry import Registry
from lossgate.model.trusted import trusted
from lossgate.store.protocol import ReadTx

__all__ = [
    "SELECTOR_VERSION",
    "Selection",
    "select",
    "select_delta",
    "snapshot_at",
    "input_root",
    "event_refs",
    "fact_refs",
    "cited_sources",
    "delta_inputs",
    "outdated_in",
]

SELECTOR_VERSION = "authorized-view-v1"


@dataclass(frozen=True)
class Selection:
    """One snapshot's inputs: what the compressor sees, what the gate checks against."""

    snapshot: Snapshot  # the gate's view: every fact <= H in any state, valid events, open conflicts
    expected: ExpectedAlias
    path: Literal["direct", "incremental", "part", "hierarchical"]  # the last two: lossgate.consolidate.hierarchy
    parent: Artifact | None
    events: tuple[Event, ...]  # what the compressor may read
    facts: tuple[Fact, ...]  # active facts
    inputs: tuple[InputRef, ...]
    input_root: str
    outdated_event_ids: frozenset[str] = frozenset()
    # Sources of active facts that left the authorized view (deleted, revoked, erased with a
    # deleted fact): a fact stands on its other sources, and its claim cites only those.
    withdrawn_event_ids: frozenset[str] = frozenset()
    # Whether ``snapshot`` holds only what is new since the parent (and what its facts cite):
    # :func:`select_delta`.
    bounded: bool = False
    # The subject's superseded and revoked values, whatever the snapshot holds: every line of
    # a summary that states one carries lossgate's marker (lossgate.gate.superseded).
    retired: tuple[Retired, ...] = ()
    # What becomes of a model's sentence on a topic only the ledger states: the tenant's
    # policy (lossgate.consolidate.narrative_policy).
    narrative_policy: str = "omit"

    @property
    def selected_ids(self) -> tuple[str, ...]:
        return tuple(ref.id for ref in self.inputs)


_REF_FIELDS = frozenset(InputRef.model_fields)


def event_refs(events: Iterable[Event]) -> list[InputRef]:
    """The inputs that pin ``events`` (each by its id, content hash and seq), built from
    the validated events without validating each again (:func:`~lossgate.model.trusted.trusted`:
    a full plan builds one per event twice)."""
    return [
        trusted(
            InputRef, _REF_FIELDS, {"kind": "event", "id": e.event_id, "content_hash": e.content_hash, "seq": e.seq}
        )
        for e in events
    ]


def fact_refs(facts: Iterable[Fact]) -> list[InputRef]:
    """The inputs that pin ``facts``, as :func:`event_refs` pins events."""
    return [
        trusted(InputRef, _REF_FIELDS, {"kind": "fact", "id": f.fact_id, "content_hash": f.content_hash, "seq": f.seq})
        for f in facts
    ]


def input_root(inputs: tuple[InputRef, ...]) -> str:
    """sha256 over the RFC 8785 form of the inputs: same snapshot, same root, in any process."""
    return content_hash([[r.kind, r.id, r.content_hash] for r in sorted(inputs, key=lambda r: (r.kind, r.id))])


def select(tx: ReadTx, tenant_id: str, subject_id: str, registry: Registry, *, incremental: bool = True) -> Selection:
    """Read one consistent snapshot of a subject and choose the consolidation inputs."""
    clock = tx.clock(tenant_id, subject_id)
    alias = tx.alias(tenant_id, subject_id)
    h = clock.high_water
    parent = tx.artifact(tenant_id, subject_id, alias.artifact_id) if alias.artifact_id else None
    fresh_parent = parent is not None and parent.state == "published" and alias.source_epoch == clock.input_epoch
    path: Literal["direct", "incremental"] = "incremental" if incremental and fresh_parent else "direct"

    all_facts = tx.facts(tenant_id, subject_id, through_seq=h)
    # Text a deleted fact was drawn from is deleted content too, even while its event stays
    # valid for other facts: it never reaches a compressor (invariant 1) or a summary.
    suppressed = {e for f in all_facts if f.status == "deleted" for e in f.source_event_ids}
    valid = [
        e for e in tx.events(tenant_id, subject_id, states=["valid"], through_seq=h) if e.event_id not in suppressed
    ]
    active = tuple(f for f in all_facts if f.status == "active")
    conflicts = tuple(c for c in tx.conflicts(tenant_id, subject_id, unresolved_only=True))

    if path == "incremental":
        assert parent is not None
        shown = tuple(e for e in valid if e.seq > alias.covers_through)
        refs = delta_inputs(parent, shown, active)
    else:
        shown = tuple(valid)
        refs = tuple(event_refs(shown) + fact_refs(active))
    live_sources = {e for f in active for e in f.source_event_ids}
    authorized = {e.event_id for e in valid}
    withdrawn = frozenset(e for e in live_sources if e not in authorized)
    outdated = outdated_in(all_facts, {e.event_id for e in shown})
    snapshot = Snapshot(
        tenant_id=tenant_id,
        subject_id=subject_id,
        clock=clock,
        registry_version=registry.version,
        events=tuple(valid),
        facts=tuple(all_facts),
        conflicts=conflicts,
    )
    return Selection(
        snapshot=snapshot,
        expected=alias.expected(),
        path=path,
        parent=parent if path == "incremental" else None,
        events=shown,
        facts=active,
        inputs=refs,
        input_root=input_root(refs),
        outdated_event_ids=outdated,
        withdrawn_event_ids=withdrawn,
    )


def snapshot_at(tx: ReadTx, tenant_id: str, subject_id: str, registry: Registry, *, through_seq: int) -> Snapshot:
    """The gate's view of a subject as of ``through_seq`` (an artifact's ``covers_through``),
    read now: what :func:`select` would have given the gate on the direct path at that
    high-water, under ``registry``. Used to re-gate a stored artifact (:mod:`lossgate.consolidate.regate`).
    While the subject's ``input_epoch`` has not moved since the artifact was built, the
    statuses of these facts and events are the ones it was gated against."""
    clock = tx.clock(tenant_id, subject_id)
    h = min(through_seq, clock.high_water)
    all_facts = tx.facts(tenant_id, subject_id, through_seq=h)
    suppressed = {e for f in all_facts if f.status == "deleted" for e in f.source_event_ids}
    valid = [
        e for e in tx.events(tenant_id, subject_id, states=["valid"], through_seq=h) if e.event_id not in suppressed
    ]
    return Snapshot(
        tenant_id=tenant_id,
        subject_id=subject_id,
        clock=clock.model_copy(update={"high_water": h}),
        registry_version=registry.version,
        events=tuple(valid),
        facts=tuple(all_facts),
        conflicts=tuple(tx.conflicts(tenant_id, subject_id, unresolved_only=True)),
    )


def select_delta(tx: ReadTx, tenant_id: str, subject_id: str, registry: Registry) -> Selection | None:
    """The incremental selection of a subject whose published summary is fresh and flat (a
    direct or incremental artifact gated under ``registry``), read without the history; None
    when there is no such parent (:func:`select` then reads the whole snapshot)."""
    t, s = tenant_id, subject_id
    clock, alias = tx.clock(t, s), tx.alias(t, s)
    h = clock.high_water
    if alias.artifact_id is None or alias.source_epoch != clock.input_epoch or h <= alias.covers_through:
        return None
    parent = tx.artifact(t, s, alias.artifact_id)
    if (
        parent is None
        or parent.state != "published"
        or parent.manifest.path not in ("direct", "incremental")
        or parent.manifest.registry_version != registry.version
    ):
        return None
    delta = tx.events(t, s, states=["valid"], after_seq=alias.covers_through, through_seq=h)
    citing = tx.facts_citing(t, s, [e.event_id for e in delta]) if delta else []
    suppressed = {e for f in citing if f.status == "deleted" for e in f.source_event_ids}
    shown = tuple(e for e in delta if e.event_id not in suppressed)
    active = tuple(tx.facts(t, s, statuses=["active"], through_seq=h))
    facts = {f.fact_id: f for f in (*active, *citing)}
    known = {e.event_id for e in shown}
    cited, withdrawn = cited_sources(tx, t, s, facts.values(), active, known)
    inputs = delta_inputs(parent, shown, active)
    snapshot = Snapshot(
        tenant_id=t,
        subject_id=s,
        clock=clock,
        registry_version=registry.version,
        events=tuple(sorted([*shown, *cited], key=lambda e: e.seq)),
        facts=tuple(sorted(facts.values(), key=lambda f: (f.seq, f.fact_id))),
        conflicts=tuple(tx.conflicts(t, s, unresolved_only=True)),
    )
    return Selection(
        snapshot=snapshot,
        expected=alias.expected(),
        path="incremental",
        parent=parent,
        events=shown,
        facts=active,
        inputs=inputs,
        input_root=input_root(inputs),
        outdated_event_ids=outdated_in(citing, known),
        withdrawn_event_ids=withdrawn,
        bounded=True,
    )


def cited_sources(
    tx: ReadTx, tenant_id: str, subject_id: str, facts: Iterable[Fact], active: Iterable[Fact], known: set[str]
) -> tuple[list[Event], frozenset[str]]:
    """What a bounded snapshot needs besides the events it shows (``known``): the valid
    events that ``facts`` cite among the others (not the text of a deleted fact), and the
    sources of the ``active`` facts that left the authorized view (withdrawn)."""
    t, s = tenant_id, subject_id
    wanted = sorted({e for f in facts for e in f.source_event_ids} - known)
    if not wanted:
        return [], frozenset(e for f in active for e in f.source_event_ids if e not in known)
    hidden = {e for f in tx.facts_citing(t, s, wanted, statuses=["deleted"]) for e in f.source_event_ids}
    cited = [e for e in tx.events(t, s, ids=wanted) if e.state == "valid" and e.event_id not in hidden]
    authorized = known | {e.event_id for e in cited}
    return cited, frozenset(e for f in active for e in f.source_event_ids if e not in authorized)


def delta_inputs(parent: Artifact, shown: Iterable[Event], active: Iterable[Fact]) -> tuple[InputRef, ...]:
    """A job's inputs when it builds on ``parent``: that artifact (pinned by its input root,
    so the chain commits to everything covered), the events it shows, the active facts."""
    return tuple(
        [InputRef(kind="artifact", id=parent.artifact_id, content_hash=parent.manifest.input_root)]
        + event_refs(shown)
        + fact_refs(active)
    )


def outdated_in(facts: Iterable[Fact], shown: set[str]) -> frozenset[str]:
    """The events of ``shown`` that a superseded or revoked fact of ``facts`` was drawn from.
    Such text states the retired value: it leaves the conversation even when the event also
    supports an active fact, whose claim line carries that fact (the gate refuses a summary
    that restates a retired value)."""
    return frozenset(
        e for f in facts if f.status in ("superseded", "revoked") for e in f.source_event_ids if e in shown
    )
