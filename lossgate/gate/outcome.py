"""Violations, their severities and the gate's outcome.

Every check of the gate reports :class:`Violation` records; this module turns
them into a :class:`GateResult` with one of three outcomes:

* ``clean``: nothing was lost, changed or invented;
* ``acceptable``: only *important* or *contextual* losses. They are not
  errors: the artifact may be published, and ``GateResult.losses`` lists them
  for its metadata so retrieval can compensate;
* ``failed``: at least one *critical* violation. Nothing is published.

A violation's severity is fixed by its code, except for the two kinds of loss
(``missing`` and ``atom_missing``), whose severity depends on what was lost.
See :data:`CODES` for the table; each module documents its own codes.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from lossgate.gate.preserve import MustPreserve

__all__ = [
    "Code",
    "CODES",
    "FORBIDDEN",
    "Severity",
    "Outcome",
    "Violation",
    "GateResult",
    "make_result",
    "sort_key",
]

Severity = Literal["critical", "important", "contextual"]
Outcome = Literal["clean", "acceptable", "failed"]

Code = Literal[
    # the fact contract (its original codes, plus polarity, modality and authority)
    "duplicate_fact_id",
    "missing",
    "tenant_changed",
    "subject_changed",
    "predicate_changed",
    "value_changed",
    "polarity_flipped",
    "qualifiers_changed",
    "modality_changed",
    "authority_changed",
    "provenance_missing",
    "forbidden_superseded_fact",
    "forbidden_deleted_fact",
    "forbidden_revoked_fact",
    "unsupported_fact",
    # lineage, trust, open items and conflicts (records only)
    "unsupported_claim",
    "stale_input",
    "untrusted_elevated",
    "open_item_dropped",
    "conflict_dropped",
    "conflict_resolved_by_compressor",
    "conflict_unsupported",
    # the prose fact diff
    "atom_changed",
    "atom_added",
    "atom_missing",
    # the critical-topic fence (a narrative sentence about a critical topic that no source supports)
    "narrative_unsupported",
    # a line stating a superseded or revoked value without lossgate's marker, or a marker not
    # lossgate's (lossgate.gate.superseded)
    "superseded_unmarked",
    "marker_forged",
    # a model's narrative sentence on a topic only the ledger states, under the tenant's
    # "refuse" narrative policy (lossgate.gate.narrative)
    "narrative_touches_topic",
    # read-back: what the store returns differs from what was written (lossgate.publication.readback)
    "representation_loss",
]

#: Code -> default severity. ``missing`` and ``atom_missing`` are downgraded by the
#: checks that emit them when what was lost is not critical.
CODES: dict[str, Severity] = {code: "critical" for code in get_args(Code)}
CODES["atom_missing"] = "important"

#: A fact's status, other than active -> the code for an artifact that states the fact.
FORBIDDEN: dict[str, Code] = {
    "superseded": "forbidden_superseded_fact",
    "deleted": "forbidden_deleted_fact",
    "revoked": "forbidden_revoked_fact",
}

_RANK = {code: i for i, code in enumerate(get_args(Code))}
_SEVERITY_RANK = {"critical": 0, "important": 1, "contextual": 2}


class Violation(BaseModel):
    """One named finding. ``str(v)`` is the line ``<subject>:<code>`` that ``lossgate check`` prints.

    ``subject`` is what the finding is about: a fact id (most codes), a conflict id
    (``conflict_*``), ``artifact`` (a header mismatch) or an atom's key (``atom_*``).
    ``expected``/``observed`` show both sides with their type names where values differ.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: Code
    subject: str
    severity: Severity
    detail: str = ""
    expected: str | None = None
    observed: str | None = None

    def __str__(self) -> str:
        return f"{self.subject}:{self.code}"


class GateResult(BaseModel):
    """What the gate decided and why.

    ``violations`` are the blocking (critical) findings, ``losses`` the recorded,
    non-blocking ones (important or contextual); both are in a deterministic order
    (subject, then code, then detail). ``must_preserve`` is the set that was checked.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: Outcome
    violations: tuple[Violation, ...] = ()
    losses: tuple[Violation, ...] = ()
    must_preserve: MustPreserve

    @property
    def passed(self) -> bool:
        """True for ``clean`` and ``acceptable``: the artifact may be published."""
        return self.outcome != "failed"

    def lines(self) -> list[str]:
        """The blocking violations as ``<subject>:<code>`` strings, in order."""
        return [str(v) for v in self.violations]


def sort_key(v: Violation) -> tuple[str, int, int, str]:
    """Deterministic order: by subject, then code (declaration order), severity, detail."""
    return (v.subject, _RANK[v.code], _SEVERITY_RANK[v.severity], v.detail)


def make_result(found: list[Violation], must_preserve: MustPreserve) -> GateResult:
    """Dedupe, order and classify findings into a :class:`GateResult`.

    The same (subject, code) reported twice is kept once, at its highest severity,
    so a check that is reached by two paths cannot change the outcome or the output.
    """
    best: dict[tuple[str, str], Violation] = {}
    for v in sorted(found, key=sort_key):
        best.setdefault((v.subject, v.code), v)
    ordered = list(best.values())  # first occurrences of a sorted list: still sorted
    blocking = tuple(v for v in ordered if v.severity == "critical")
    losses = tuple(v for v in ordered if v.severity != "critical")
    outcome: Outcome = "failed" if blocking else ("acceptable" if losses else "clean")
    return GateResult(outcome=outcome, violations=blocking, losses=losses, must_preserve=must_preserve)
