"""The fact contract on its fixture format (``fact-contract``): the reference examples, then every code."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from lossgate.gate import CompressedFact, CompressionArtifact, ExpectedFact, contract_result, validate_artifact

ALLERGY = ExpectedFact(
    fact_id="fact-allergy-1",
    tenant_id="travel-co",
    subject_id="user-17",
    predicate="food.peanuts_allowed",
    value=False,
    qualifiers=(("basis", "allergy"), ("severity", "critical")),
    source_event_id="event-41",
    status="active",
)


def correct_allergy_artifact() -> CompressionArtifact:
    fact = CompressedFact(
        fact_id=ALLERGY.fact_id,
        tenant_id=ALLERGY.tenant_id,
        subject_id=ALLERGY.subject_id,
        predicate=ALLERGY.predicate,
        value=ALLERGY.value,
        qualifiers=ALLERGY.qualifiers,
        source_event_ids=(ALLERGY.source_event_id,),  # type: ignore[arg-type]
    )
    return CompressionArtifact(
        memory_version=8,
        tenant_id="travel-co",
        subject_id="user-17",
        facts=(fact,),
        summary="User has a critical peanut allergy.",
    )


def test_correct_artifact_satisfies_the_contract() -> None:
    assert validate_artifact((ALLERGY,), correct_allergy_artifact()) == []
    assert contract_result((ALLERGY,), correct_allergy_artifact()).outcome == "clean"


@pytest.mark.parametrize(
    ("changed_fact", "expected_violation"),
    [
        (replace(correct_allergy_artifact().facts[0], value=True), "fact-allergy-1:value_changed"),
        (replace(correct_allergy_artifact().facts[0], qualifiers=()), "fact-allergy-1:qualifiers_changed"),
        (replace(correct_allergy_artifact().facts[0], subject_id="user-22"), "fact-allergy-1:subject_changed"),
        (replace(correct_allergy_artifact().facts[0], source_event_ids=()), "fact-allergy-1:provenance_missing"),
    ],
    ids=["negation", "qualifier", "identity", "provenance"],
)
def test_critical_fact_mutations_are_named(changed_fact: CompressedFact, expected_violation: str) -> None:
    artifact = replace(correct_allergy_artifact(), facts=(changed_fact,))

    violations = validate_artifact((ALLERGY,), artifact)

    assert expected_violation in violations
    assert violations == [expected_violation]  # and nothing else: each mutation has one name


def test_superseded_value_does_not_survive_compression() -> None:
    old = ExpectedFact("timezone-v1", "calendar", "user-17", "timezone", "UTC-05:00", (), "event-10", "superseded")
    current = ExpectedFact("timezone-v2", "calendar", "user-17", "timezone", "UTC+01:00", (), "event-72", "active")
    artifact = CompressionArtifact(
        memory_version=12,
        tenant_id="calendar",
        subject_id="user-17",
        facts=(
            CompressedFact("timezone-v1", "calendar", "user-17", "timezone", "UTC-05:00", (), ("event-10",)),
            CompressedFact("timezone-v2", "calendar", "user-17", "timezone", "UTC+01:00", (), ("event-72",)),
        ),
        summary="User's current timezone is UTC+01:00.",
    )

    violations = validate_artifact((old, current), artifact)

    assert violations == ["timezone-v1:forbidden_superseded_fact"]


def _one(value: object, observed: object, **expected_kw: object) -> list[str]:
    expected = replace(ALLERGY, value=value, **expected_kw)  # type: ignore[arg-type]
    art = correct_allergy_artifact()
    return validate_artifact((expected,), replace(art, facts=(replace(art.facts[0], value=observed),)))


@pytest.mark.parametrize(
    ("expected", "observed"),
    [
        (False, "false"),  # a bool is not its spelling
        (False, 0),  # nor an int
        (1, True),  # and an int is not a bool
        (50, Decimal("50.0")),  # 50 is not 50.0 (JSON floats parse as Decimal)
        (50, 50.0),
        ({"ok": True}, {"ok": 1}),  # types count inside objects too
        (["a", "b"], ["b", "a"]),  # arrays are ordered
        (None, "null"),
    ],
    ids=[
        "bool-vs-string",
        "bool-vs-int",
        "int-vs-bool",
        "int-vs-decimal",
        "int-vs-float",
        "nested",
        "array-order",
        "null-vs-string",
    ],
)
def test_values_compare_by_json_type_and_content(expected: object, observed: object) -> None:
    assert _one(expected, observed) == ["fact-allergy-1:value_changed"]


def test_equal_values_pass_whatever_the_key_order() -> None:
    assert _one({"amount": "14250", "currency": "USD"}, {"currency": "USD", "amount": "14250"}) == []
    assert _one(Decimal("1.10"), Decimal("1.1")) == []


def test_value_changed_shows_both_values_with_their_types() -> None:
    art = correct_allergy_artifact()
    result = contract_result((ALLERGY,), replace(art, facts=(replace(art.facts[0], value="false"),)))
    (v,) = result.violations
    assert v.detail == 'bool false -> string "false" (the type changed)'
    assert v.expected == "bool false" and v.observed == 'string "false"'
    assert v.severity == "critical"


def test_declared_value_type_compares_typed_values() -> None:
    money = replace(
        ALLERGY,
        predicate="refund.limit",
        value={"amount": "50.00", "currency": "USD"},
        value_type="money",
        qualifiers=(),
    )
    art = correct_allergy_artifact()

    def observed(value: object) -> list[str]:
        fact = replace(art.facts[0], predicate="refund.limit", value=value, qualifiers=())
        return validate_artifact((money,), replace(art, facts=(fact,)))

    assert observed({"currency": "USD", "amount": "50"}) == []
    assert observed({"currency": "USD", "amount": 50}) == []
    assert observed({"currency": "EUR", "amount": "50"}) == ["fact-allergy-1:value_changed"]
    assert observed({"currency": "USD", "amount": "50.01"}) == ["fact-allergy-1:value_changed"]
    assert observed("50 USD") == ["fact-allergy-1:value_changed"]


def test_qualifiers_are_order_insensitive_and_content_exact() -> None:
    art = correct_allergy_artifact()
    swapped = replace(art.facts[0], qualifiers=(("severity", "critical"), ("basis", "allergy")))
    assert validate_artifact((ALLERGY,), replace(art, facts=(swapped,))) == []
    changed = replace(art.facts[0], qualifiers=(("basis", "allergy"), ("severity", "Critical")))
    result = contract_result((ALLERGY,), replace(art, facts=(changed,)))
    assert result.lines() == ["fact-allergy-1:qualifiers_changed"]
    assert "severity: 'critical' -> 'Critical'" in result.violations[0].detail


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"tenant_id": "other-co"}, "fact-allergy-1:tenant_changed"),
        ({"predicate": "food.preference"}, "fact-allergy-1:predicate_changed"),
        ({"polarity": "negative"}, "fact-allergy-1:polarity_flipped"),
        ({"fact_id": "fact-allergy-2"}, "fact-allergy-2:unsupported_fact"),
    ],
)
def test_each_contract_code(change: dict[str, object], line: str) -> None:
    art = correct_allergy_artifact()
    violations = validate_artifact((ALLERGY,), replace(art, facts=(replace(art.facts[0], **change),)))
    assert line in violations


def test_missing_and_forbidden_statuses() -> None:
    art = correct_allergy_artifact()
    assert validate_artifact((ALLERGY,), replace(art, facts=())) == ["fact-allergy-1:missing"]
    for status in ("deleted", "revoked", "superseded"):
        assert validate_artifact((replace(ALLERGY, status=status),), art) == [f"fact-allergy-1:forbidden_{status}_fact"]
        assert validate_artifact((replace(ALLERGY, status=status),), replace(art, facts=())) == []


def test_duplicate_fact_ids_are_named_and_every_copy_is_checked() -> None:
    art = correct_allergy_artifact()
    bad_copy = replace(art.facts[0], value=True)
    violations = validate_artifact((ALLERGY,), replace(art, facts=(art.facts[0], bad_copy)))
    assert violations == ["fact-allergy-1:duplicate_fact_id", "fact-allergy-1:value_changed"]


def test_artifact_header_for_another_subject() -> None:
    art = replace(correct_allergy_artifact(), subject_id="user-22")
    assert validate_artifact((ALLERGY,), art) == ["artifact:subject_changed"]


def test_output_order_is_stable_under_reordering() -> None:
    a = ExpectedFact("a", "t", "s", "p.a", 1, (), "e1", "active")
    b = ExpectedFact("b", "t", "s", "p.b", 2, (), "e2", "active")
    art = CompressionArtifact(1, "t", "s", (CompressedFact("b", "t", "s", "p.b", 3, (), ()),), "")
    first = validate_artifact((a, b), art)
    assert first == ["a:missing", "b:value_changed", "b:provenance_missing"]
    assert validate_artifact((b, a), art) == first


def test_multiple_sources_extension() -> None:
    two = replace(ALLERGY, source_event_id=("event-41", "event-43"))
    art = correct_allergy_artifact()
    assert validate_artifact((two,), art) == ["fact-allergy-1:provenance_missing"]
    both = replace(art.facts[0], source_event_ids=("event-43", "event-41"))
    assert validate_artifact((two,), replace(art, facts=(both,))) == []
