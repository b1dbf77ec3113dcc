"""The starter registry, registries extended on top of it, and the short path for chat
messages (``Memory.add``, ``Memory.search``), on every store."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import pytest

import lossgate
from lossgate import Money, NewEvent, NewFact
from lossgate.errors import IdempotencyConflict, InvalidInput, RegistryConflict, TenantNotBound
from lossgate.extract import Candidate, ExtractionError
from lossgate.model.records import Event
from lossgate.model.registry import Registry, load_registry
from lossgate.model.starter import is_starter, starter_registry
from tests.support import REGISTRY_PATH

T, S = "travel-co", "user-17"


@pytest.fixture
def fresh(store_url: str):
    """A memory on a store that has no registry yet, as ``lossgate.open`` makes it, bound to ``T``."""
    mem = lossgate.open(store_url, tenant=T)
    yield mem
    mem.close()


def _stored_versions(memory: lossgate.Memory) -> list[int]:
    with memory.store.read() as tx:
        latest = tx.latest_registry_version()
        return [v for v in range(1, (latest or 0) + 1) if tx.registry_document(v) is not None]


# -- the starter registry -------------------------------------------------------------------


def test_the_starter_registry_is_stored_when_an_operation_first_needs_one(fresh):
    assert fresh.admin.registry is None  # opening stores nothing
    fresh.append([NewEvent(tenant_id=T, subject_id=S, event_id="e1", text="I am allergic to peanuts.")])
    assert fresh.admin.registry is None  # an append of events needs no registry
    fact = fresh.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="f1",
            predicate="food.peanuts_allowed",
            value=False,
            qualifiers={"basis": "allergy"},
            source_event_ids=["e1"],
        )
    )
    assert fact.status == "active"
    assert fresh.admin.registry == starter_registry() and is_starter(fresh.admin.registry.document())
    assert _stored_versions(fresh) == [1]


def test_a_registry_loaded_before_any_need_is_the_one_used(fresh):
    fresh.admin.load_predicates(REGISTRY_PATH)
    fresh.add(S, ["Our invoice total is $99.00."])
    fresh.consolidate(T, S)
    assert fresh.admin.registry == load_registry(REGISTRY_PATH) and _stored_versions(fresh) == [1]


def test_a_store_that_has_a_registry_keeps_it(store_url):
    with lossgate.open(store_url, starter=False) as first:
        first.admin.load_predicates(REGISTRY_PATH)
    with lossgate.open(store_url, tenant=T) as again:
        again.add(S, ["Peanuts are fine, I am not allergic."])
        assert again.consolidate(T, S).status == "published"
        assert again.admin.registry == load_registry(REGISTRY_PATH)


def test_without_the_starter_a_store_with_no_registry_refuses_facts(store_url):
    with lossgate.open(store_url, starter=False, tenant=T) as memory:
        memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="e1", text="I am allergic to peanuts.")])
        with pytest.raises(InvalidInput, match="no predicate registry is loaded"):
            memory.assert_fact(
                NewFact(
                    tenant_id=T, subject_id=S, predicate="food.peanuts_allowed", value=False, source_event_ids=["e1"]
                )
            )
        with pytest.raises(InvalidInput, match="no predicate registry is loaded"):
            memory.add(S, ["My visa deadline is 2026-05-01."])
        assert memory.admin.registry is None


def test_a_second_memory_finds_the_starter_another_one_stored(store_url):
    with lossgate.open(store_url) as one, lossgate.open(store_url) as two:
        assert two.admin.registry is None  # its cache holds nothing yet
        one.append([NewEvent(tenant_id=T, subject_id=S, event_id="e1", text="Call me Dana.")])
        one.assert_fact(
            NewFact(tenant_id=T, subject_id=S, predicate="person.preferred_name", value="Dana", source_event_ids=["e1"])
        )
        two.assert_fact(
            NewFact(tenant_id=T, subject_id=S, predicate="language", value="English", source_event_ids=["e1"])
        )
        assert _stored_versions(two) == [1] and {f.predicate for f in two.facts(T, S)} == {
            "person.preferred_name",
            "language",
        }


def test_another_version_1_over_the_starter_is_refused_with_how_to_extend_it(fresh):
    fresh.tenant(T)  # nothing stored by making a view either
    fresh.guard(T, S, {"message": {"channel": "sms"}})  # a guard needs the registry: the starter is stored
    with pytest.raises(
        IdempotencyConflict,
        match=r"starter registry\); to add predicates to the starter "
        r"registry, extend it \(memory.admin.extend_predicates",
    ):
        fresh.admin.load_predicates(REGISTRY_PATH)
    newer = load_registry(REGISTRY_PATH).model_copy(update={"version": 2})
    with pytest.raises(InvalidInput, match="drops account.id.*extend it"):
        fresh.admin.load_predicates(newer)
    assert _stored_versions(fresh) == [1]


# -- extending the stored registry ---------------------------------------------------------------

MINE = {
    "predicates": {
        "travel.seat_preference": {
            "type": "enum",
            "enum_values": ["aisle", "window", "middle"],
            "criticality": "contextual",
            "category": "preference",
            "owner": "travel",
        },
        "loyalty.tier": {"type": "string", "cues": [], "owner": "travel"},
    },
    "guards": [
        {"name": "seat-choice", "kind": "permits", "field": "booking.seat", "predicates": ["travel.seat_preference"]}
    ],
}


def test_an_extension_adds_to_the_starter_as_the_next_version_and_again_changes_nothing(fresh):
    extended = fresh.admin.extend_predicates(MINE)  # a store with none: the starter first, then the extension
    assert _stored_versions(fresh) == [1, 2] and extended.version == 2
    assert set(extended.predicates) == set(starter_registry().predicates) | {"travel.seat_preference", "loyalty.tier"}
    assert [g.name for g in extended.guards] == [g.name for g in starter_registry().guards] + ["seat-choice"]
    assert all(extended.predicates[n] == p for n, p in starter_registry().predicates.items())
    assert fresh.admin.extend_predicates(MINE) == extended and _stored_versions(fresh) == [1, 2]  # the same again
    fresh.append([NewEvent(tenant_id=T, subject_id=S, event_id="e1", text="Aisle, please. No calls.")])
    fresh.assert_facts(
        [
            NewFact(
                tenant_id=T, subject_id=S, predicate="travel.seat_preference", value="aisle", source_event_ids=["e1"]
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                predicate="contact.allowed",
                value=False,
                qualifiers={"channel": "phone"},
                source_event_ids=["e1"],
            ),
        ]
    )
    checked = fresh.guard(T, S, {"booking": {"seat": "window"}, "message": {"channel": "phone"}})
    assert {r.rule for r in checked.refusals} == {"seat-choice", "contact-channel"}


def test_a_redefinition_is_refused_unless_its_table_says_override(fresh):
    fresh.admin.extend_predicates(MINE)
    stricter = {
        "predicates": {
            "timezone": {"type": "string", "criticality": "critical", "category": "preference", "owner": "calendar"}
        }
    }
    with pytest.raises(
        RegistryConflict,
        match=r"predicate 'timezone' is already defined by registry v2, "
        r"differently \(criticality: 'important' -> 'critical'.*override = true",
    ):
        fresh.admin.extend_predicates(stricter)
    assert _stored_versions(fresh) == [1, 2]  # nothing stored
    stricter["predicates"]["timezone"]["override"] = True
    overridden = fresh.admin.extend_predicates(stricter)
    assert overridden.version == 3 and overridden.predicates["timezone"].criticality == "critical"
    assert overridden.predicates["timezone"].synonyms == ()  # the table replaces the definition whole
    assert "override" not in overridden.document()["predicates"]["timezone"]
    guard = {
        "guards": [
            {"name": "spending-limit", "kind": "at_most", "field": "order.total", "predicates": ["spending.limit"]}
        ]
    }
    with pytest.raises(RegistryConflict, match="guard 'spending-limit' is already defined.*field: 'purchase.amount'"):
        fresh.admin.extend_predicates(guard)
    guard["guards"][0]["override"] = True
    assert [g.field for g in fresh.admin.extend_predicates(guard).guards if g.name == "spending-limit"] == [
        "order.total"
    ]
    assert _stored_versions(fresh) == [1, 2, 3, 4]


def test_an_override_of_a_name_the_registry_lacks_is_refused(fresh):
    with pytest.raises(RegistryConflict, match="predicate 'time.zone': override = true, but registry v1 has no such"):
        fresh.admin.extend_predicates({"predicates": {"time.zone": {"type": "string", "override": True}}})
    with pytest.raises(RegistryConflict, match="guard 'no-such-rule': override = true"):
        fresh.admin.extend_predicates(
            {
                "guards": [
                    {
                        "name": "no-such-rule",
                        "kind": "excludes",
                        "field": "x",
                        "predicates": ["timezone"],
                        "override": True,
                    }
                ]
            }
        )
    assert _stored_versions(fresh) == []  # not even the starter: it was to be stored with the extension


def test_an_extension_gives_its_version_above_the_stored_one_or_none(fresh):
    with pytest.raises(
        RegistryConflict, match="version 1 must be a whole number above the stored registry's version 1"
    ):
        fresh.admin.extend_predicates({**MINE, "version": 1})
    assert fresh.admin.extend_predicates({**MINE, "version": 7}).version == 7
    assert _stored_versions(fresh) == [1, 7]


def test_an_extension_is_checked_whole_as_a_registry(fresh):
    with pytest.raises(lossgate.ConfigError, match="no predicate of the registry matches"):
        fresh.admin.extend_predicates(
            {"guards": [{"name": "g", "kind": "excludes", "field": "x", "predicates": ["nope.*"]}]}
        )
    with pytest.raises(lossgate.ConfigError, match=r"unknown key\(s\) \['guard'\]"):
        fresh.admin.extend_predicates({"guard": []})
    with pytest.raises(lossgate.ConfigError, match="predicate 'seats': value_type"):
        fresh.admin.extend_predicates({"predicates": {"seats": {"type": "float"}}})
    assert _stored_versions(fresh) == []


def test_a_tighter_extension_re_gates_the_tenants_named(fresh):
    fresh.append([NewEvent(tenant_id=T, subject_id=S, event_id="tz", text="My timezone is UTC+01:00.")])
    fresh.assert_fact(
        NewFact(tenant_id=T, subject_id=S, predicate="timezone", value="UTC+01:00", source_event_ids=["tz"])
    )
    published = fresh.consolidate(T, S)
    assert published.status == "published"
    critical = {
        "predicates": {
            "timezone": {
                **starter_registry().predicates["timezone"].model_dump(mode="json"),
                "criticality": "critical",
                "override": True,
            }
        }
    }
    fresh.admin.extend_predicates(critical, tenants=[T])
    (line,) = [e for e in fresh.admin.log(T, S) if e.op == "regate"]
    assert line.target_id == published.artifact_id and line.detail["registry_version"] == 2
    assert line.detail["gated_under"] == 1 and line.detail["outcome"] == "clean" and not line.detail["stale"]
    assert fresh.recall(T, S).mode == "summary"  # it keeps the timezone: it stays published


# -- the short path: add and search ----------------------------------------------------------------


def test_add_appends_messages_and_proposes_facts_under_the_starter_policy(fresh):
    added = fresh.add(
        S,
        [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "My visa deadline is 2026-05-01. My budget is 1,200 EUR."},
            {"role": "assistant", "content": "Noted. Your booking reference is QX7-2291."},
            "My booking reference is QX7-2291.",
            {"role": "tool", "name": "crm", "content": "account number AC-77120"},
        ],
    )
    events = fresh.events(T, S)
    assert [e.event_id for e in events] == [r.event_id for r in added.events] and len(events) == 5
    assert [(e.kind, e.actor, e.trust) for e in events] == [
        ("system", "system", "system"),
        ("message", "user", "authenticated_user"),
        ("message", "assistant", "tool"),
        ("message", "user", "authenticated_user"),
        ("tool_result", "crm", "tool"),
    ]
    assert len({e.event_id for e in events}) == 5 and all(e.event_id.startswith("ev-") for e in events)
    got = {(p.predicate, p.source_event_ids[0]): p for p in added.proposals}
    deadline = got["deadline", events[1].event_id]
    assert deadline.status == "accepted" and deadline.value == "2026-05-01" and deadline.authority == "user"
    limit = got["spending.limit", events[1].event_id]
    assert limit.status == "review" and limit.value == {"amount": "1200", "currency": "EUR"}  # a limit waits
    said = got["booking.reference", events[2].event_id]  # the assistant's words: authority tool,
    assert said.authority == "tool" and said.status == "review"  # never a fact on their own say-so
    assert got["booking.reference", events[3].event_id].status == "accepted"  # the user's own words are
    assert got["account.id", events[4].event_id].authority == "tool"
    assert {f.predicate for f in fresh.facts(T, S)} == {"deadline", "booking.reference"}
    again = fresh.add(S, ["Thanks!"])
    assert again.proposals == () and len(again.events) == 1  # extraction reads only what is new


def test_search_returns_the_rendered_block_and_the_hits(fresh):
    fresh.add(S, ["I love the sea.", "My visa deadline is 2026-05-01.", "The weather is nice today."])
    raw = fresh.search(S, "When is the visa deadline?")
    assert raw.recall.mode == "raw_fallback" and raw.rendered == raw.recall.render()
    assert raw.rendered.startswith("Memory of user-17 (raw memory: no fresh summary)")
    assert [f.predicate for f in raw.facts] == ["deadline"]
    assert "My visa deadline is 2026-05-01." in [e.text for e in raw.events]
    assert fresh.admin.recalls(T, S)[0].recall_id == raw.recall.record.recall_id  # recorded, as every recall is
    assert fresh.consolidate(T, S).status == "published"
    summary = fresh.search(S, "visa deadline", budget=200)
    assert summary.recall.mode == "summary" and summary.recall.tokens <= 200
    assert summary.rendered.startswith("Memory of user-17 (summary)") and "- deadline: 2026-05-01" in summary.rendered


def test_the_short_path_needs_a_tenant_binding(store_url):
    with lossgate.open(store_url) as memory:
        with pytest.raises(TenantNotBound, match=r"memory.add needs a tenant: .*tenant=.*memory.tenant\(TENANT\).add"):
            memory.add(S, ["hello"])
        with pytest.raises(TenantNotBound, match="memory.search needs a tenant"):
            memory.search(S, "hello")
        assert isinstance(TenantNotBound("x"), lossgate.ConfigError)
        assert memory.events(T, S) == []  # nothing written
        memory.tenant("acme").add(S, ["My visa deadline is 2026-05-01."])
        other = memory.tenant("globex")
        assert other.search(S, "visa deadline").events == () and other.search(S, "visa").facts == ()
        assert [e.text for e in memory.tenant("acme").search(S, "visa deadline").events] == [
            "My visa deadline is 2026-05-01."
        ]
    for bad in ("", "two words", "a/b"):
        with pytest.raises(InvalidInput, match="tenant_id"):
            lossgate.open(store_url, tenant=bad)


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ("hello", "messages is a list of messages"),
        ({"role": "user", "content": "hi"}, "not dict: wrap a single message in a list"),
        ([], "messages is empty"),
        (["fine", {"role": "narrator", "content": "x"}], "message 1: role: Input should be"),
        (["fine", {"role": "user", "content": None}], "message 1: content"),
        (["fine", {"role": "user", "content": "hi", "tool_calls": []}], "message 1: tool_calls: Extra inputs"),
        (["fine", 42], "message 1: a string or an object with role and content, not int"),
        (["fine", "nul \x00 inside"], "message 1: content"),
        (["fine", {"role": "user", "content": "x", "name": "a" * 201}], "message 1: name"),
    ],
    ids=["a string", "one object", "empty", "a role", "no content", "another key", "a number", "a NUL", "a long name"],
)
def test_bad_messages_are_refused_before_anything_is_written(fresh, messages, fragment):
    with pytest.raises(InvalidInput, match=fragment.replace("(", r"\(")):
        fresh.add(S, messages)
    assert fresh.events(T, S) == [] and fresh.admin.registry is None


class _Failing:
    name = "failing"

    def propose(self, events: Sequence[Event], registry: Registry) -> list[Candidate]:
        raise RuntimeError("the model is down")


def test_an_extractor_that_fails_leaves_the_messages_appended_for_the_next_extraction(fresh):
    with pytest.raises(ExtractionError, match="extractor 'failing' failed: RuntimeError"):
        fresh.add(S, ["My visa deadline is 2026-05-01."], extractor=_Failing())
    assert [e.text for e in fresh.events(T, S)] == ["My visa deadline is 2026-05-01."]
    later = fresh.add(S, ["Thanks."])
    assert [p.predicate for p in later.proposals] == ["deadline"]


def test_the_starter_guard_rules_read_what_the_short_path_stored(fresh):
    added = fresh.add(
        S,
        [
            "I am allergic to peanuts and I never eat kiwi.",
            "Do not call me. You may spend up to 300.00 USD once I confirm.",
            {"role": "assistant", "content": "I will spend up to 5000.00 USD."},
        ],
    )
    allergy, limit, boast = added.events
    fresh.assert_facts(
        [
            NewFact(
                tenant_id=T,
                subject_id=S,
                predicate="food.peanuts_allowed",
                value=False,
                qualifiers={"basis": "allergy"},
                source_event_ids=[allergy.event_id],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                predicate="food.allowed",
                value=False,
                qualifiers={"food": "kiwi"},
                source_event_ids=[allergy.event_id],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                predicate="contact.allowed",
                value=False,
                qualifiers={"channel": "phone"},
                source_event_ids=[limit.event_id],
            ),
        ]
    )
    (proposed,) = [
        p
        for p in added.proposals
        if p.predicate == "spending.limit" and p.status == "review" and p.source_event_ids == (limit.event_id,)
    ]
    accepted = fresh.admin.accept_proposal(T, S, proposed.proposal_id)
    fresh.supersede(
        T,
        S,
        accepted.fact_id,
        NewFact(
            tenant_id=T,
            subject_id=S,
            predicate="spending.limit",
            value=Money(amount=Decimal("300.00"), currency="USD"),
            qualifiers={"condition": "once I confirm"},
            source_event_ids=[limit.event_id],
        ),
    )
    meal = {"items": [{"dish": "salad", "ingredients": ["lettuce", "satay dressing", "kiwi slices"]}]}
    refused = {(r.rule, r.field) for r in fresh.guard(T, S, meal).refusals}
    assert refused == {("meal-ingredients", "items[0].ingredients[1]"), ("meal-foods", "items[0].ingredients[2]")}
    assert fresh.guard(T, S, {"message": {"channel": "phone"}}).refusals[0].rule == "contact-channel"
    assert fresh.guard(T, S, {"message": {"channel": "email"}}).allowed
    within = {"purchase": {"amount": 250, "currency": "USD", "conditions_met": ["once I confirm"]}}
    assert fresh.guard(T, S, within).allowed
    over = {"purchase": {"amount": 900, "currency": "USD", "conditions_met": ["once I confirm"]}}
    assert [r.kind for r in fresh.guard(T, S, over).refusals] == ["at_most"]
    unmet = {"purchase": {"amount": 250, "currency": "USD", "conditions_met": []}}
    assert [r.kind for r in fresh.guard(T, S, unmet).refusals] == ["condition_unmet"]
    (said,) = [p for p in added.proposals if p.source_event_ids == (boast.event_id,)]
    assert said.predicate == "spending.limit" and said.authority == "tool"  # the assistant's words authorize nothing
