"""The mutation lane over the shipped gate cases: every mutant caught, no rewrite flagged."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from lossgate.evaluation import LaneReport, run_lane
from lossgate.evaluation.lane import default_fixtures, load_cases
from lossgate.evaluation.mutant import OMITTED, Mutant, judge, narrative_mutant
from lossgate.evaluation.operators import OPERATORS
from lossgate.evaluation.rewrites import REWRITES
from lossgate.gate.casefile import GateCase
from lossgate.gate.engine import check
from lossgate.gate.narrative import speak_for_ledger
from lossgate.gate.preserve import build_must_preserve
from lossgate.gate.prose import structured_lines
from lossgate.gate.superseded import mark, retired_values
from tests.support.shipped_cases import CASES


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


@pytest.mark.slow
def test_every_mutant_is_caught_and_no_rewrite_is_flagged(report: LaneReport) -> None:
    print("\n" + table(report))  # visible with -s: the per-operator evidence
    missed = [line for op in report.operators for line in op.missed]
    alarms = [line for rw in report.rewrites for line in rw.false_alarms]
    assert missed == []
    assert alarms == []
    assert report.broken_cases == ()
    assert report.ok and report.caught == report.mutants


@pytest.mark.slow
def test_every_operator_and_rewrite_was_exercised(report: LaneReport) -> None:
    assert [o.operator for o in report.operators] == [op.name for op in OPERATORS]
    assert all(o.mutants > 0 for o in report.operators), [o.operator for o in report.operators if not o.mutants]
    assert all(r.variants > 0 for r in report.rewrites)
    assert [r.rewrite for r in report.rewrites] == [rw.name for rw in REWRITES]
    assert report.mutants > 500


@pytest.mark.slow
def test_prose_mutants_are_generated_too(report: LaneReport) -> None:
    surfaces = {m.surface for case in load_cases(default_fixtures()) for op in OPERATORS for m in op.generate(case)}
    assert surfaces == {"claims", "prose", "both"}


@pytest.mark.slow
def test_baselines(report: LaneReport) -> None:
    outcomes = {b.case_id: b.outcome for b in report.baselines}
    assert len(outcomes) >= 34
    assert outcomes["chatter-acceptable-loss"] == "acceptable"  # a shorter summary that drops chatter
    assert outcomes["omission-budget-pressure"] == "acceptable"
    assert outcomes["reference-invoice-call"] == outcomes["reference-peanut-allergy"] == "clean"


@pytest.mark.slow
def test_the_lane_is_deterministic(report: LaneReport) -> None:
    assert run_lane() == report


# --- the operators for what only the ledger states, and for superseded values ------------------


def generated(name: str) -> list[tuple[GateCase, Mutant]]:
    op = next(o for o in OPERATORS if o.name == name)
    return [(case, m) for case in CASES.values() for m in op.generate(case)]


def topic_of(case: GateCase, m: Mutant) -> str | None:
    """What the narrative rule says ``m``'s sentence touches (None: it is published)."""
    _, omitted = speak_for_ledger(
        case.snapshot, m.artifact, build_must_preserve(case.snapshot, case.registry), case.registry
    )
    return next((o.topic for o in omitted if o.sentence in m.sentence), None)


def test_narrative_mutants_come_under_both_policies_and_expect_what_each_does() -> None:
    for name in ("contradict_with_synonym", "another_partys_fact"):
        mutants = [m for _, m in generated(name)]
        assert mutants and all(m.policy in ("omit", "refuse") and m.sentence in m.artifact.summary for m in mutants)
        assert {m.expect for m in mutants if m.policy == "omit"} == {frozenset({OMITTED})}
        assert {m.expect for m in mutants if m.policy == "refuse"} == {frozenset({"narrative_touches_topic"})}
        by_sentence = {(m.case_id, m.sentence): set() for m in mutants}
        for m in mutants:
            by_sentence[(m.case_id, m.sentence)].add(m.policy)
        assert all(p == {"omit", "refuse"} for p in by_sentence.values())


def test_a_sentence_that_reaches_the_summary_is_a_miss_under_either_policy() -> None:
    """The catch is the mutant's own sentence left out or refused, not the case's: the case's
    summary touches the peanut fact itself, and a sentence that only tells what was discussed
    stays under omit and is not refused under refuse."""
    case = CASES["reference-peanut-allergy"]
    for policy in ("omit", "refuse"):
        harmless = narrative_mutant(case, "probe", "probe", "Satay was discussed at lunch.", policy)
        assert judge(case, harmless) is not None
        wrong = narrative_mutant(case, "probe", "probe", "Last week they had the satay and loved it.", policy)
        assert judge(case, wrong) is None


