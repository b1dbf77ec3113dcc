"""The fidelity gate: refuse to publish a summary artifact that loses, flips or invents a fact.

>>> result = check(snapshot, artifact, registry)        # doctest: +SKIP
>>> result.outcome, result.lines()                       # doctest: +SKIP
('failed', ['fact-allergy-1:value_changed'])

* :func:`check` gates lossgate records (a :class:`~lossgate.model.records.Snapshot` and an
  :class:`~lossgate.model.records.ArtifactBody`) against the predicate registry;
* :func:`validate_artifact` / :func:`contract_result` run the fact contract on
  its JSON fixture format (``fact-contract``, :mod:`lossgate.gate.fixture`);
* :data:`CODES` lists every violation code with its default severity.
"""

from lossgate.gate.engine import check
from lossgate.gate.fixture import (
    CompressedFact,
    CompressionArtifact,
    ExpectedFact,
    contract_result,
    load_fixture,
    parse_fixture,
    validate_artifact,
)
from lossgate.gate.outcome import CODES, GateResult, Outcome, Severity, Violation
from lossgate.gate.preserve import MustPreserve, build_must_preserve

__all__ = [
    "check",
    "GateResult",
    "Violation",
    "Outcome",
    "Severity",
    "CODES",
    "MustPreserve",
    "build_must_preserve",
    "ExpectedFact",
    "CompressedFact",
    "CompressionArtifact",
    "validate_artifact",
    "contract_result",
    "parse_fixture",
    "load_fixture",
]
