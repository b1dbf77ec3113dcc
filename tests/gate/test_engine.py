"""The public entry point on the reference cases as records, determinism and speed."""

from __future__ import annotations

import random
import time

import pytest

import lossgate.gate as gate_pkg
from lossgate.gate import check
from lossgate.gate.casefile import load_case
from lossgate.gate.contract import check_contract
from tests.support.gate import CASES, claims_of, gate, with_artifact


def test_public_signature() -> None:
    c = load_case(CASES / "reference-peanut-allergy.json")
    result = gate_pkg.check(c.snapshot, c.artifact, c.registry)
    assert result.outcome == "clean" and result.passed and result.lines() == []


def test_timezone_supersession_as_records() -> None:
    c = load_case(CASES / "reference-timezone-change.json")
    assert gate(c).outcome == "clean"
    old = {"fact_id": "timezone-v1", "predicate": "timezone", "value": "UTC-05:00", "derived_from": ["event-10"]}
    resurrected = gate(with_artifact(c, claims=claims_of(c) + [old]))
    assert resurrected.lines() == ["timezone-v1:forbidden_superseded_fact"]
    stale_prose = gate(with_artifact(c, summary="User's timezone is UTC+01:00 (previously UTC-05:00)."))
    line, unmarked = stale_prose.lines()  # however the extractor labels a UTC offset
    assert "05:00" in line and line.endswith(":atom_added") and unmarked == "timezone-v1:superseded_unmarked"


@pytest.mark.parametrize("name", ["temporal-seat-count", "temporal-meeting-moved", "temporal-address-change"])
def test_a_quote_of_a_retired_values_source_passes_marked_and_fails_unmarked(name: str) -> None:
    from lossgate.gate.prose import structured_lines
    from lossgate.gate.superseded import mark, retired_values
    from lossgate.model.wording import event_line

    c = load_case(CASES / f"{name}.json")
    retired = retired_values(c.snapshot.facts, c.snapshot.conflicts)
    old = {e for f in c.snapshot.facts if f.status == "superseded" for e in f.source_event_ids}
    (said,) = [event_line(e) for e in c.snapshot.events if e.event_id in old]
    quoting = c.artifact.model_copy(update={"summary": f"{c.artifact.summary}\nConversation:\n{said}"})
    unmarked = check(c.snapshot, quoting, c.registry, retired=retired)
    assert unmarked.outcome == "failed" and "superseded_unmarked" in {v.code for v in unmarked.violations}
    # history, with what holds now beside it: the old value is no stale statement
    marked = quoting.model_copy(update={"summary": mark(quoting.summary, retired, structured_lines(quoting))})
    assert marked.summary != quoting.summary
    assert check(c.snapshot, marked, c.registry, retired=retired).passed, check(
        c.snapshot, marked, c.registry, retired=retired
    ).lines()
    # the marker moved to another line does not vouch for it
    lines = marked.summary.split("\n")
    moved = "\n".join([lines[0] + lines[-1][len(said) :], *lines[1:-1], said])
    assert not check(c.snapshot, quoting.model_copy(update={"summary": moved}), c.registry, retired=retired).passed


def test_invoice_call_keeps_all_fourteen_facts() -> None:
    c = load_case(CASES / "reference-invoice-call.json")
    result = gate(c)
    assert result.outcome == "clean"
    assert len(result.must_preserve.fact_ids()) == 14
    fluent = (
        "Acme Corp disputed an invoice for engineering work that was not authorized by their CTO. The agent "
        "agreed to issue a credit memo for the disputed amount, and the customer agreed to pay the remainder "
        "within a week. The credit memo was created successfully."
    )
    naive = gate(
        with_artifact(c, claims=[x for x in claims_of(c) if x["fact_id"] == "f-company"], open_items=[], summary=fluent)
    )
    assert naive.outcome == "failed"
    missing = {v.subject for v in naive.violations if v.code == "missing"}
    assert len(missing) == 13  # ten of fourteen gone from the prose, every one from the claims


def test_deletion_stays_deleted() -> None:
    c = load_case(CASES / "reference-deletion.json")
    assert gate(c).outcome == "clean"
    back = gate(with_artifact(c, summary=c.artifact.summary + " Home: 12 Elm Street, Springfield."))
    assert back.outcome == "failed" and {v.code for v in back.violations} == {"atom_added"}


def test_same_inputs_same_result_in_any_order() -> None:
    c = load_case(CASES / "reference-invoice-call.json")
    first = gate(c)
    rng = random.Random(7)
    for _ in range(5):
        claims = claims_of(c)
        rng.shuffle(claims)
        events = list(c.snapshot.events)
        facts = list(c.snapshot.facts)
        rng.shuffle(facts)
        snap = c.snapshot.model_copy(update={"events": tuple(events), "facts": tuple(facts)})
        again = with_artifact(c, claims=claims)
        assert check(snap, again.artifact, c.registry) == first


def test_contract_over_1000_facts_is_fast(registry) -> None:
    from bench.bench_gate import build_workload  # the benchmark's own workload

    snapshot, artifact, _ = build_workload(facts=1000, words=0)
    check_contract(snapshot, artifact)  # warm up
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        found = check_contract(snapshot, artifact)
        runs.append(time.perf_counter() - start)
    per_run = min(runs)  # the best of five: a loaded machine delays some runs, never speeds one up
    assert found == []
    assert per_run < 0.2, f"contract took {per_run * 1000:.1f} ms for 1,000 facts"  # target 20 ms; CI slack


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.glob("*.json")))
def test_every_shipped_case_passes_its_own_gate(name: str) -> None:
    assert gate(load_case(CASES / name)).passed
