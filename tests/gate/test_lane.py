"""The mutation lane over the shipped gate cases: every mutant caught, no rewrite flagged."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from lossgate.evaluation import LaneReport, run_lane
from lossgate.evaluation.mutations import OPERATORS
from lossgate.evaluation.rewrites import REWRITES


@pytest.fixture(scope="module")
def report() -> LaneReport:
    return run_lane()


def table(report: LaneReport) -> str:
    t = Table(title="mutation lane")
    for col in ("operator", "mutants", "caught", "missed", "equivalent"):
        t.add_column(col)
    for op in report.operators:
        t.add_row(op.operator, str(op.mutants), str(op.caught), str(op.mutants - op.caught), str(op.equivalent))
    r = Table(title="rewrites")
    for col in ("rewrite", "variants", "false alarms"):
        r.add_column(col)
    for rw in report.rewrites:
        r.add_row(rw.rewrite, str(rw.variants), str(len(rw.false_alarms)))
    buf = io.StringIO()
    console = Console(file=buf, width=100, color_system=None)
    console.print(t)
    console.print(r)
    return buf.getvalue()


def test_every_mutant_is_caught_and_no_rewrite_is_flagged(report: LaneReport) -> None:
    print("\n" + table(report))  # visible with -s: the per-operator evidence
    missed = [line for op in report.operators for line in op.missed]
    alarms = [line for rw in report.rewrites for line in rw.false_alarms]
    assert missed == []
    assert alarms == []
    assert report.broken_cases == ()
    assert report.ok and report.caught == report.mutants


def test_every_operator_and_rewrite_was_exercised(report: LaneReport) -> None:
    assert [o.operator for o in report.operators] == [op.name for op in OPERATORS]
    assert all(o.mutants > 0 for o in report.operators), [o.operator for o in report.operators if not o.mutants]
    assert all(r.variants > 0 for r in report.rewrites)
    assert [r.rewrite for r in report.rewrites] == [rw.name for rw in REWRITES]
    assert report.mutants > 500


def test_prose_mutants_are_generated_too(report: LaneReport) -> None:
    from lossgate.evaluation.lane import load_cases, default_fixtures

    surfaces = {m.surface for case in load_cases(default_fixtures()) for op in OPERATORS for m in op.generate(case)}
    assert surfaces == {"claims", "prose", "both"}


def test_baselines(report: LaneReport) -> None:
    outcomes = {b.case_id: b.outcome for b in report.baselines}
    assert len(outcomes) >= 34
    assert outcomes["chatter-acceptable-loss"] == "acceptable"  # a shorter summary that drops chatter
    assert outcomes["omission-budget-pressure"] == "acceptable"
    assert outcomes["seed-invoice-call"] == outcomes["seed-peanut-allergy"] == "clean"


def test_the_lane_is_deterministic(report: LaneReport) -> None:
    assert run_lane() == report
