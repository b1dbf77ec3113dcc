"""The fidelity gate: one call decides whether an artifact may be published.

:func:`check` runs, in order, the must-preserve set
(:mod:`~lossgate.gate.preserve`), the fact contract
(:mod:`~lossgate.gate.contract`), the lineage, trust, open-item and conflict
checks (:mod:`~lossgate.gate.integrity`), the superseded-value markers
(:mod:`~lossgate.gate.superseded`), the prose fact diff
(:mod:`~lossgate.gate.prose`) and the critical-topic fence
(:mod:`~lossgate.gate.fence`), and classifies what they found
(:mod:`~lossgate.gate.outcome`). It reads no clock, draws no random number
and iterates no unordered collection into its output: the same inputs give
the same :class:`~lossgate.gate.outcome.GateResult` (invariant 10).
"""

from __future__ import annotations

from lossgate.gate.contract import check_contract
from lossgate.gate.fence import check_fence
from lossgate.gate.integrity import check_integrity
from lossgate.gate.outcome import GateResult, make_result
from lossgate.gate.preserve import MustPreserve, build_must_preserve
from lossgate.gate.prose import ProseInputs, check_prose, structured_lines
from lossgate.gate.superseded import Retired, check_markers, retired_values
from lossgate.model.records import ArtifactBody, Snapshot
from lossgate.model.registry import Registry

__all__ = ["check"]


def check(
    snapshot: Snapshot,
    artifact: ArtifactBody,
    registry: Registry,
    *,
    prose: bool = True,
    prose_inputs: ProseInputs | None = None,
    must: MustPreserve | None = None,
    retired: tuple[Retired, ...] | None = None,
) -> GateResult:
    """Gate ``artifact`` against the ``snapshot`` it was built from.

    Returns a :class:`GateResult`: ``clean`` (nothing lost), ``acceptable`` (only
    important or contextual losses, listed in ``losses``) or ``failed`` (critical
    ``violations``; publish nothing). Never raises on the content of the artifact:
    every defect is a named violation. ``prose=False`` skips the prose fact diff and the fence;
    ``prose_inputs`` reuses the snapshot's atoms across several artifacts, and ``must`` the
    snapshot's must-preserve set (:func:`~lossgate.gate.preserve.build_must_preserve` of this
    snapshot and registry: a caller that built it already). Every line that states a
    superseded or revoked value must carry lossgate's marker (:mod:`lossgate.gate.superseded`):
    ``retired`` are those values, when the caller read them beyond a bounded snapshot.
    """
    if must is None:
        must = build_must_preserve(snapshot, registry)
    found = check_contract(snapshot, artifact, loss_severity=must.loss_severity)
    found += check_integrity(snapshot, artifact, registry)
    found += check_markers(
        artifact.summary,
        retired_values(snapshot.facts, snapshot.conflicts) if retired is None else retired,
        own=structured_lines(artifact),
    )
    if prose:
        found += check_prose(snapshot, artifact, must, inputs=prose_inputs)
        found += check_fence(snapshot, artifact, must, registry)
    return make_result(found, must)
