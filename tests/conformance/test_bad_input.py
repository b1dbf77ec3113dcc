"""One answer for bad input on every store.

PostgreSQL cannot store NUL in text, no store can encode a lone surrogate, deep
nesting overflows Python's recursion limit and nothing bounded the size of a
field. Each such input must raise :class:`InvalidInput` before anything is
written, on SQLite and PostgreSQL alike, and ``lossgate ingest`` must answer it
with exit code 2 and one line (the limits live in :mod:`lossgate.model.limits`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import ValidationError

from lossgate import ConfigError, InvalidInput, Money, NewEvent, NewFact
from lossgate.api.ingest import IngestError, ingest_lines
from lossgate.errors import InvalidRecord
from lossgate.model.limits import (
    MAX_DEPTH,
    MAX_ID_CHARS,
    MAX_LABEL_CHARS,
    MAX_NAME_CHARS,
    MAX_PAYLOAD_BYTES,
    MAX_TEXT_CHARS,
    MAX_VALUE_BYTES,
)
from lossgate.model.registry import load_registry
from tests.support import REGISTRY_PATH
from tests.support.cli import one_line_error

T, S = "acme", "user-17"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=timezone(timedelta(hours=-5)))
NUL, SURROGATE = "\x00", "\ud800"


def event_fields(**kw) -> dict:
    return {"tenant_id": T, "subject_id": S, "event_id": "e9", "text": "hello", "occurred_at": AT, **kw}


def fact_fields(**kw) -> dict:
    return {
        "tenant_id": T,
        "subject_id": S,
        "fact_id": "f9",
        "predicate": "timezone",
        "value": "UTC+01:00",
        "source_event_ids": ["e1"],
        **kw,
    }


def nested(depth: int, leaf=1):
    """``depth`` levels of arrays around ``leaf``: nested(2) == [[1]]."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def state(memory) -> tuple:
    """Everything a write could have touched for the subject."""
    return (
        memory.admin.clock(T, S),
        memory.events(T, S),
        memory.facts(T, S, statuses=None),
        memory.admin.log(T, S),
        memory.admin.recalls(T, S),
        memory.admin.jobs(T, S),
        memory.admin.registry,
    )


@pytest.fixture
def seeded(memory):
    """One event and one fact on it, so lifecycle calls have something to act on."""
    memory.append([NewEvent(**event_fields(event_id="e1", text="My timezone is UTC+01:00."))])
    memory.assert_fact(NewFact(**fact_fields(fact_id="f1")))
    return memory


# -- finding 5: NUL in every kind of text ---------------------------------------------------

EVENT_NUL = {
    "tenant_id": {"tenant_id": f"acme{NUL}"},
    "subject_id": {"subject_id": f"user{NUL}17"},
    "event_id": {"event_id": f"e{NUL}9"},
    "actor": {"actor": f"agent{NUL}"},
    "text": {"text": f"a{NUL}b"},
}


@pytest.mark.parametrize("fields", EVENT_NUL.values(), ids=EVENT_NUL.keys())
def test_nul_in_an_event_is_invalid_input(seeded, fields):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        seeded.append([NewEvent(**event_fields(event_id="e8")), NewEvent(**event_fields(**fields))])
    assert state(seeded) == before


FACT_NUL = {
    "string value": {"value": f"UTC{NUL}+01:00"},
    "enum value": {"predicate": "travel.seat_preference", "value": f"aisle{NUL}"},
    "entity_id value": {"predicate": "customer.id", "value": f"cust{NUL}482"},
    "money currency (object)": {"predicate": "refund.limit", "value": {"amount": "50.00", "currency": f"US{NUL}"}},
    "money currency (Money)": {
        "predicate": "refund.limit",
        "value": Money(amount=Decimal("50.00"), currency=f"US{NUL}"),
    },
    "qualifier key": {
        "predicate": "refund.limit",
        "value": {"amount": "50.00", "currency": "USD"},
        "qualifiers": {f"condition{NUL}": "always"},
    },
    "qualifier value": {
        "predicate": "refund.limit",
        "value": {"amount": "50.00", "currency": "USD"},
        "qualifiers": {"condition": f"after review{NUL}"},
    },
    "predicate": {"predicate": f"timezone{NUL}"},
    "fact_id": {"fact_id": f"f{NUL}9"},
    "source event id": {"source_event_ids": [f"e1{NUL}"]},
    "tenant_id": {"tenant_id": f"acme{NUL}"},
}


