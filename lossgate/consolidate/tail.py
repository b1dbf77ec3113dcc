"""Extending a published hierarchy by its tail: a consolidation that costs what is new.

A snapshot is fenced by ``high_water`` and ``input_epoch`` so that appending at the tail is
cheap. While the published root is fresh (its ``source_epoch`` is the clock's
``input_epoch``: nothing it stands on was superseded, revoked, deleted, re-trusted or put
in conflict since it was gated), every part it rolls up is still exactly what its gate
checked. A job then reads only

* the events after the root's ``covers_through`` (the delta);
* the root's last part (the last chunk of its last period), whose events are cut again
  with the delta as a full plan would cut them (:func:`lossgate.consolidate.parts.resume`;
  a period of one part is cut whole: :func:`lossgate.consolidate.parts.split`), and the
  first events of a period cut into chunks (they set where its chunks end): a period of any
  size, one endless session or a history with no dates grows by its tail as a short one does;
* the active facts, the facts citing the events of the last part and the delta in any
  status, the valid events those facts cite, and the open conflicts;

and builds a root that ``extends`` the published one: its new parts (each gated against its
own snapshot, as always), the parent's other parts ``carried`` by reference, and the
parent's digest lines of those parts copied as they were gated. The root's gate reads its
structured part and its new digests against this bounded snapshot; the carried lines were
gated when the parent was. Its inputs are the parent root (pinned by the parent's input
root, so the chain still commits to everything covered), its new parts and the active
facts; the switch re-checks those and the parent's fence (the alias still names the parent
at the same epoch).

Anything else takes the full plan (:func:`lossgate.consolidate.hierarchy.plan`): a stale or
unpublished root, a moved epoch, another registry, compressor or tree setting, a new fact
citing an event outside the last part and the delta, a new event of a period one of the
carried parts holds (the root's manifest keeps a hash of each part's period:
``Manifest.periods``) other than the last, a new part the full plan would order before a
carried one, or a last part that is not the last of its period by seq (parts are ordered
by time: a turn dated earlier can put another chunk of the period after it). Correctness does not rest on this module: a change to any
input covered generations back moves the epoch and marks the whole chain stale at once
(lineage follows every root to the one it extends: :func:`lossgate.lineage.propagation.invalidate`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lossgate.consolidate.hierarchy import (
    HierarchyConfig,
    TreePlan,
    digest_lines,
    part_jobs,
    period_blocks,
    period_hash,
    periods_of,
)
from lossgate.consolidate.parts import period_key, resume, split
from lossgate.consolidate.selection import Selection, cited_sources, delta_inputs, input_root, outdated_in
from lossgate.model.derived_records import Artifact
from lossgate.model.records import Event, Snapshot
from lossgate.model.registry import Registry
from lossgate.model.wording import event_line
from lossgate.store.protocol import ReadTx

__all__ = ["Tail", "extend"]


@dataclass(frozen=True)
class Tail:
    """A job that extends the published root: its bounded selection and its tree."""

    selection: Selection
    tree: TreePlan


def extend(
    tx: ReadTx,
    tenant_id: str,
    subject_id: str,
    registry: Registry,
    config: HierarchyConfig,
    *,
    compressor: object,
    label: str,
    count: Callable[[str], int],
) -> Tail | None:
    """The tail job of a subject whose published root is fresh, or None (the full plan)."""
    t, s = tenant_id, subject_id
    clock, alias = tx.clock(t, s), tx.alias(t, s)
    if alias.artifact_id is None or alias.source_epoch != clock.input_epoch or clock.high_water <= alias.covers_through:
        return None
    root = tx.artifact(t, s, alias.artifact_id)
    if (
        root is None
        or root.state != "published"
        or root.manifest.path != "hierarchical"
        or root.manifest.tree is None
        or root.manifest.registry_version != registry.version
    ):
        return None
    settings = config.settings(root.manifest.tree, compressor)
    children, periods = root.manifest.children, root.manifest.periods
    if settings != root.manifest.tree or not children or len(periods) != len(children):
        return None  # (a root stored before roots kept their periods: the full plan, once)

    # The last part (the last chunk of the last period) is cut again with the delta; the
    # parts before it stay. A period cut into chunks grows by its last chunk as a short one
    # grows by its only part: a chunk boundary depends on the period's first events (its
    # stride) and the events since the boundary before, never on what follows.
    # The period's chunks need not be next to each other: a part's place is its time, and a
    # turn of another period (one without a session, in an endless session) may fall between.
    last_period = periods[-1]
    first = periods.index(last_period)
    others = set(periods) - {last_period}

    def read(child_id: str) -> tuple[Artifact, list[Event]] | None:
        part = tx.artifact(t, s, child_id)
        info = part.manifest.part if part is not None else None
        if (
            part is None
            or info is None
            or part.state != "published"
            or f"{part.manifest.compressor}@{part.manifest.compressor_version}" != label
        ):
            return None
        own = [r.id for r in part.manifest.inputs[: info.events]]
        events = sorted(tx.events(t, s, ids=own), key=lambda e: e.seq)
        if len(events) != len(own) or any(e.state != "valid" for e in events):
            return None  # cannot happen at a fresh epoch; the full plan decides
        return part, events

    newest = read(children[-1])
    if newest is None:
        return None
    last, old = newest
    assert last.manifest.part is not None
    key = last.manifest.part.key  # the period's name, or the name and its first event's seq
    name = key[: -len(f" #{old[0].seq}")] if key.endswith(f" #{old[0].seq}") else key
    last_key = period_key(old[0], settings.split_by)

    def of_period(events: list[Event]) -> list[Event]:
        """Those of ``events`` a full plan would put in the last period: of its key, and not
        the text of a deleted fact."""
        mine = [e for e in events if period_key(e, settings.split_by) == last_key]
        gone = (
            {
                i
                for f in tx.facts_citing(t, s, [e.event_id for e in mine])
                if f.status == "deleted"
                for i in f.source_event_ids
            }
            if mine
            else set()
        )
        return [e for e in mine if e.event_id not in gone]

    # A part's place among the root's children is its time: an event dated earlier may have
    # put another chunk of the period after this one. It must be the last by seq.
    if of_period(tx.events(t, s, states=["valid"], after_seq=old[-1].seq, through_seq=alias.covers_through)):
        return None
    head: list[Event] = []
    if name != key:  # a later chunk: the period's first events set its stride
        opening = read(children[first])
        if opening is None or opening[0].manifest.part is None or opening[0].manifest.part.key != name:
            return None
        head, at = list(opening[1]), opening[1][-1].seq
        used = sum(count(event_line(e)) + 1 for e in head)
        while used <= settings.context_tokens:
            # (in batches of the first chunk's size: about a context's worth)
            more = tx.events(
                t, s, states=["valid"], after_seq=at, through_seq=alias.covers_through, limit=max(8, len(opening[1]))
            )
            if not more:
                return None  # a period cut into chunks exceeds the context: cannot happen
            at = more[-1].seq
            for e in of_period(more):
                head.append(e)
                used += count(event_line(e)) + 1
                if used > settings.context_tokens:
                    break
    elif first != len(children) - 1:
        return None  # the period's first chunk is last in time, after others of its chunks
    carried = children[:-1]
    carried_periods = periods[:-1]
    before = tx.artifact(t, s, carried[-1]) if carried else None

    delta = tx.events(t, s, states=["valid"], after_seq=alias.covers_through, through_seq=clock.high_water)
    shown_ids = [e.event_id for e in old] + [e.event_id for e in delta]
    citing = tx.facts_citing(t, s, shown_ids)
    suppressed = {e for f in citing if f.status == "deleted" for e in f.source_event_ids}
    delta = [e for e in delta if e.event_id not in suppressed]
    if not delta or any(period_hash(period_key(e, settings.split_by)) in others for e in delta):
        return None  # nothing new to digest, or a new event belongs to an earlier period
    tail_ids = set(shown_ids)
    active = tx.facts(t, s, statuses=["active"], through_seq=clock.high_water)
    if any(f.seq > alias.covers_through and not set(f.source_event_ids) <= tail_ids for f in active):
        return None  # a new fact drawn from an earlier period changes that period's part

    facts = {f.fact_id: f for f in (*active, *citing)}
    ordered_facts = tuple(sorted(facts.values(), key=lambda f: (f.seq, f.fact_id)))
    known = {e.event_id: e for e in (*old, *delta)}
    cited, withdrawn = cited_sources(tx, t, s, ordered_facts, active, set(known))
    snapshot = Snapshot(
        tenant_id=t,
        subject_id=s,
        clock=clock,
        registry_version=registry.version,
        events=tuple(sorted({**known, **{e.event_id: e for e in cited}}.values(), key=lambda e: e.seq)),
        facts=ordered_facts,
        conflicts=tuple(tx.conflicts(t, s, unresolved_only=True)),
    )

    grows = [e for e in delta if period_key(e, settings.split_by) == last_key]
    if not head:  # the period is one part: cut again whole, as the full plan cuts it
        cut = split((*old, *grows), by=settings.split_by, context_tokens=settings.context_tokens, count=count)
    else:
        cut = resume(name, head, (*old, *grows), context_tokens=settings.context_tokens, count=count)
    fresh = split(
        [e for e in delta if period_key(e, settings.split_by) != last_key],
        by=settings.split_by,
        context_tokens=settings.context_tokens,
        count=count,
    )
    parts = sorted((*cut, *fresh), key=lambda p: (p.first_at, p.events[0].seq))
    if (
        before is not None
        and before.manifest.part is not None
        and any(p.first_at < before.manifest.part.first_at for p in parts)
    ):
        return None  # the full plan would order these parts among the older ones
    # What the parent inlines of the parts it keeps: its newest digest blocks, less the last
    # part's, which this job cuts again (at least the newest block is inlined).
    blocks = period_blocks(periods_of(root.body.summary))
    if not blocks or blocks[-1] != digest_lines(last):
        return None
    blocks = blocks[:-1]
    carried_lines = tuple(line for block in blocks for line in block)
    pool = {last.manifest.part.fingerprint: last} if last.manifest.part is not None else {}
    jobs = part_jobs(tx, parts, snapshot, withdrawn, settings, compressor=label, registry=registry, pool=pool)

    shown = tuple(delta)
    inputs = delta_inputs(root, shown, active)
    selection = Selection(
        snapshot=snapshot,
        expected=alias.expected(),
        path="hierarchical",
        parent=None,
        events=shown,
        facts=tuple(active),
        inputs=inputs,
        input_root=input_root(inputs),
        outdated_event_ids=outdated_in(citing, {e.event_id for e in shown}),
        withdrawn_event_ids=withdrawn,
    )
    tree = TreePlan(
        parts=jobs,
        facts=tuple(active),
        settings=settings,
        extends=root,
        carried=carried,
        carried_lines=carried_lines,
        carried_periods=carried_periods,
    )
    return Tail(selection=selection, tree=tree)
