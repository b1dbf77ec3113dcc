"""Extending a published hierarchy by its tail: a consolidation that costs what is new.

Seed 001 fences a snapshot by ``high_water`` and ``input_epoch`` so that appending at the
tail is cheap. While the published root is fresh (its ``source_epoch`` is the clock's
``input_epoch``: nothing it stands on was superseded, revoked, deleted, re-trusted or put
in conflict since it was gated), every part it rolls up is still exactly what its gate
checked. A job then reads only

* the events after the root's ``covers_through`` (the delta);
* the parts of the root's last period (their events are re-cut with the delta, as a full
  plan would cut them: :func:`lossgate.consolidate.parts.split`);
* the active facts, the facts citing the events of the last period and the delta in any
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
citing an event of an earlier period, or a new event of an earlier period: dated before
the last period starts, or of a period one of the carried parts holds (the root's manifest
keeps a hash of each part's period: ``Manifest.periods``). Correctness does not rest on this module: a change to any
input covered generations back moves the epoch and marks the whole chain stale at once
(lineage follows every root to the one it extends: :func:`lossgate.lineage.invalidate`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lossgate.consolidate.hierarchy import (
    HierarchyConfig, TreePlan, digest_lines, part_jobs, period_blocks, period_hash, periods_of,
)
from lossgate.consolidate.parts import period_key, split
from lossgate.consolidate.selection import Selection, cited_sources, delta_inputs, input_root, outdated_in
from lossgate.derived import Artifact
from lossgate.records import Event, Snapshot
from lossgate.registry import Registry
from lossgate.store.protocol import ReadTx

__all__ = ["Tail", "extend"]


@dataclass(frozen=True)
class Tail:
    """A job that extends the published root: its bounded selection and its tree."""

    selection: Selection
    tree: TreePlan


def extend(tx: ReadTx, tenant_id: str, subject_id: str, registry: Registry, config: HierarchyConfig, *,
           compressor: object, label: str, count: Callable[[str], int]) -> Tail | None:
    """The tail job of a subject whose published root is fresh, or None (the full plan)."""
    t, s = tenant_id, subject_id
    clock, alias = tx.clock(t, s), tx.alias(t, s)
    if alias.artifact_id is None or alias.source_epoch != clock.input_epoch or clock.high_water <= alias.covers_through:
        return None
    root = tx.artifact(t, s, alias.artifact_id)
    if (root is None or root.state != "published" or root.manifest.path != "hierarchical"
            or root.manifest.tree is None or root.manifest.registry_version != registry.version):
        return None
    settings = config.settings(root.manifest.tree, compressor)
    children, periods = root.manifest.children, root.manifest.periods
    if settings != root.manifest.tree or not children or len(periods) != len(children):
        return None  # (a root stored before roots kept their periods: the full plan, once)

    # The parts of the last period, newest first (and the part before them, which stays).
    replaced: list[tuple[Artifact, list[Event]]] = []
    last_key: str | None = None
    before: Artifact | None = None
    for child_id in reversed(children):
        part = tx.artifact(t, s, child_id)
        info = part.manifest.part if part is not None else None
        if part is None or info is None or part.state != "published" or \
                f"{part.manifest.compressor}@{part.manifest.compressor_version}" != label:
            return None
        own = [r.id for r in part.manifest.inputs[:info.events]]
        events = sorted(tx.events(t, s, ids=own), key=lambda e: e.seq)
        if len(events) != len(own) or any(e.state != "valid" for e in events):
            return None  # cannot happen at a fresh epoch; the full plan decides
        key = period_key(events[0], settings.split_by)
        if last_key is not None and key != last_key:
            before = part
            break
        last_key = key
        replaced.append((part, events))
    replaced.reverse()
    carried = children[:len(children) - len(replaced)]
    carried_periods = periods[:len(carried)]
    older = set(carried_periods)
    if period_hash(last_key or "") in older:
        return None  # the last period began in a part the others' order put before it
    old = [e for _, events in replaced for e in events]

    delta = tx.events(t, s, states=["valid"], after_seq=alias.covers_through, through_seq=clock.high_water)
    shown_ids = [e.event_id for e in old] + [e.event_id for e in delta]
    citing = tx.facts_citing(t, s, shown_ids)
    suppressed = {e for f in citing if f.status == "deleted" for e in f.source_event_ids}
    delta = [e for e in delta if e.event_id not in suppressed]
    start = min(e.occurred_at for e in old)
    if not delta or any(e.occurred_at < start or period_hash(period_key(e, settings.split_by)) in older
                        for e in delta):
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
        tenant_id=t, subject_id=s, clock=clock, registry_version=registry.version,
        events=tuple(sorted({**known, **{e.event_id: e for e in cited}}.values(), key=lambda e: e.seq)),
        facts=ordered_facts, conflicts=tuple(tx.conflicts(t, s, unresolved_only=True)),
    )

    parts = split((*old, *delta), by=settings.split_by, context_tokens=settings.context_tokens, count=count)
    if before is not None and before.manifest.part is not None and any(
            p.first_at < before.manifest.part.first_at for p in parts):
        return None  # the full plan would order these parts among the older ones
    # What the parent inlines of the parts it keeps: its newest digest blocks, less those of
    # the parts this job cuts again (the newest, which its window may hold only in part).
    blocks = period_blocks(periods_of(root.body.summary))
    ends = [digest_lines(part) for part, _ in replaced]
    if len(blocks) >= len(ends):
        if blocks[len(blocks) - len(ends):] != ends:
            return None
        blocks = blocks[:len(blocks) - len(ends)]
    elif blocks != ends[len(ends) - len(blocks):]:
        return None
    else:
        blocks = []
    carried_lines = tuple(line for block in blocks for line in block)
    pool = {p.manifest.part.fingerprint: p for p, _ in replaced if p.manifest.part is not None}
    jobs = part_jobs(tx, parts, snapshot, withdrawn, settings, compressor=label, registry=registry, pool=pool)

    shown = tuple(delta)
    inputs = delta_inputs(root, shown, active)
    selection = Selection(
        snapshot=snapshot, expected=alias.expected(), path="hierarchical", parent=None, events=shown,
        facts=tuple(active), inputs=inputs, input_root=input_root(inputs),
        outdated_event_ids=outdated_in(citing, {e.event_id for e in shown}), withdrawn_event_ids=withdrawn,
    )
    tree = TreePlan(parts=jobs, facts=tuple(active), settings=settings, extends=root, carried=carried,
                    carried_lines=carried_lines, carried_periods=carried_periods)
    return Tail(selection=selection, tree=tree)

