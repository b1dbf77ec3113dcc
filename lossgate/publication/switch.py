"""The switch: publish an artifact by compare-and-swap on the subject's alias.

One transaction: lock the clock and the alias, re-read every input and
confirm it is still valid with the same hash, confirm ``input_epoch`` has not
moved and that no registry loaded since it was gated requires a re-gate
(:mod:`lossgate.consolidate.regate`), then CAS the alias on (parent artifact, source epoch, covers_through)
with coverage never regressing; a hierarchical root publishes its new parts with
it, and the parts of the root it replaces that it does not reuse are retired. A root that
extends the published one (:mod:`lossgate.consolidate.tail`) lists that root among its
inputs: the CAS on the alias (the same root, at the same epoch) is the fence of every part
it carries, so those are not read again. Anything but
exactly one changed row publishes nothing; the caller records why and rebuilds from current
state.
A stale or racing worker therefore can never overwrite newer memory.
A tenant's shadow lane publishes to the subject's *shadow* alias instead
(:func:`shadow_switch`), fenced the same way; recall never reads that alias.
Publishing moves no event's tier: demotion (:mod:`lossgate.ledger.tiers`) does, after a dormancy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lossgate.lineage import queue
from lossgate.model.derived_records import Artifact
from lossgate.publication.upgrades import outdated
from lossgate.store.protocol import WriteTx

__all__ = ["SwitchResult", "switch", "shadow_switch"]


@dataclass(frozen=True)
class SwitchResult:
    published: bool
    reason: str


def _inputs_unchanged(tx: WriteTx, artifact: Artifact) -> str | None:
    """None if every input is still valid with its hash, else why not."""
    m = artifact.manifest
    t, s = m.tenant_id, m.subject_id
    want_events = {r.id: r.content_hash for r in m.inputs if r.kind == "event"}
    want_facts = {r.id: r.content_hash for r in m.inputs if r.kind == "fact"}
    if want_events:
        found = {e.event_id: e for e in tx.events(t, s, ids=list(want_events))}
        for event_id, h in want_events.items():
            e = found.get(event_id)
            if e is None or e.state != "valid" or e.content_hash != h:
                return f"input event {event_id} is {'gone' if e is None else e.state} or changed"
    if want_facts:
        found_f = {f.fact_id: f for f in tx.facts(t, s, ids=list(want_facts))}
        for fact_id, h in want_facts.items():
            f = found_f.get(fact_id)
            if f is None or f.status != "active" or f.content_hash != h:
                return f"input fact {fact_id} is {'gone' if f is None else f.status} or changed"
    # A hierarchy's parts are published with their root (gated candidates, or parts an
    # earlier root published); an incremental parent must be the published one.
    allowed = ("published", "candidate") if m.path == "hierarchical" else ("published",)
    for ref in m.inputs:
        if ref.kind == "artifact":
            parent = tx.artifact_head(t, s, ref.id)
            if parent is None or parent.state not in allowed:
                what = "part" if m.path == "hierarchical" else "parent artifact"
                return f"{what} {ref.id} is {'gone' if parent is None else parent.state}"
    return None


def _publish_parts(tx: WriteTx, artifact: Artifact, previous: Artifact | None) -> None:
    """With a hierarchical root: its new parts are published with it, and the parts of the
    root it replaces that it does not reuse are retired."""
    m = artifact.manifest
    t, s = m.tenant_id, m.subject_id
    # A root that extends its parent brings only its new parts; the ones it carries are published.
    if m.new_parts:
        tx.set_artifact_state(
            t, s, sorted(m.new_parts), "published", from_states=["candidate"], reason=f"part of {artifact.artifact_id}"
        )
    if previous is not None:
        dropped = sorted(set(previous.manifest.children) - set(m.children))
        if dropped:
            tx.set_artifact_state(
                t, s, dropped, "retired", from_states=["published"], reason=f"replaced by {artifact.artifact_id}"
            )


def switch(
    tx: WriteTx, artifact: Artifact, *, now: datetime, states: tuple[str, ...] = ("candidate", "abandoned")
) -> SwitchResult:
    """Publish ``artifact`` if, and only if, nothing it rests on has moved. ``states``: what
    it may be stored as (a gated candidate; ``review`` when a person approves it)."""
    m = artifact.manifest
    t, s = m.tenant_id, m.subject_id
    clock = tx.lock_clock(t, s)
    alias = tx.lock_alias(t, s)
    if clock.input_epoch != m.input_epoch:
        return SwitchResult(False, f"input_epoch moved from {m.input_epoch} to {clock.input_epoch}")
    latest = tx.latest_registry_version()
    if latest is not None and latest > m.registry_version:
        changes = outdated(tx, m.registry_version)
        if changes:
            return SwitchResult(
                False,
                f"gated under registry v{m.registry_version}; v{latest} requires a re-gate ({', '.join(changes[:3])})",
            )
    problem = _inputs_unchanged(tx, artifact)
    if problem:
        return SwitchResult(False, problem)
    stored = tx.artifact_head(t, s, artifact.artifact_id)
    if stored is None or stored.state not in states:
        # Only a gated candidate may be published: never a gate-rejected or stale one. (An
        # abandoned candidate lost to a newer publication: the checks below say exactly how.)
        return SwitchResult(
            False,
            f"artifact {artifact.artifact_id} is {stored.state if stored else 'not stored'}, not a gated candidate",
        )
    if m.new_covers_through < alias.covers_through:
        return SwitchResult(False, f"coverage would regress from {alias.covers_through} to {m.new_covers_through}")
    if not tx.cas_alias(
        t,
        s,
        expected=m.expected_alias,
        artifact_id=artifact.artifact_id,
        source_epoch=m.input_epoch,
        covers_through=m.new_covers_through,
        at=now,
    ):
        return SwitchResult(
            False,
            f"alias moved: expected ({m.expected_alias.parent_artifact_id}, epoch {m.expected_alias.source_epoch}, "
            f"covers {m.expected_alias.covers_through}), found ({alias.artifact_id}, epoch {alias.source_epoch}, "
            f"covers {alias.covers_through})",
        )
    tx.set_artifact_state(t, s, [artifact.artifact_id], "published", reason="switched")
    previous = tx.artifact(t, s, alias.artifact_id) if alias.artifact_id else None
    if previous is not None and previous.state == "published":  # a stale one stays stale: audit
        tx.set_artifact_state(t, s, [previous.artifact_id], "retired", reason=f"replaced by {artifact.artifact_id}")
    _publish_parts(tx, artifact, previous)
    # Candidates left by crashed or racing jobs can never win a CAS now: say so.
    # (and summaries waiting for review: a newer one is published)
    orphans = [
        a.artifact_id
        for a in tx.artifacts(t, s, states=["candidate", "review"])
        if a.artifact_id != artifact.artifact_id
    ]
    if orphans:
        tx.set_artifact_state(t, s, orphans, "abandoned", reason=f"superseded by {artifact.artifact_id}")
    queue.answered(
        tx,
        t,
        s,
        high_water=clock.high_water,
        covers_through=m.new_covers_through,
        artifact_id=artifact.artifact_id,
        now=now,
    )
    tx.add_log(
        t,
        s,
        at=now,
        op="publish",
        target_id=artifact.artifact_id,
        detail={"covers_through": m.new_covers_through, "input_epoch": m.input_epoch},
    )
    return SwitchResult(True, "published")


def shadow_switch(tx: WriteTx, artifact: Artifact, *, now: datetime) -> SwitchResult:
    """Publish a shadow lane's artifact (stored in the ``shadow`` state) to the subject's
    shadow alias, which recall never reads (:mod:`lossgate.policy.rollout`). The fence is the
    switch's: the clock locked first, then the alias; no input revoked, superseded or
    deleted since it was built (the epoch has not moved); coverage never regressing; the
    alias compared and swapped. So a slow shadow job cannot replace a newer shadow summary
    either. The shadow summary it replaces, and that one's parts it does not stand on, are
    abandoned; no live artifact, job or event moves."""
    m = artifact.manifest
    t, s = m.tenant_id, m.subject_id
    current = tx.lock_alias(t, s, lane="shadow")
    epoch = tx.clock(t, s).input_epoch
    if epoch != m.input_epoch:
        return SwitchResult(False, f"input_epoch moved from {m.input_epoch} to {epoch}")
    stored = tx.artifact_gate(t, s, artifact.artifact_id)
    if stored is None or stored[0] != "shadow":
        return SwitchResult(
            False, f"artifact {artifact.artifact_id} is {stored[0] if stored else 'not stored'}, not a shadow summary"
        )
    if m.new_covers_through < current.covers_through:
        return SwitchResult(False, f"coverage would regress from {current.covers_through} to {m.new_covers_through}")
    if not tx.cas_alias(
        t,
        s,
        expected=current.expected(),
        artifact_id=artifact.artifact_id,
        source_epoch=m.input_epoch,
        covers_through=m.new_covers_through,
        at=now,
        lane="shadow",
    ):
        return SwitchResult(False, "the shadow alias moved")  # unreachable while the row is locked
    if current.artifact_id and current.artifact_id != artifact.artifact_id:
        previous = tx.artifact(t, s, current.artifact_id)
        gone = {current.artifact_id} | (set(previous.manifest.children) - set(m.children) if previous else set())
        tx.set_artifact_state(
            t,
            s,
            sorted(gone),
            "abandoned",
            from_states=["shadow"],
            reason=f"replaced on the shadow alias by {artifact.artifact_id}",
        )
    tx.add_log(
        t,
        s,
        at=now,
        op="publish_shadow",
        target_id=artifact.artifact_id,
        detail={"covers_through": m.new_covers_through, "input_epoch": m.input_epoch},
    )
    return SwitchResult(True, "published to the shadow alias")
