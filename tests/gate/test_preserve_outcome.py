"""The must-preserve set, loss severities and the three outcomes."""

from __future__ import annotations

import json

from lossgate.gate import CODES, GateResult, MustPreserve, Violation, build_must_preserve
from lossgate.gate.casefile import load_case
from lossgate.gate.outcome import make_result
from tests.support.gate import CASES, case, claims_of, ev, fact, gate, gate_case, usd, with_artifact

T0 = "2026-03-14T09:00:00+00:00"


def mixed():
    return gate_case(
        case(
            "mixed",
            "mixed",
            [],
            [ev("e-1", T0, "Notes.")],
            [
                fact("crit", "customer.company", "Acme Corp", ["e-1"]),
                fact("tz", "timezone", "UTC+01:00", ["e-1"]),  # important, plain string
                fact("seats", "subscription.seats", 25, ["e-1"]),  # important, exact number
                fact("when", "meeting.starts_at", "2026-04-02T15:00:00+02:00", ["e-1"]),
                fact("neg", "contact.allowed", False, ["e-1"], qualifiers={"channel": "phone"}),
                fact("neg2", "agent.instruction", "share invoices", ["e-1"], polarity="negative"),
                fact("ident", "customer.id", "cust-1", ["e-1"]),
                fact("perm", "refund.limit", usd("50"), ["e-1"]),
                fact("task", "followup.task", "call back", ["e-1"]),
                fact("topic", "chat.topic", "weather", ["e-1"]),  # contextual
                fact("old", "timezone", "UTC-05:00", ["e-1"], status="superseded"),
                fact("a", "project.status", "active", ["e-1"], qualifiers={"project": "X"}),
                fact("b", "project.status", "blocked", ["e-1"], qualifiers={"project": "X"}),
            ],
            "Notes.",
            conflicts=[{"conflict_id": "c-1", "predicate": "project.status", "fact_ids": ["a", "b"]}],
        )
    )


def test_must_preserve_reasons(registry) -> None:
    c = mixed()
    must = build_must_preserve(c.snapshot, registry)
    assert "old" not in must.fact_ids()
    assert "topic" not in must.fact_ids()
    assert must.reasons("seats") == ("important", "exact_number")
    assert must.reasons("when") == ("important", "temporal")
    assert must.reasons("neg") == ("critical", "negation", "permission")
    assert "negation" in must.reasons("neg2")
    assert must.reasons("ident") == ("critical", "identifier")
    assert must.reasons("perm") == ("critical", "exact_number", "permission")
    assert must.reasons("task") == ("critical", "open_item")
    assert must.reasons("a") == ("important", "conflict")
    assert must.conflicts == ("c-1",)
    assert [must.loss_severity(f) for f in ("crit", "tz", "seats", "topic")] == [
        "critical",
        "important",
        "critical",
        "contextual",
    ]


def test_unknown_predicate_fails_safe(registry) -> None:
    c = mixed()
    snap = c.snapshot.model_copy(
        update={
            "facts": tuple(
                f.model_copy(update={"predicate": "no.such"}) if f.fact_id == "tz" else f for f in c.snapshot.facts
            )
        }
    )
    assert build_must_preserve(snap, registry).loss_severity("tz") == "critical"


def test_outcomes_clean_acceptable_failed() -> None:
    c = mixed()
    assert gate(c, prose=False).outcome == "clean"
    keep = [x for x in claims_of(c) if x["fact_id"] not in ("tz", "topic")]
    acceptable = gate(with_artifact(c, claims=keep), prose=False)
    assert acceptable.outcome == "acceptable" and acceptable.passed
    assert acceptable.violations == ()
    assert [(str(v), v.severity) for v in acceptable.losses] == [
        ("topic:missing", "contextual"),
        ("tz:missing", "important"),
    ]
    keep = [x for x in claims_of(c) if x["fact_id"] not in ("tz", "seats")]
    failed = gate(with_artifact(c, claims=keep), prose=False)
    assert failed.outcome == "failed" and not failed.passed
    assert failed.lines() == ["seats:missing"] and [str(v) for v in failed.losses] == ["tz:missing"]


def test_result_is_typed_and_serialisable() -> None:
    result = gate(load_case(CASES / "reference-peanut-allergy.json"))
    doc = json.loads(result.model_dump_json())
    assert doc["outcome"] == "clean"
    assert doc["must_preserve"]["critical"] == ["fact-allergy-1"]
    assert GateResult.model_validate(doc) == result


def test_make_result_dedupes_orders_and_keeps_the_worst_severity() -> None:
    v = lambda code, subject, sev="critical": Violation(code=code, subject=subject, severity=sev)  # noqa: E731
    found = [
        v("atom_missing", "x", "important"),
        v("missing", "b"),
        v("atom_missing", "x", "critical"),
        v("duplicate_fact_id", "b"),
        v("missing", "a", "contextual"),
        v("missing", "b"),
    ]
    result = make_result(found, MustPreserve())
    assert result.lines() == ["b:duplicate_fact_id", "b:missing", "x:atom_missing"]
    assert [str(x) for x in result.losses] == ["a:missing"]
    assert make_result(list(reversed(found)), MustPreserve()) == result


def test_every_code_has_a_severity() -> None:
    assert CODES["atom_missing"] == "important"
    assert {s for c, s in CODES.items() if c != "atom_missing"} == {"critical"}
    assert len(CODES) == 30  # the contract, records, markers, prose diff, fence and read-back codes
