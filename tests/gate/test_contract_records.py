"""The fact contract on lossgate records: typed values, provenance over valid sources, every code."""

from __future__ import annotations

from typing import Any

import pytest

from lossgate.gate.casefile import GateCase
from lossgate.gate.contract import check_contract
from tests.support.gate import case, claims_of, codes, ev, fact, gate, gate_case, usd, with_artifact

T0 = "2026-03-14T09:00:00+00:00"


def base() -> GateCase:
    return gate_case(
        case(
            "records",
            "records",
            [],
            [
                ev(
                    "e-1", T0, "You may refund up to $50 after supervisor review. Do not contact the customer by phone."
                ),
                ev("e-2", T0, "Again: up to $50 after supervisor review."),
                ev("e-gone", T0, "", state="deleted"),
            ],
            [
                fact(
                    "f-refund",
                    "refund.limit",
                    usd("50"),
                    ["e-1", "e-2", "e-gone"],
                    qualifiers={"condition": "after supervisor review"},
                ),
                fact("f-phone", "contact.allowed", False, ["e-1"], qualifiers={"channel": "phone"}),
                fact("f-seats", "subscription.seats", 25, ["e-1"]),
                fact("f-wait", "response.max_wait", "PT30M", ["e-1"]),
                fact("f-old", "subscription.plan", "team", ["e-1"], status="superseded"),
                fact("f-del", "contact.home_address", None, ["e-gone"], status="deleted"),
                fact("f-rev", "timezone", "UTC+01:00", ["e-1"], status="revoked"),
            ],
            "You may refund up to $50 after supervisor review. Do not contact the customer by phone.",
        )
    )


def edit(c: GateCase, fact_id: str, **change: Any) -> GateCase:
    claims = claims_of(c)
    for claim in claims:
        if claim["fact_id"] == fact_id:
            claim.update(change)
    return with_artifact(c, claims=claims)


def test_the_correct_artifact_is_clean() -> None:
    result = gate(base())
    assert result.outcome == "clean", result


def test_provenance_is_every_valid_source() -> None:
    c = base()
    (refund,) = [x for x in c.document["artifact"]["claims"] if x["fact_id"] == "f-refund"]
    assert refund["derived_from"] == ["e-1", "e-2"]  # the deleted source is not required (nor allowed)
    result = gate(edit(c, "f-refund", derived_from=["e-1"]))
    assert result.lines() == ["f-refund:provenance_missing"]
    assert "e-2" in result.violations[0].detail
    assert gate(edit(c, "f-refund", derived_from=["f-refund", "e-2", "e-1"])).outcome == "clean"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({"currency": "USD", "amount": "50.00"}, True),  # key order and trailing zeros do not matter
        ({"amount": 50, "currency": "USD"}, True),
        ({"amount": "50.01", "currency": "USD"}, False),
        ({"amount": "50", "currency": "EUR"}, False),
        ("50 USD", False),
        (50, False),
    ],
)
def test_money_compares_as_amount_and_currency(value: object, ok: bool) -> None:
    result = gate(edit(base(), "f-refund", value=value), prose=False)
    assert result.lines() == ([] if ok else ["f-refund:value_changed"])


@pytest.mark.parametrize(
    ("fact_id", "value", "detail"),
    [
        ("f-phone", "false", 'bool false -> string "false" (the type changed)'),
        ("f-phone", 0, "bool false -> int 0 (the type changed)"),
        ("f-seats", True, "int 25 -> bool true (the type changed)"),
        ("f-seats", "25", 'int 25 -> string "25" (the type changed)'),
        ("f-wait", 1800, 'duration "PT30M" -> int 1800 (the type changed)'),
    ],
)
def test_typed_values_keep_their_type(fact_id: str, value: object, detail: str) -> None:
    result = gate(edit(base(), fact_id, value=value), prose=False)
    assert result.lines() == [f"{fact_id}:value_changed"]
    assert result.violations[0].detail == detail  # both values, each with its type


