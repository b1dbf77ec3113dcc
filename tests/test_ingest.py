"""The JSON Lines ingest library: parsing, typed operations, one transaction per file."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

import lossgate.api.ingest as ingest_mod
from lossgate import IdempotencyConflict, Money, NotFound, UnknownPredicate, ValueTypeError
from lossgate.api.ingest import IngestError, IngestReport, ingest_lines, parse_line

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo.jsonl"
T, S = "acme", "user-17"
AT = "2026-03-14T14:32:00-05:00"


def event(event_id: str, text: str = "hello", **kw) -> dict:
    return {
        "type": "event",
        "tenant_id": T,
        "subject_id": S,
        "event_id": event_id,
        "text": text,
        "occurred_at": AT,
        **kw,
    }


def fact(fact_id: str, predicate: str, value, sources=("e1",), **kw) -> dict:
    return {
        "type": "fact",
        "tenant_id": T,
        "subject_id": S,
        "fact_id": fact_id,
        "predicate": predicate,
        "value": value,
        "source_event_ids": list(sources),
        **kw,
    }


def lines(*objs: dict | str) -> list[str]:
    """JSON lines; a str is taken as a raw line. ``json.dumps(50.0)`` writes ``50.0``."""
    return [o if isinstance(o, str) else json.dumps(o) for o in objs]


def dump(db_url: str) -> list[str]:
    """A logical dump of the whole database: equal dumps, equal databases."""
    with closing(sqlite3.connect(db_url.removeprefix("sqlite:///"))) as conn:
        return list(conn.iterdump())


# -- happy paths ------------------------------------------------------------------------


def test_demo_file_keeps_every_value_type(memory):
    report = ingest_lines(memory, DEMO.open(encoding="utf-8"))
    assert (report.events_appended, report.facts_asserted) == (13, 13)
    travel = {f.fact_id: f for f in memory.facts("travel-co", "user-17")}
    allergy = travel["fact-allergy-1"]
    assert allergy.value is False and allergy.value_type == "bool"
    assert allergy.qualifiers == (("basis", "allergy"), ("severity", "critical"))
    quoted = travel["instruction-quoted-1"]
    assert (quoted.modality, quoted.authority) == ("quoted", "untrusted")
    billing = {f.predicate: f for f in memory.facts("acme-billing", "cust_482")}
    seats = billing["subscription.seats"].value
    assert seats == 50 and type(seats) is int
    total = billing["invoice.total"].value
    assert total == Money(amount=Decimal("14250.00"), currency="USD")
    assert str(total.amount) == "14250.00"  # the written scale survives
    assert billing["payment.deadline"].value == date(2026, 3, 25)


def test_reingesting_a_file_is_a_noop(memory, db_url):
    ingest_lines(memory, DEMO.open(encoding="utf-8"))
    before, clock = dump(db_url), memory.admin.clock("travel-co", "user-17")
    again = ingest_lines(memory, DEMO.open(encoding="utf-8"))
    assert again == IngestReport(lines=26, event_duplicates=13, fact_duplicates=13)
    assert memory.admin.clock("travel-co", "user-17") == clock
    assert dump(db_url) == before


def test_lifecycle_lines_apply_in_order_and_replay_as_a_noop(memory, db_url):
    file = lines(
        event("e1", "I live in UTC-05:00"),
        fact("tz-1", "timezone", "UTC-05:00"),
        event("e2", "Moved: UTC+01:00"),
        {
            "type": "supersede",
            "tenant_id": T,
            "subject_id": S,
            "old_fact_id": "tz-1",
            "fact": {"fact_id": "tz-2", "predicate": "timezone", "value": "UTC+01:00", "source_event_ids": ["e2"]},
        },
        event("e3", "Address: 1 Main St"),
        fact("addr", "contact.home_address", "1 Main St", ["e3"]),
        {"type": "delete_fact", "tenant_id": T, "subject_id": S, "fact_id": "addr", "reason": "asked"},
        event("e4", "aisle please"),
        fact("seat", "travel.seat_preference", "aisle", ["e4"]),
        {"type": "revoke_event", "tenant_id": T, "subject_id": S, "event_id": "e4"},
        {"type": "delete_event", "tenant_id": T, "subject_id": S, "event_id": "e4"},
    )
    report = ingest_lines(memory, file)
    assert report == IngestReport(
        lines=11,
        events_appended=4,
        facts_asserted=3,
        facts_superseded=1,
        facts_deleted=1,
        events_revoked=1,
        events_deleted=1,
    )
    status = {f.fact_id: f.status for f in memory.facts(T, S, statuses=None)}
    assert status == {"tz-1": "superseded", "tz-2": "active", "addr": "deleted", "seat": "deleted"}
    assert memory.events(T, S, states=["deleted"])[0].text is None

    before = dump(db_url)
    replay = ingest_lines(memory, file)
    assert replay == IngestReport(lines=11, event_duplicates=4, fact_duplicates=4, unchanged=3)
    assert dump(db_url) == before


def test_supersede_fact_defaults_to_the_lines_tenant_and_subject():
    op = parse_line(
        json.dumps(
            {
                "type": "supersede",
                "tenant_id": T,
                "subject_id": S,
                "old_fact_id": "a",
                "fact": {"predicate": "timezone", "value": "x", "source_event_ids": ["e"]},
            }
        ),
        1,
    )
    assert (op.body.fact.tenant_id, op.body.fact.subject_id) == (T, S)


def test_events_are_appended_in_batches_across_the_batch_size(memory):
    n = ingest_mod.BATCH_SIZE * 2 + 500
    report = ingest_lines(memory, lines(*(event(f"e{i}", f"turn {i}") for i in range(n))))
    assert report.events_appended == n
    assert memory.admin.clock(T, S).high_water == n


def test_progress_reports_the_last_line_applied(memory):
    seen: list[int] = []
    ingest_lines(
        memory, lines(event("e1"), event("e2"), fact("f", "timezone", "UTC"), event("e3")), progress=seen.append
    )
    assert seen == sorted(seen) and seen[-1] == 4


# -- parsing ----------------------------------------------------------------------------


def test_numbers_are_decimals_never_floats():
    op = parse_line(json.dumps(fact("f", "subscription.seats", 50.0)), 1)
    assert op.body.value == Decimal("50.0") and type(op.body.value) is Decimal
    assert type(parse_line(json.dumps(fact("f", "subscription.seats", 50)), 1).body.value) is int
    assert parse_line(json.dumps(fact("f", "food.peanuts_allowed", False)), 1).body.value is False


def test_payload_numbers_are_plain_json_numbers():
    op = parse_line(json.dumps(event("e1", payload={"score": 1.5, "n": 2, "xs": [0.25]})), 1)
    assert op.body.payload == {"score": 1.5, "n": 2, "xs": [0.25]}
    assert type(op.body.payload["score"]) is float


def test_blank_lines_are_skipped_but_counted():
    with pytest.raises(IngestError) as err:
        list(ingest_mod.parse_lines(["", json.dumps(event("e1")), "   ", "{oops"]))
    assert err.value.line == 4


def test_a_byte_order_mark_on_the_first_line_is_ignored():
    assert parse_line("\ufeff" + json.dumps(event("e1")), 1).body.event_id == "e1"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{oops", "not valid JSON"),
        ('{"type": "event", "text": NaN}', "NaN is not a JSON number"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"tenant_id": "acme"}', "missing field 'type'"),
        ('{"type": "memo"}', "unknown type 'memo'"),
        (json.dumps({**event("e1"), "tenant": "acme"}), "event e1: unknown field 'tenant'"),
        (json.dumps({k: v for k, v in event("e1").items() if k != "tenant_id"}), "event e1: missing field 'tenant_id'"),
        (json.dumps({k: v for k, v in event("e1").items() if k != "occurred_at"}), "missing field 'occurred_at'"),
        (json.dumps({k: v for k, v in event("e1").items() if k != "event_id"}), "missing field 'event_id'"),
        (json.dumps(event("e1", occurred_at="2026-03-14T14:32:00")), "must carry a UTC offset"),
        (json.dumps(event("e1", kind="chat")), "field 'kind'"),
        (json.dumps(fact("f1", "timezone", "UTC", sources=())), "fact f1: field 'source_event_ids'"),
        (
            json.dumps(fact("f1", "timezone", "UTC", qualifiers={"basis": 1})),
            "keys and values must be non-empty strings",
        ),
        (json.dumps({"type": "delete_fact", "tenant_id": T, "subject_id": S}), "delete_fact: missing field 'fact_id'"),
        (b'{"type": "event", "text": "\xff"}', "not valid UTF-8"),
    ],
)
def test_parse_errors_are_one_line_naming_the_line(text, problem):
    with pytest.raises(IngestError) as err:
        parse_line(text, 7)
    message = str(err.value)
    assert message.startswith("line 7: ") and problem in message
    assert "\n" not in message and err.value.line == 7


# -- a bad line writes nothing ----------------------------------------------------------


@pytest.fixture
def seeded(memory, db_url):
    """A memory holding one event and one fact, and its dump."""
    ingest_lines(
        memory,
        lines(
            event("e1", "I am allergic to peanuts"),
            fact("f1", "food.peanuts_allowed", False, qualifiers={"basis": "allergy"}),
        ),
    )
    return memory, dump(db_url)


GOOD = [event("e10", "we have 50 seats"), fact("f10", "subscription.seats", 50, ["e10"])]


@pytest.mark.parametrize(
    ("bad", "problem", "cause"),
    [
        (
            fact("f11", "subscription.seats", 50.0, ["e10"]),
            "fact f11: predicate 'subscription.seats' expects int, received",
            ValueTypeError,
        ),
        (
            fact("f11", "no.such_predicate", 1, ["e10"]),
            "fact f11: unknown predicate 'no.such_predicate'",
            UnknownPredicate,
        ),
        (
            fact("f11", "subscription.seats", 51, ["e-404"]),
            "fact f11: source event(s) ['e-404'] do not exist",
            NotFound,
        ),
        (event("e1", "tampered"), "event e1: already stored with different content", IdempotencyConflict),
        (event("e10", "tampered"), "event e10: already stored with different content", IdempotencyConflict),
        (
            {
                "type": "supersede",
                "tenant_id": T,
                "subject_id": S,
                "old_fact_id": "nope",
                "fact": {"predicate": "timezone", "value": "UTC", "source_event_ids": ["e10"]},
            },
            "fact nope does not exist",
            NotFound,
        ),
        (
            {"type": "revoke_event", "tenant_id": T, "subject_id": S, "event_id": "nope"},
            "event nope does not exist",
            NotFound,
        ),
    ],
)
def test_a_bad_line_after_good_ones_writes_nothing(seeded, db_url, bad, problem, cause):
    memory, before = seeded
    with pytest.raises(IngestError) as err:
        ingest_lines(memory, lines(*GOOD, bad), source="batch.jsonl")
    assert str(err.value).startswith("batch.jsonl:3: ") and problem in str(err.value)
    assert err.value.line == 3 and isinstance(err.value.cause, cause)
    assert dump(db_url) == before


def test_a_conflict_inside_an_event_batch_names_its_line(seeded, db_url, monkeypatch):
    memory, before = seeded
    monkeypatch.setattr(ingest_mod, "BATCH_SIZE", 4)
    file = lines(
        *(event(f"e{i}", f"turn {i}") for i in range(20, 26)),
        event("e22", "changed"),
        *(event(f"e{i}", f"turn {i}") for i in range(26, 30)),
    )
    with pytest.raises(IngestError) as err:
        ingest_lines(memory, file)
    assert err.value.line == 7 and "event e22" in str(err.value)
    assert dump(db_url) == before


def test_a_supersede_without_a_fact_id_replays_as_a_noop(memory, db_url):
    file = lines(
        event("e1"),
        fact("tz-1", "timezone", "UTC-05:00"),
        event("e2", "moved"),
        {
            "type": "supersede",
            "tenant_id": T,
            "subject_id": S,
            "old_fact_id": "tz-1",
            "fact": {"predicate": "timezone", "value": "UTC+01:00", "source_event_ids": ["e2"]},
        },
    )
    assert ingest_lines(memory, file).facts_superseded == 1
    before = dump(db_url)
    assert ingest_lines(memory, file).fact_duplicates == 2
    assert dump(db_url) == before


def test_every_example_in_the_format_doc_parses():
    doc = (ROOT / "docs" / "ingest-format.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0].strip() for b in doc.split("```json\n")[1:]]
    assert len(blocks) >= 4
    for block in blocks:
        assert parse_line(block, 1) is not None
