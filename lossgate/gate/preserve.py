"""The must-preserve set: what a summary artifact may not lose.

Built from a snapshot and the predicate registry before the artifact is
looked at. An *active* fact is in the set for every reason that applies:

==============  =====================================================================
reason          the fact ...
==============  =====================================================================
critical        has a predicate of criticality ``critical``
important       has a predicate of criticality ``important``
negation        is negative: polarity ``negative`` or a ``False`` bool value
exact_number    has an ``int``, ``decimal`` or ``money`` value
temporal        has a ``date``, ``datetime`` or ``duration`` value
identifier      has an ``entity_id`` value or a predicate of category ``identifier``
permission      has a predicate of category ``permission`` (a scope and its limits)
open_item       has a predicate of category ``obligation`` (an unfinished commitment)
conflict        is one side of an unresolved conflict
==============  =====================================================================

``conflicts`` lists the unresolved conflict ids, which the artifact must carry.

What losing a fact costs follows from its reasons (:meth:`MustPreserve.loss_severity`):
every reason but ``important`` is *hard*, and dropping such a fact fails the gate
(missing entries are rejected from publication). A fact whose only reason
is ``important`` is a recorded, acceptable loss (the middle tier), and a fact
in no set at all (a contextual predicate with a plain value) is a contextual loss.
A predicate missing from the registry counts as critical: the gate fails safe.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from lossgate.model.records import Fact, Snapshot
from lossgate.model.registry import Registry

__all__ = ["MustPreserve", "Reason", "build_must_preserve", "REASONS"]

Reason = Literal[
    "critical",
    "important",
    "negation",
    "exact_number",
    "temporal",
    "identifier",
    "permission",
    "open_item",
    "conflict",
]
REASONS: tuple[str, ...] = (
    "critical",
    "important",
    "negation",
    "exact_number",
    "temporal",
    "identifier",
    "permission",
    "open_item",
    "conflict",
)

_NUMBER_TYPES = frozenset({"int", "decimal", "money"})
_TEMPORAL_TYPES = frozenset({"date", "datetime", "duration"})


class MustPreserve(BaseModel):
    """Fact ids per reason (each sorted) and the unresolved conflict ids."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    critical: tuple[str, ...] = ()
    important: tuple[str, ...] = ()
    negation: tuple[str, ...] = ()
    exact_number: tuple[str, ...] = ()
    temporal: tuple[str, ...] = ()
    identifier: tuple[str, ...] = ()
    permission: tuple[str, ...] = ()
    open_item: tuple[str, ...] = ()
    conflict: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()

    def fact_ids(self) -> tuple[str, ...]:
        """Every fact id in the set, sorted."""
        return tuple(sorted({fid for r in REASONS for fid in getattr(self, r)}))

    def reasons(self, fact_id: str) -> tuple[str, ...]:
        """The reasons ``fact_id`` is in the set (empty if it is not)."""
        return tuple(r for r in REASONS if fact_id in getattr(self, r))

    def loss_severity(self, fact_id: str) -> Literal["critical", "important", "contextual"]:
        """What dropping ``fact_id`` costs: critical for any hard reason, important if
        its only reason is ``important``, contextual if it is not in the set."""
        reasons = self.reasons(fact_id)
        if not reasons:
            return "contextual"
        return "important" if reasons == ("important",) else "critical"


def _reasons(fact: Fact, registry: Registry) -> list[str]:
    pred = registry.predicates.get(fact.predicate)
    if pred is None:
        return ["critical"]
    out: list[str] = []
    if pred.criticality in ("critical", "important"):
        out.append(pred.criticality)
    if fact.polarity == "negative" or (fact.value_type == "bool" and fact.value is False):
        out.append("negation")
    if fact.value_type in _NUMBER_TYPES:
        out.append("exact_number")
    if fact.value_type in _TEMPORAL_TYPES:
        out.append("temporal")
    if fact.value_type == "entity_id" or pred.category == "identifier":
        out.append("identifier")
    if pred.category == "permission":
        out.append("permission")
    if pred.category == "obligation":
        out.append("open_item")
    return out


def build_must_preserve(snapshot: Snapshot, registry: Registry) -> MustPreserve:
    """The must-preserve set of ``snapshot``. Pure; never raises on unknown predicates."""
    by_reason: dict[str, set[str]] = {r: set() for r in REASONS}
    active = {f.fact_id for f in snapshot.facts if f.status == "active"}
    for fact in snapshot.facts:
        if fact.status == "active":
            for reason in _reasons(fact, registry):
                by_reason[reason].add(fact.fact_id)
    conflicts = []
    for c in snapshot.conflicts:
        if c.status == "unresolved":
            conflicts.append(c.conflict_id)
            by_reason["conflict"].update(fid for fid in c.fact_ids if fid in active)
    fields = {r: tuple(sorted(ids)) for r, ids in by_reason.items()}
    return MustPreserve(**fields, conflicts=tuple(sorted(conflicts)))