@pytest.mark.parametrize(
    ("fact_id", "value", "detail"),
    [
        ("f-phone", True, "false -> true (bool)"),
        ("f-seats", 26, "25 -> 26 (int)"),
        ("f-wait", "PT31M", '"PT30M" -> "PT31M" (duration)'),
        ("f-refund", {"amount": "50.01", "currency": "USD"}, "50 USD -> 50.01 USD (money)"),
        ("f-refund", {"amount": "50", "currency": "EUR"}, "50 USD -> 50 EUR (money)"),
    ],
)
def test_a_changed_value_of_the_same_type_shows_both_values(fact_id: str, value: object, detail: str) -> None:
    result = gate(edit(base(), fact_id, value=value), prose=False)
    assert result.lines() == [f"{fact_id}:value_changed"]
    assert result.violations[0].detail == detail


def test_value_type_itself_is_compared() -> None:
    result = gate(edit(base(), "f-seats", value="25", value_type="string"), prose=False)
    assert result.lines() == ["f-seats:value_changed"]
    assert gate(edit(base(), "f-wait", value="PT1800S"), prose=False).outcome == "clean"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"tenant_id": "other"}, "tenant_changed"),
        ({"subject_id": "user-71"}, "subject_changed"),
        ({"predicate": "contact.email", "value_type": "bool"}, "predicate_changed"),
        ({"polarity": "negative"}, "polarity_flipped"),
        ({"qualifiers": {"channel": "email"}}, "qualifiers_changed"),
        ({"modality": "speculative"}, "modality_changed"),
        ({"authority": "system"}, "authority_changed"),
    ],
)
def test_each_field_has_its_code(change: dict[str, Any], code: str) -> None:
    result = gate(edit(base(), "f-phone", **change), prose=False)
    assert f"f-phone:{code}" in result.lines()


@pytest.mark.parametrize(
    ("fact_id", "predicate", "value", "line"),
    [
        ("f-old", "subscription.plan", "team", "f-old:forbidden_superseded_fact"),
        ("f-del", "contact.home_address", "1 Main St", "f-del:forbidden_deleted_fact"),
        ("f-rev", "timezone", "UTC+01:00", "f-rev:forbidden_revoked_fact"),
        ("f-new", "timezone", "UTC+01:00", "f-new:unsupported_fact"),
    ],
)
def test_retired_and_unknown_facts_are_forbidden(fact_id: str, predicate: str, value: object, line: str) -> None:
    c = base()
    claims = claims_of(c) + [{"fact_id": fact_id, "predicate": predicate, "value": value, "derived_from": ["e-1"]}]
    assert line in gate(with_artifact(c, claims=claims), prose=False).lines()


def test_missing_severity_follows_the_must_preserve_set() -> None:
    c = base()
    result = gate(with_artifact(c, claims=[x for x in claims_of(c) if x["fact_id"] != "f-seats"]), prose=False)
    assert result.lines() == ["f-seats:missing"]  # an important predicate, but an exact number: hard


def test_duplicate_claims() -> None:
    c = base()
    claims = claims_of(c)
    claims.append(dict(claims[0], value={"amount": "500", "currency": "USD"}))
    assert gate(with_artifact(c, claims=claims), prose=False).lines() == [
        "f-refund:duplicate_fact_id",
        "f-refund:value_changed",
    ]


def test_artifact_for_another_subject() -> None:
    c = base()
    moved = with_artifact(c, subject_id="user-71")
    assert "artifact:subject_changed" in gate(moved, prose=False).lines()


def test_contract_adapter_is_unordered_but_complete() -> None:
    c = edit(base(), "f-phone", value=True, polarity="negative")
    found = {str(v) for v in check_contract(c.snapshot, c.artifact)}
    assert found == {"f-phone:value_changed", "f-phone:polarity_flipped"}
    assert codes(gate(c, prose=False)) == {"value_changed", "polarity_flipped"}


def test_a_missing_fact_and_a_flipped_polarity_show_what_the_ledger_holds() -> None:
    c = base()
    dropped = gate(with_artifact(c, claims=[x for x in claims_of(c) if x["fact_id"] != "f-seats"]), prose=False)
    (missing,) = [v for v in (*dropped.violations, *dropped.losses) if v.code == "missing"]
    assert missing.detail == "active fact (subscription.seats: 25) not in the artifact"
    flipped = gate(edit(base(), "f-phone", polarity="negative"), prose=False)
    (v,) = [v for v in flipped.violations if v.code == "polarity_flipped"]
    assert v.detail == "polarity differs: positive -> negative"