def test_synonym_contradictions_apply_where_a_critical_fact_has_synonyms_and_the_synonym_is_what_is_read() -> None:
    pairs = generated("contradict_with_synonym")
    with_synonyms = {
        cid
        for cid, case in CASES.items()
        for c in case.artifact.claims
        if build_must_preserve(case.snapshot, case.registry).loss_severity(c.fact_id) == "critical"
        and case.registry.predicates[c.predicate].synonyms
    }
    assert {case.case_id for case, _ in pairs} == with_synonyms
    peanut = [m.sentence for case, m in pairs if case.case_id == "reference-peanut-allergy"]
    assert "Last week they had the groundnut and loved it." in peanut
    assert "Go ahead with the satay, they are fine with it now." in peanut
    for case, m in pairs:
        syn = m.target.split(":", 1)[1].split("@")[0]
        assert syn.casefold() in m.sentence.casefold()
        assert topic_of(case, m) is not None, (case.case_id, m.sentence)
        # the same sentence without the synonym is published: the synonym alone touches the fact
        plain = m.sentence.replace(syn, "weather").replace(syn[:1].upper() + syn[1:], "Weather")
        # (after a line that stays: after one left out, "... loved it." would speak of its topic)
        probe = narrative_mutant(case, "probe", "probe", f"They met on Monday.\n{plain}", "omit")
        assert topic_of(case, probe) is None, (case.case_id, plain)


@pytest.mark.slow
def test_another_partys_fact_is_left_out_also_where_nothing_else_would_take_it_out() -> None:
    pairs = [(case, m) for case, m in generated("another_partys_fact") if m.policy == "omit"]
    assert {case.case_id for case, _ in pairs} == {
        cid for cid, case in CASES.items() if any(f.status == "active" for f in case.snapshot.facts)
    }
    assert all(topic_of(case, m) is not None for case, m in pairs)
    # a predicate the subject has no fact of and that the ledger alone need not state (not a
    # preference, instruction, permission or obligation, not critical): only the other
    # person's name takes the sentence out
    probed = 0
    for case, _ in pairs:
        held = {f.predicate for f in case.snapshot.facts}
        free = [
            name
            for name, spec in case.registry.predicates.items()
            if name not in held
            and spec.category not in ("preference", "instruction", "permission", "obligation")
            and spec.criticality != "critical"
        ]
        for name in free:
            words = name.replace(".", " ").replace("_", " ")
            named = narrative_mutant(
                case, "probe", "probe", f"Their colleague Priya Raman has a different {words}.", "omit"
            )
            if (
                topic_of(case, narrative_mutant(case, "probe", "probe", f"Someone has a different {words}.", "omit"))
                is None
            ):
                assert (topic_of(case, named) or "").startswith("another party's fact"), (case.case_id, words)
                probed += 1
    assert probed >= 10


def test_superseded_restatements_apply_only_where_a_value_was_superseded_or_revoked() -> None:
    pairs = generated("restate_superseded")
    retired = {
        cid
        for cid, case in CASES.items()
        for r in retired_values(case.snapshot.facts, case.snapshot.conflicts)
        if any(f.fact_id == r.fact_id and f.status in ("superseded", "revoked") for f in case.snapshot.facts)
    }
    assert len(retired) == 8
    assert {case.case_id for case, _ in pairs} == retired
    assert {m.expect for _, m in pairs} == {frozenset({"superseded_unmarked"}), frozenset({"marker_forged"})}
    for case, m in pairs:
        codes = {v.code for v in check(case.snapshot, m.artifact, case.registry).violations}
        assert m.expect <= codes, (m.target, codes)
        if "superseded_unmarked" in m.expect:
            # with lossgate's marker the line says what holds now: that rule is satisfied
            own = structured_lines(m.artifact)
            marked = m.artifact.model_copy(
                update={
                    "summary": mark(
                        m.artifact.summary, retired_values(case.snapshot.facts, case.snapshot.conflicts), own
                    )
                }
            )
            assert not {"superseded_unmarked", "marker_forged"} & {
                v.code for v in check(case.snapshot, marked, case.registry).violations
            }


def test_a_disguised_contradiction_or_a_forged_line_is_left_out_where_undisguised_words_would_be_read() -> None:
    for name in ("contradict_in_disguise", "forge_a_line"):
        pairs = [(case, m) for case, m in generated(name) if m.policy == "omit"]
        assert pairs, name
        assert all(topic_of(case, m) is not None for case, m in pairs), name
    # the disguise is all that differs: in plain words the sentence touches its fact by its words
    case, m = next((c, m) for c, m in generated("contradict_in_disguise") if m.target.endswith("look_alike@omit"))
    plain = m.sentence.translate(str.maketrans("\u0435\u0430\u043e", "eao"))
    assert topic_of(case, narrative_mutant(case, "probe", "probe", plain, "omit")) not in (None, m.sentence)
