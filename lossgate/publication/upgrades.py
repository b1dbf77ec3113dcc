"""Registry upgrades: which registry versions make a summary gated under an older one
unfit to publish.

A summary was gated against the must-preserve set of the registry it was built under (its
manifest's ``registry_version``). A newer registry can make that set larger: a predicate
*added as critical*, a predicate whose *criticality rises*, or one whose *value type
changes* (:func:`upgrade_changes`). The switch refuses a candidate gated under a version
:func:`outdated` names, so a job that read the old registry before an upgrade committed
cannot publish behind it; :mod:`lossgate.consolidate.regate` re-checks what is already
published.
"""

from __future__ import annotations

from lossgate.model.registry import Registry
from lossgate.store.protocol import ReadTx

__all__ = ["upgrade_changes", "outdated"]

_RANK = {"contextual": 0, "important": 1, "critical": 2}


def upgrade_changes(old: Registry | None, new: Registry) -> list[str]:
    """Why summaries gated under ``old`` must be re-gated under ``new`` (empty: they need
    not): each predicate added as critical, whose criticality rises, or whose value type
    changes, as ``"name: what changed"``, sorted by name."""
    if old is None or old.version >= new.version:
        return []
    out = []
    for name in sorted(new.predicates):
        pred, before = new.predicates[name], old.predicates.get(name)
        if before is None:
            if pred.criticality == "critical":
                out.append(f"{name}: added as critical")
            continue
        if _RANK[pred.criticality] > _RANK[before.criticality]:
            out.append(f"{name}: {before.criticality} -> {pred.criticality}")
        if pred.value_type != before.value_type:
            out.append(f"{name}: type {before.value_type} -> {pred.value_type}")
    return out


def _stored(tx: ReadTx, version: int) -> Registry | None:
    doc = tx.registry_document(version)
    return Registry.model_validate(doc) if doc is not None else None


def outdated(tx: ReadTx, gated_under: int, registry: Registry | None = None) -> list[str]:
    """Why an artifact gated under registry ``gated_under`` must be re-gated under the newest
    stored registry (``registry``, if the caller has it): :func:`upgrade_changes`; empty when
    it was gated under the newest version, or the upgrade does not warrant it."""
    latest = registry.version if registry is not None else tx.latest_registry_version()
    if latest is None or latest <= gated_under:
        return []
    new = registry if registry is not None else _stored(tx, latest)
    if new is None:
        return []
    return upgrade_changes(_stored(tx, gated_under), new)