@pytest.mark.parametrize("fields", FACT_NUL.values(), ids=FACT_NUL.keys())
def test_nul_in_a_fact_is_invalid_input(seeded, fields):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        seeded.assert_fact(NewFact(**fact_fields(**fields)))
    with pytest.raises(InvalidInput):
        seeded.supersede(T, S, "f1", NewFact(**fact_fields(**fields)))
    assert state(seeded) == before


LIFECYCLE = {
    "delete_event": lambda m, bad: m.delete_event(T, S, "e1", reason=bad),
    "revoke_event": lambda m, bad: m.revoke_event(T, S, "e1", reason=bad),
    "delete_fact": lambda m, bad: m.delete_fact(T, S, "f1", reason=bad),
    "set_trust": lambda m, bad: m.set_trust(T, S, "e1", "untrusted", reason=bad),
    "request_consolidation": lambda m, bad: m.request_consolidation(T, S, reason=bad),
    "delete_event id": lambda m, bad: m.delete_event(T, S, f"e1{bad}"),
    "delete_fact id": lambda m, bad: m.delete_fact(T, S, f"f1{bad}"),
    "supersede old id": lambda m, bad: m.supersede(T, S, f"f1{bad}", NewFact(**fact_fields())),
    "subject of a deletion": lambda m, bad: m.delete_event(T, f"{S}{bad}", "e1"),
}


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize("call", LIFECYCLE.values(), ids=LIFECYCLE.keys())
def test_bad_text_in_a_lifecycle_call_is_invalid_input(seeded, call, bad):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        call(seeded, bad)
    assert state(seeded) == before


READS = {
    "events": lambda m, bad: m.events(f"{T}{bad}", S),
    "facts": lambda m, bad: m.facts(T, S, predicate=f"timezone{bad}"),
    "fact": lambda m, bad: m.fact(T, S, f"f1{bad}"),
    "clock": lambda m, bad: m.admin.clock(T, f"{S}{bad}"),
    "history": lambda m, bad: m.history(T, S, f"f1{bad}"),
    "subjects": lambda m, bad: m.admin.subjects(f"{T}{bad}"),
    "facts statuses": lambda m, bad: m.facts(T, S, statuses=[f"active{bad}"]),
}


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize("call", READS.values(), ids=READS.keys())
def test_bad_text_in_a_read_is_invalid_input(seeded, call, bad):
    # SQLite used to find nothing and PostgreSQL to fail: one answer now.
    with pytest.raises(InvalidInput):
        call(seeded, bad)


def test_an_unknown_trust_level_is_invalid_input(seeded):
    before = state(seeded)
    with pytest.raises(InvalidInput, match="trust"):
        seeded.set_trust(T, S, "e1", "admin")  # type: ignore[arg-type]
    assert state(seeded) == before


def test_nul_in_a_registry_document_is_refused_before_it_is_stored(memory):
    doc = {"version": 2, "predicates": {"note": {"type": "string", "description": f"a note{NUL}"}}}
    before = memory.admin.registry
    with pytest.raises(ConfigError, match="note"):  # a bad registry is a ConfigError, as always
        memory.admin.load_predicates(doc)
    doc["predicates"]["note"] = {"type": "enum", "enum_values": [f"a{NUL}", "b"]}
    with pytest.raises(ConfigError):
        memory.admin.load_predicates(doc)
    assert memory.admin.registry == before


def test_nul_in_a_payload_is_kept_on_every_store(memory):
    # A payload is stored as JSON text (PostgreSQL ``json``, not ``jsonb``), where \u0000 is
    # an escape like any other: it survives on both stores, so it is not refused.
    payload = {"k": f"v{NUL}", f"k{NUL}": ["x", {"y": f"{NUL}"}]}
    memory.append([NewEvent(**event_fields(payload=payload))])
    assert memory.events(T, S)[0].payload == payload


