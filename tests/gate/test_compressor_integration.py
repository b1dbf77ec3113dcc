"""The gate on artifacts the deterministic compressor produces (the consolidation default).

The shipped cases' hand-written artifacts are one kind of correct input; the compressor's
rendering (one line per fact, the conversation quoted) is another. Both must pass, and
mutating the compressor's artifacts must be caught just the same.
"""

from __future__ import annotations

import json

import pytest

from lossgate.evaluation.lane import default_fixtures, load_cases
from lossgate.evaluation.mutant import judge
from lossgate.evaluation.operators import OPERATORS
from lossgate.gate import check
from lossgate.gate.casefile import GateCase
from lossgate.gate.prose import structured_lines
from lossgate.gate.superseded import mark, retired_values
from lossgate.model.records import ArtifactBody

compressor = pytest.importorskip("lossgate.consolidate.compressor")
deterministic = pytest.importorskip("lossgate.consolidate.deterministic")


def compressed(case: GateCase) -> GateCase:
    snap = case.snapshot
    active = tuple(f for f in snap.facts if f.status == "active")
    live = {e for f in active for e in f.source_event_ids}
    request = compressor.CompressionRequest(
        tenant_id=snap.tenant_id,
        subject_id=snap.subject_id,
        facts=active,
        predicates={f.predicate: case.registry.get(f.predicate) for f in active},
        conflicts=tuple(c for c in snap.conflicts if c.status == "unresolved"),
        events=tuple(e for e in snap.events if e.state == "valid"),
        outdated_event_ids=frozenset(
            e for f in snap.facts if f.status != "active" for e in f.source_event_ids if e not in live
        ),
    )
    raw = deterministic.DeterministicCompressor().compress(request)
    # as the pipeline publishes it: lossgate's markers on lines that state a superseded value
    # or one side of an open conflict
    body = ArtifactBody.model_validate(raw)
    raw["summary"] = mark(body.summary, retired_values(snap.facts, snap.conflicts), structured_lines(body))
    doc = {**case.document, "artifact": json.loads(json.dumps(raw, default=str))}
    for claim in doc["artifact"]["claims"]:
        claim["qualifiers"] = dict(claim["qualifiers"])
    return GateCase(**{**case.__dict__, "artifact": ArtifactBody.model_validate(raw), "document": doc})


CASES = load_cases(default_fixtures())


@pytest.mark.parametrize("case", CASES, ids=[c.case_id for c in CASES])
def test_compressor_output_passes_and_its_mutants_fail(case: GateCase) -> None:
    made = compressed(case)
    assert check(made.snapshot, made.artifact, made.registry).passed
    missed = []
    for op in OPERATORS:
        for m in op.generate(made):
            if m.equivalent:
                continue
            if m.policy is not None:  # a narrative mutant: published as lossgate publishes, never read
                why = judge(made, m)
                if why is not None:
                    missed.append(f"{op.name} {why}")
                continue
            result = check(made.snapshot, m.artifact, made.registry)
            # a mutation inside one of lossgate's markers is a marker lossgate would not write
            named = m.expect | {"marker_forged"}
            if result.outcome != "failed" or not named & {v.code for v in result.violations}:
                missed.append(f"{op.name} {m.target} ({m.surface}): {result.outcome}")
    assert missed == []
