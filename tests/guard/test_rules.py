"""Each guard rule kind against a ledger: what it refuses, what it lets through, and what a
malformed action or guard section gets."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossgate.errors import ConfigError, InvalidInput
from lossgate.guard import guard_action
from lossgate.guard.check import check_action
from lossgate.model.records import Conflict, Fact
from lossgate.model.registry import load_registry, parse_registry
from lossgate.model.values import coerce_value

REGISTRY = load_registry("examples/predicates.toml")
AT = datetime(2026, 3, 14, 9, tzinfo=UTC)


def fact(
    fact_id: str,
    predicate: str,
    value: Any,
    *,
    qualifiers: dict[str, str] | None = None,
    authority: str = "user",
    modality: str = "asserted",
    polarity: str = "positive",
    sources: tuple[str, ...] = ("e-1",),
) -> Fact:
    spec = REGISTRY.get(predicate)
    return Fact(
        tenant_id="acme",
        subject_id="u1",
        fact_id=fact_id,
        seq=1,
        predicate=predicate,
        registry_version=REGISTRY.version,
        value_type=spec.value_type,
        value=coerce_value(spec.value_type, value, enum_values=spec.enum_values),
        qualifiers=tuple(sorted((qualifiers or {}).items())),
        polarity=polarity,
        modality=modality,
        authority=authority,
        source_event_ids=sources,
        recorded_at=AT,
        content_hash="sha256:" + "0" * 64,
    )


ALLERGY = fact("allergy", "food.peanuts_allowed", False, qualifiers={"basis": "allergy"}, sources=("e-41",))
LIMIT = fact(
    "limit", "refund.limit", {"amount": "50", "currency": "USD"}, qualifiers={"condition": "after supervisor review"}
)
NO_PHONE = fact("no-phone", "contact.allowed", False, qualifiers={"channel": "phone"})
EMAIL = fact("email", "contact.allowed", True, qualifiers={"channel": "email"})
STAGING = fact("staging", "account.scope", "deploy", qualifiers={"environment": "staging only"})


def refused(
    action: dict[str, Any], *facts: Fact, conflicts: tuple[Conflict, ...] = (), low_trust: frozenset[str] = frozenset()
) -> list[tuple[str, str, str]]:
    refusals, _, _ = check_action(action, list(facts), list(conflicts), REGISTRY, low_trust=low_trust)
    return [(r.rule, r.kind, r.field) for r in refusals]


def meal(*ingredients: list[str]) -> dict[str, Any]:
    return {"items": [{"dish": f"dish {i}", "ingredients": list(x)} for i, x in enumerate(ingredients)]}


def test_an_ingredient_an_allergy_forbids_is_refused_naming_the_fact_and_its_source() -> None:
    result = guard_action(
        "acme", "u1", meal(["lettuce"], ["lime", "peanut dressing"]), [ALLERGY], [], REGISTRY, recall_id="rc-1"
    )
    assert not result.allowed and result.recall_id == "rc-1" and result.rules == ("meal-ingredients",)
    (r,) = result.refusals
    assert (r.rule, r.kind, r.field, r.value) == (
        "meal-ingredients",
        "excludes",
        "items[1].ingredients[1]",
        "peanut dressing",
    )
    assert (r.fact_id, r.predicate, r.fact_value, r.qualifiers, r.source_event_ids) == (
        "allergy",
        "food.peanuts_allowed",
        False,
        {"basis": "allergy"},
        ("e-41",),
    )
    assert "which food.peanuts_allowed: false (basis=allergy" in r.detail
    assert set(result.read) == {"allergy", "e-41"}  # what deleting would redact this result by


@pytest.mark.parametrize(
    "ingredient",
    [
        "Peanuts",
        "satay sauce",
        "groundnut oil",
        "PEANUT butter",
        "ｐｅａｎｕｔ",
        "ＰＥＡＮＵＴＳ",
        "ⓟⓔⓐⓝⓤⓣ",
        "peanutſ",
        {"peanut": True},
    ],
)
def test_the_registry_synonyms_name_the_forbidden_food(ingredient: Any) -> None:
    assert refused(meal([ingredient]), ALLERGY) == [("meal-ingredients", "excludes", "items[0].ingredients[0]")]


def test_a_corrected_order_is_allowed_and_a_true_flag_forbids_nothing() -> None:
    assert refused(meal(["lettuce", "sesame dressing"]), ALLERGY) == []
    assert refused(meal(["peanut dressing"]), fact("ok", "food.peanuts_allowed", True)) == []


def test_a_refund_within_the_limit_with_its_condition_met_is_allowed() -> None:
    ok = {"refund": {"amount": 40, "currency": "USD", "conditions_met": ["supervisor review done"]}}
    assert refused(ok, LIMIT) == []


@pytest.mark.parametrize(
    ("refund", "kinds"),
    [
        ({"amount": 60, "currency": "USD", "conditions_met": ["supervisor review"]}, ["at_most"]),
        ({"amount": Decimal("50.01"), "currency": "USD", "conditions_met": ["supervisor review"]}, ["at_most"]),
        ({"amount": 40, "currency": "EUR", "conditions_met": ["supervisor review"]}, ["at_most"]),
        ({"amount": 40, "currency": "USD"}, ["condition_unmet"]),
        ({"amount": 40, "currency": "USD", "conditions_met": ["manager said fine"]}, ["condition_unmet"]),
        ({"amount": 80, "currency": "USD", "conditions_met": []}, ["at_most", "condition_unmet"]),
        ({"amount": 40, "currency": "USD", "conditions_met": ["not after supervisor review"]}, ["condition_unmet"]),
        ({"amount": -5, "currency": "USD", "conditions_met": ["supervisor review"]}, ["at_most"]),
    ],
)
def test_a_refund_above_its_limit_in_another_currency_or_without_its_condition_is_refused(
    refund: dict[str, Any], kinds: list[str]
) -> None:
    assert [k for _, k, _ in refused({"refund": refund}, LIMIT)] == kinds


def test_an_untrusted_source_authorizes_nothing() -> None:
    loose = fact("loose", "refund.limit", {"amount": "5000", "currency": "USD"}, authority="untrusted")
    (r,) = guard_action("acme", "u1", {"refund": {"amount": 10, "currency": "USD"}}, [loose], [], REGISTRY).refusals
    assert r.kind == "at_most" and "untrusted" in r.detail and r.fact_id == "loose"
    tool = fact("tool", "account.scope", "deploy", qualifiers={"environment": "production"}, authority="tool")
    assert refused({"deploy": {"environment": "production"}}, STAGING, tool) == [
        ("deploy-environment", "permits", "deploy.environment")
    ]
    quoted = fact("quoted", "account.scope", "deploy", qualifiers={"environment": "production"}, modality="quoted")
    assert refused({"deploy": {"environment": "production"}}, quoted) != []
    # with no fact at all, nothing sets a limit: refused, not allowed by default
    assert [k for _, k, _ in refused({"refund": {"amount": 1, "currency": "USD"}})] == ["at_most"]
    # a user's fact that rests on a tool's event as well authorizes nothing either
    mixed = fact("mixed", "refund.limit", {"amount": "9000", "currency": "USD"}, sources=("e-user", "e-tool"))
    assert [
        k
        for _, k, _ in refused(
            {"refund": {"amount": 8000, "currency": "USD", "conditions_met": []}},
            mixed,
            low_trust=frozenset({"e-tool"}),
        )
    ] == ["at_most"]


def test_a_channel_the_subject_refused_is_refused_and_one_it_allows_is_not() -> None:
    assert refused({"message": {"channel": "phone", "text": "hi"}}, NO_PHONE, EMAIL) == [
        ("contact-channel", "excludes", "message.channel")
    ]
    assert refused({"message": {"channel": "email", "text": "hi"}}, NO_PHONE, EMAIL) == []
    # no channel named: contacting at all is forbidden
    assert refused({"message": {"channel": "sms"}}, fact("none", "contact.allowed", False)) != []


def test_a_deploy_only_where_a_trusted_fact_permits() -> None:
    assert refused({"deploy": {"environment": "staging"}}, STAGING) == []
    assert refused({"deploy": {"environment": " STAGING "}}, STAGING) == []
    for other in (
        "production",
        "staging-but-actually-production",
        "staging production",
        "not staging",
        "staging.evil.com",
        "production (staging)",
    ):
        assert refused({"deploy": {"environment": other}}, STAGING) == [
            ("deploy-environment", "permits", "deploy.environment")
        ], other
    tz = fact("tz", "timezone", "UTC+01:00")
    assert refused({"meeting": {"timezone": "utc+01:00"}}, tz) == []
    assert refused({"meeting": {"timezone": "UTC-08:00"}}, tz) != [] and refused({"meeting": {"timezone": "UTC+1"}}, tz)


def test_a_field_on_a_predicate_in_conflict_is_refused_with_both_sides() -> None:
    one = fact("tz-1", "timezone", "UTC+01:00")
    two = fact("tz-2", "timezone", "UTC+02:00")
    conflict = Conflict(
        tenant_id="acme",
        subject_id="u1",
        conflict_id="c-1",
        predicate="timezone",
        fact_ids=("tz-1", "tz-2"),
        detected_at=AT,
    )
    result = guard_action("acme", "u1", {"meeting": {"timezone": "UTC+01:00"}}, [one, two], [conflict], REGISTRY)
    (r,) = [r for r in result.refusals if r.kind == "in_conflict"]
    assert r.conflict_id == "c-1" and len(r.sides) == 2 and all("timezone" in s for s in r.sides)
    assert "UTC+01:00" in r.detail and "UTC+02:00" in r.detail
    # settled, the same meeting is allowed
    assert refused({"meeting": {"timezone": "UTC+01:00"}}, one) == []


def test_unknown_fields_are_ignored_and_a_malformed_action_is_a_typed_error() -> None:
    assert guard_action("acme", "u1", {"weather": "sunny", "dish": "satay"}, [ALLERGY], [], REGISTRY).allowed
    # a field a rule reads, in a shape the rule cannot follow, is malformed, never a silent pass
    for shape in (
        {"items": "peanuts"},
        {"items": {"ingredients": ["peanut"]}},
        {"items": [["peanut"]]},
        {"items": [{"dish": "salad"}]},
        {"items": [{"ingredients": None}]},
        {"refund": [{"amount": 500, "currency": "USD"}]},
        {"refund": "500 USD"},
        {"refund": {"currency": "USD"}},
        {"refund": {"amount": 5}},
        {"refund": {"amount": 5, "currency": None}},
        {"deploy": "production"},
        {"deploy": {"environment": None}},
    ):
        with pytest.raises(InvalidInput, match="action field"):
            guard_action("acme", "u1", shape, [ALLERGY, LIMIT, STAGING], [], REGISTRY)
    for bad in ([], "order", 3, None):
        with pytest.raises(InvalidInput, match="JSON object"):
            guard_action("acme", "u1", bad, [], [], REGISTRY)
    with pytest.raises(InvalidInput, match="refund.amount: expected a number"):
        guard_action("acme", "u1", {"refund": {"amount": "forty", "currency": "USD"}}, [LIMIT], [], REGISTRY)
    with pytest.raises(InvalidInput, match="refund.amount: expected a number"):
        guard_action("acme", "u1", {"refund": {"amount": True, "currency": "USD"}}, [LIMIT], [], REGISTRY)
    with pytest.raises(InvalidInput):
        guard_action("acme", "u1", {"text": "a\x00b"}, [], [], REGISTRY)


def _registry(guards: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": 1,
        "predicates": {
            "refund.limit": {"type": "money", "qualifiers": ["condition"]},
            "food.peanuts_allowed": {"type": "bool"},
        },
        "guards": guards,
    }


@pytest.mark.parametrize(
    ("guards", "message"),
    [
        ({"name": "x"}, "expected a list"),
        ([{"name": "x", "kind": "forbids", "field": "a", "predicates": ["refund.limit"]}], "kind"),
        ([{"name": "x", "kind": "excludes", "field": "a..b", "predicates": ["refund.limit"]}], "field"),
        ([{"name": "x", "kind": "excludes", "field": "a", "predicates": []}], "predicates"),
        ([{"name": "x", "kind": "excludes", "field": "a", "predicates": ["nothing.*"]}], "no predicate"),
        ([{"name": "x", "kind": "at_most", "field": "a", "predicates": ["food.*"]}], "at_most reads numbers"),
        (
            [{"name": "x", "kind": "excludes", "field": "a", "predicates": ["food.*"], "qualifier": "channel"}],
            "qualifier",
        ),
        ([{"name": "x", "kind": "excludes", "field": "a", "predicates": ["food.*"], "colour": "red"}], "colour"),
        (
            [
                {"name": "x", "kind": "excludes", "field": "a", "predicates": ["food.*"]},
                {"name": "x", "kind": "excludes", "field": "b", "predicates": ["food.*"]},
            ],
            "second guard",
        ),
    ],
)
def test_a_malformed_guard_section_is_a_config_error(guards: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_registry(_registry(guards))


def test_guards_are_part_of_the_registry_document_and_absent_ones_keep_its_hash() -> None:
    plain = parse_registry(_registry([]))
    assert "guards" not in plain.document()
    assert parse_registry(plain.document()) == plain
    assert parse_registry(REGISTRY.document()) == REGISTRY


_SAFE_WORDS = st.sampled_from(["lettuce", "rice", "lime", "tofu", "sesame", "basil", "tomato", "olive oil"])


@settings(max_examples=150)
@given(
    dishes=st.lists(st.lists(_SAFE_WORDS, max_size=5), max_size=5),
    amount=st.decimals(min_value=0, max_value=50, places=2, allow_nan=False, allow_infinity=False),
    channel=st.just("email"),
    environment=st.just("staging"),
)
def test_an_action_built_only_from_values_the_ledger_allows_is_never_refused(
    dishes: list[list[str]], amount: Decimal, channel: str, environment: str
) -> None:
    action = {
        **meal(*dishes),
        "refund": {"amount": amount, "currency": "USD", "conditions_met": ["after supervisor review"]},
        "message": {"channel": channel},
        "deploy": {"environment": environment},
    }
    assert refused(action, ALLERGY, LIMIT, NO_PHONE, EMAIL, STAGING) == []
