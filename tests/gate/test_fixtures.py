"""The shipped fixtures: plain JSON, in step with their generator, covering every failure family."""

from __future__ import annotations

import json

from lossgate.gate.casefile import load_case
from lossgate.gate.fixture import load_fixture
from tests.gate.build_cases import FIXTURES, build

FAMILIES = {
    "omission",
    "negation_loss",
    "qualifier_loss",
    "temporal_collapse",
    "deletion_resurrection",
    "entity_merge",
    "instruction_elevation",
    "unresolved_conflicts",
    "permission_scope",
    "deadlines",
    "double_negation",
    "close_numbers",
    "unit_conversion",
    "same_name_entities",
    "cross_project_preferences",
    "revoked_sources",
    "budget_pressure",
    "repeated_compression",
}


def test_shipped_files_match_the_generator() -> None:
    expected = build()
    shipped = {p: p.read_text(encoding="utf-8") for p in (FIXTURES / "cases").glob("*.json")}
    shipped |= {p: p.read_text(encoding="utf-8") for p in (FIXTURES / "contract").glob("*.json")}
    assert set(shipped) == set(expected), "run: python tests/gate/build_cases.py"
    stale = sorted(p.name for p in expected if shipped[p] != expected[p])
    assert stale == [], f"out of date, run: python tests/gate/build_cases.py ({stale})"


def test_cases_load_and_cover_every_family() -> None:
    cases = [load_case(p) for p in sorted((FIXTURES / "cases").glob("*.json"))]
    assert len(cases) >= 34
    assert {c.case_id for c in cases} >= {
        "reference-peanut-allergy",
        "reference-timezone-change",
        "reference-invoice-call",
        "reference-deletion",
    }
    covered = {f for c in cases for f in c.families}
    assert FAMILIES <= covered, FAMILIES - covered
    for c in cases:
        assert json.loads(c.path.read_text())["format"] == "lossgate.gate-case/1"


def test_contract_fixtures_load() -> None:
    for path in (FIXTURES / "contract").glob("*.json"):
        expected, artifact = load_fixture(path)
        assert expected and artifact.facts