# -- finding 7: lone surrogates, and the recall query -------------------------------------

SURROGATES = {
    "text": {"text": f"a{SURROGATE}b"},
    "event_id": {"event_id": f"e{SURROGATE}"},
    "tenant_id": {"tenant_id": f"acme{SURROGATE}"},
    "actor": {"actor": SURROGATE},
    "payload value": {"payload": {"k": [SURROGATE]}},
    "payload key": {"payload": {SURROGATE: 1}},
    "payload with NUL and surrogate": {"payload": {"k": f"{NUL}{SURROGATE}"}},
}


@pytest.mark.parametrize("fields", SURROGATES.values(), ids=SURROGATES.keys())
def test_a_lone_surrogate_in_an_event_is_invalid_input(seeded, fields):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        seeded.append([NewEvent(**event_fields(**fields))])
    assert state(seeded) == before


@pytest.mark.parametrize(
    "fields",
    [{"value": f"UTC{SURROGATE}"}, {"qualifiers": {"basis": SURROGATE}}, {"fact_id": SURROGATE}],
    ids=["value", "qualifier", "fact_id"],
)
def test_a_lone_surrogate_in_a_fact_is_invalid_input(seeded, fields):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        seeded.assert_fact(NewFact(**fact_fields(**fields)))
    assert state(seeded) == before


@pytest.mark.parametrize(
    "query",
    [SURROGATE, f"timezone {SURROGATE}", f"time{NUL}zone", "x" * (MAX_LABEL_CHARS + 1)],
    ids=["surrogate", "surrogate in words", "nul", "too long"],
)
def test_a_bad_recall_query_is_invalid_input_and_leaves_no_record(seeded, query):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        seeded.recall(T, S, query=query)
    assert state(seeded) == before
    assert seeded.recall(T, S, query="timezone").mode == "raw_fallback"  # a good query still works


# -- finding 6: nesting and sizes ------------------------------------------------------------


def test_payload_nesting_limit(seeded):
    ok = {"deep": nested(MAX_DEPTH - 1)}  # the payload object plus MAX_DEPTH - 1 arrays
    seeded.append([NewEvent(**event_fields(event_id="e2", payload=ok))])
    assert seeded.events(T, S)[-1].payload == ok
    before = state(seeded)
    for depth in (MAX_DEPTH, 5_000):
        with pytest.raises(InvalidInput, match="nested more than 64 levels"):
            seeded.append([NewEvent(**event_fields(event_id="e3", payload={"deep": nested(depth)}))])
    assert state(seeded) == before


@pytest.mark.parametrize(
    "value",
    [nested(MAX_DEPTH + 1, "UTC"), nested(5_000, "UTC"), {"amount": nested(5_000), "currency": "USD"}],
    ids=["65", "5000", "money"],
)
def test_fact_value_nesting_limit(seeded, value):
    before = state(seeded)
    with pytest.raises(InvalidInput, match="nested more than 64 levels"):
        seeded.assert_fact(NewFact(**fact_fields(value=value)))
    assert state(seeded) == before


OVERSIZED_EVENTS = {
    "text": {"text": "x" * (MAX_TEXT_CHARS + 1)},
    "payload": {"payload": {"blob": "x" * MAX_PAYLOAD_BYTES}},
    "event_id": {"event_id": "e" * (MAX_ID_CHARS + 1)},
    "subject_id": {"subject_id": "s" * (MAX_ID_CHARS + 1)},
    "actor": {"actor": "a" * (MAX_NAME_CHARS + 1)},
}


@pytest.mark.parametrize("fields", OVERSIZED_EVENTS.values(), ids=OVERSIZED_EVENTS.keys())
def test_an_oversized_event_field_is_invalid_input(seeded, fields):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        seeded.append([NewEvent(**event_fields(**fields))])
    assert state(seeded) == before


