"""Schema upgrades re-gate: a registry version that makes the gate stricter re-checks what
was gated under an older one.

A summary was gated against the must-preserve set of the registry it was built under
(its manifest's ``registry_version``). A newer registry can make that set larger: a
predicate *added as critical*, a predicate whose *criticality rises*, or one whose *value
type changes* (:func:`lossgate.publication.upgrades.upgrade_changes`). A summary gated before such a version has not
been shown to keep what the new version says it must.

:func:`regate_tenant` (run by :meth:`lossgate.Admin.load_predicates` in the transaction
that stores the new version, and by :meth:`lossgate.Admin.regate`) takes every subject of
a tenant and:

* **the published artifact** (the one the alias points at), if it was gated under a
  version older than the registry's and the upgrade warrants it, is re-checked: the gate
  runs on it again against the snapshot of its inputs at its ``covers_through``
  (:func:`~lossgate.consolidate.selection.snapshot_at`) under the *new* registry. If it
  passes, it stays published and fresh; if it fails it goes ``stale`` (its
  ``state_reason`` says which version refused it and why), which takes it out of recall
  at once (recall falls back to the raw layer) and out of the incremental path, and a
  rebuild is queued (:func:`lossgate.lineage.queue.registry_upgraded`);
* **candidates and abandoned artifacts** gated under the older version (work in flight,
  or left by a crash) go ``stale``: they could otherwise still be offered to the switch.
  Retired, failed and stale artifacts keep their state: they are audit, never recalled.

Either way the subject's log gets one ``regate`` line per artifact examined (the
versions, the outcome, the violations). The switch refuses a candidate gated under a
version this rule says is outdated (:func:`lossgate.publication.upgrades.outdated`), so a job that read the old
registry before the upgrade committed cannot publish behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lossgate.consolidate.selection import snapshot_at
from lossgate.gate.engine import check
from lossgate.lineage import queue
from lossgate.model.registry import Registry
from lossgate.publication.upgrades import outdated
from lossgate.store.protocol import WriteTx

__all__ = ["RegateResult", "regate_subject", "regate_tenant"]


@dataclass(frozen=True)
class RegateResult:
    """What re-gating one artifact came to."""

    tenant_id: str
    subject_id: str
    artifact_id: str
    gated_under: int
    registry_version: int
    outcome: str  # a gate outcome ("clean", "acceptable", "failed"), or "outdated" for an unpublished one
    violations: tuple[str, ...] = ()
    stale: bool = False
    queued: bool = False


def regate_subject(
    tx: WriteTx, tenant_id: str, subject_id: str, registry: Registry, *, now: datetime
) -> list[RegateResult]:
    """Re-gate one subject's artifacts gated under an outdated registry (module docstring)."""
    alias = tx.alias(tenant_id, subject_id)
    results: list[RegateResult] = []
    reasons: dict[int, list[str]] = {}

    def why(version: int) -> list[str]:
        if version not in reasons:
            reasons[version] = outdated(tx, version, registry)
        return reasons[version]

    live = tx.artifact(tenant_id, subject_id, alias.artifact_id) if alias.artifact_id else None
    # A hierarchical root's parts are not what recall reads, and the root's own re-gate
    # covers its text: a part is checked again when a job would reuse it
    # (lossgate.consolidate.hierarchy.plan), not made stale here.
    parts = set(live.manifest.children) if live is not None else set()
    for art in tx.artifacts(tenant_id, subject_id, states=["published", "candidate", "abandoned"]):
        gated_under = art.manifest.registry_version
        changes = why(gated_under)
        if not changes or art.artifact_id in parts:
            continue
        t, s, a = tenant_id, subject_id, art.artifact_id
        if art.state == "published" and art.artifact_id == alias.artifact_id:
            snapshot = snapshot_at(tx, t, s, registry, through_seq=art.manifest.new_covers_through)
            result = check(snapshot, art.body, registry)
            lines = tuple(result.lines())
            stale = not result.passed
            queued = False
            if stale:
                shown = ", ".join(lines[:5]) + (f" (+{len(lines) - 5} more)" if len(lines) > 5 else "")
                tx.set_artifact_state(
                    t,
                    s,
                    [a],
                    "stale",
                    from_states=["published"],
                    reason=(f"re-gate under registry v{registry.version} (gated under v{gated_under}) failed: {shown}"),
                )
                queued = queue.registry_upgraded(tx, t, s, registry.version, now=now)
            results.append(
                RegateResult(t, s, a, gated_under, registry.version, result.outcome, lines, stale=stale, queued=queued)
            )
        else:
            # Not what recall reads: work in flight or left behind, gated against a set the new
            # registry has outgrown. It must never reach the switch now.
            tx.set_artifact_state(
                t,
                s,
                [a],
                "stale",
                from_states=[art.state],
                reason=(f"gated under registry v{gated_under}; v{registry.version} requires a re-gate"),
            )
            results.append(RegateResult(t, s, a, gated_under, registry.version, "outdated", stale=True))
        last = results[-1]
        tx.add_log(
            t,
            s,
            at=now,
            op="regate",
            target_id=a,
            detail={
                "registry_version": registry.version,
                "gated_under": gated_under,
                "changes": changes,
                "outcome": last.outcome,
                "violations": list(last.violations),
                "stale": last.stale,
                "queued": last.queued,
            },
        )
    return results


def regate_tenant(
    tx: WriteTx, tenant_id: str, registry: Registry, *, now: datetime, subjects: Sequence[str] | None = None
) -> list[RegateResult]:
    """:func:`regate_subject` for each of ``subjects`` (default: every subject of the tenant)."""
    out: list[RegateResult] = []
    for subject_id in tx.subjects(tenant_id) if subjects is None else subjects:
        out += regate_subject(tx, tenant_id, subject_id, registry, now=now)
    return out