OVERSIZED_FACTS = {
    "string value": {"value": "x" * MAX_VALUE_BYTES},
    "qualifier value": {
        "predicate": "food.peanuts_allowed",
        "value": False,
        "qualifiers": {"basis": "x" * (MAX_LABEL_CHARS + 1)},
    },
    "fact_id": {"fact_id": "f" * (MAX_ID_CHARS + 1)},
    "predicate": {"predicate": "p" * (MAX_NAME_CHARS + 1)},
}


@pytest.mark.parametrize("fields", OVERSIZED_FACTS.values(), ids=OVERSIZED_FACTS.keys())
def test_an_oversized_fact_field_is_invalid_input(seeded, fields):
    before = state(seeded)
    with pytest.raises(InvalidInput):
        seeded.assert_fact(NewFact(**fact_fields(**fields)))
    assert state(seeded) == before


def test_an_oversized_reason_is_invalid_input(seeded):
    before = state(seeded)
    with pytest.raises(InvalidInput, match="reason"):
        seeded.delete_event(T, S, "e1", reason="r" * (MAX_LABEL_CHARS + 1))
    assert state(seeded) == before


def costly_text(chars: int) -> str:
    """The text that costs a full-text index most per character (measured on PostgreSQL:
    about 9.8 bytes of tsvector each): unique two-letter hyphenated words."""
    letters = [chr(c) for c in range(0x800, 0x30000) if chr(c).isalpha()]
    return " ".join("-".join(letters[i : i + 2]) for i in range(0, chars, 2))[:chars]


def test_fields_at_their_limits_are_stored_searched_and_consolidated_on_every_store(seeded):
    text = "needle " + costly_text(MAX_TEXT_CHARS - 7)
    assert len(text) == MAX_TEXT_CHARS
    seeded.append(
        [
            NewEvent(
                **event_fields(
                    event_id="e" * MAX_ID_CHARS,
                    text=text,
                    actor="a" * MAX_NAME_CHARS,
                    payload={"blob": "x" * (MAX_PAYLOAD_BYTES - 20)},
                )
            )
        ]
    )
    stored = seeded.events(T, S)[-1]
    assert (stored.event_id, stored.text, stored.actor) == ("e" * MAX_ID_CHARS, text, "a" * MAX_NAME_CHARS)
    # PostgreSQL's tsvector holds at most 1 MiB: text within the limit must stay searchable.
    assert "e" * MAX_ID_CHARS in [e.event_id for e in seeded.recall(T, S, query="needle").events]
    assert seeded.consolidate(T, S).status == "published"
    value = "x" * (MAX_VALUE_BYTES - 2)  # the two quotes of its JSON form make it exactly the limit
    fact = seeded.assert_fact(NewFact(**fact_fields(fact_id="f2", value=value)))
    assert seeded.fact(T, S, fact.fact_id).value == value


def test_a_bad_record_is_invalid_input_and_still_a_validation_error():
    with pytest.raises(InvalidRecord) as caught:
        NewEvent.model_validate(event_fields(text=NUL))
    assert isinstance(caught.value, ValidationError) and isinstance(caught.value, InvalidInput)
    assert caught.value.errors()[0]["loc"] == ("text",)


# -- the JSON Lines ingest and the CLI -----------------------------------------------------


def test_ingest_refuses_a_line_nested_too_deeply(memory):
    for line in ("[" * 5_000 + "]" * 5_000, json.dumps({"type": "event", "payload": nested(200)})):
        with pytest.raises(IngestError, match="line 1: nested more than 64 levels deep"):
            ingest_lines(memory, [line])
    line = json.dumps({"type": "event", **event_fields(occurred_at=AT.isoformat(), payload={"d": nested(MAX_DEPTH)})})
    with pytest.raises(IngestError, match="event e9: field 'payload': nested more than 64 levels deep"):
        ingest_lines(memory, [line])


def line(**kw) -> str:
    return json.dumps({"type": "event", **event_fields(event_id="e1", occurred_at=AT.isoformat()), **kw})


def test_cli_ingest_of_deeply_nested_json_exits_2_with_one_line(cli, tmp_path: Path, store_url: str):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 5_000 + "]" * 5_000 + "\n", encoding="utf-8")
    one_line_error(cli("ingest", "--quiet", str(deep)), f"{deep}:1: nested more than 64 levels deep")
    payload = tmp_path / "payload.jsonl"
    deep_payload = line(event_id="e2", payload={"d": "HERE"}).replace('"HERE"', "[" * 5_000 + "]" * 5_000)
    payload.write_text(line() + "\n" + deep_payload + "\n", encoding="utf-8")
    one_line_error(cli("ingest", "--quiet", str(payload)), f"{payload}:2: nested more than 64 levels deep")
    _assert_nothing_written(store_url)


BAD_LINES = {
    "nul in text": line(text=f"a{NUL}b"),
    "nul in event id": line(event_id=f"e{NUL}"),
    "surrogate in payload": line(payload={"k": [f"v{SURROGATE}"]}),
    "surrogate in text": line(text=SURROGATE),
    "nul in fact value": json.dumps({"type": "fact", **fact_fields(value=f"UTC{NUL}")}),
    "nul in qualifier": json.dumps(
        {
            "type": "fact",
            **fact_fields(predicate="food.peanuts_allowed", value=False, qualifiers={"basis": f"allergy{NUL}"}),
        }
    ),
    "nul in reason": json.dumps(
        {"type": "delete_event", "tenant_id": T, "subject_id": S, "event_id": "e1", "reason": f"asked{NUL}"}
    ),
    "oversized text": line(text="x" * (MAX_TEXT_CHARS + 1)),
}


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_cli_ingest_of_bad_text_exits_2_on_every_store(cli, tmp_path: Path, store_url: str, bad: str):
    path = tmp_path / "bad.jsonl"
    path.write_text(line() + "\n" + bad + "\n", encoding="utf-8")  # line 1 is fine: rolled back
    message = one_line_error(cli("ingest", "--quiet", str(path)), f"{path}:2:")
    assert NUL not in message and SURROGATE not in message
    _assert_nothing_written(store_url)


def _assert_nothing_written(store_url: str) -> None:
    import lossgate

    with lossgate.open(store_url) as memory:
        assert memory.events(T, S, states=None) == [] and memory.admin.clock(T, S).high_water == 0
        assert memory.admin.registry == load_registry(REGISTRY_PATH)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.recall(T, "s" * 10_000),
        lambda m: m.recall(T, S, k=-1),
        lambda m: m.recall(T, S, budget=-5),
        lambda m: m.admin.recalls(T, S, limit=-1),
        lambda m: m.revoke_event(T, S, "e" * 100_000),
        lambda m: m.recall(T, S, query="cat", k=2**63),
        lambda m: m.recall(T, S, k=2**63),
        lambda m: m.recall(T, S, query="cat", budget=2**67),
        lambda m: m.admin.recalls(T, S, limit=2**64),
    ],
    ids=[
        "long-subject",
        "negative-k",
        "negative-budget",
        "negative-limit",
        "long-event-id",
        "huge-k-query",
        "huge-k",
        "huge-budget",
        "huge-limit",
    ],
)
def test_out_of_range_arguments_are_invalid_input_and_write_no_recall_record(seeded, call):
    before = len(seeded.admin.recalls(T, S, limit=1000))
    with pytest.raises(InvalidInput):
        call(seeded)
    assert len(seeded.admin.recalls(T, S, limit=1000)) == before


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"query": 123}, "query must be str or None, got int"),
        ({"query": b"cat"}, "query must be str or None, got bytes"),
        ({"query": ["cat"]}, "query must be str or None, got list"),
        ({"k": "5"}, "k must be int, got str"),
        ({"k": True}, "k must be int, got bool"),
        ({"budget": 1.5}, "budget must be int or None, got float"),
    ],
)
def test_arguments_of_the_wrong_type_are_invalid_input(memory, kwargs, problem):
    with pytest.raises(InvalidInput, match=problem):
        memory.recall("acme", "u1", **kwargs)
    with pytest.raises(InvalidInput, match="tenant_id must be str, got int"):
        memory.recall(1, "u1")
