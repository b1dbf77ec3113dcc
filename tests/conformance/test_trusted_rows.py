"""Records read without validation are the records validation builds.

The store builds events, facts, conflicts and log entries from its own rows without
running pydantic over them again (:func:`lossgate.model.trusted.trusted`: the read hot
path of recall and consolidation). Here every row such a read hands back, on each store,
is also built through full validation (``rows.*_from_row_validated``), and the two must
be indistinguishable: equal both ways, the same ``model_dump`` (in the same key order)
and JSON, the same ``repr`` and hash, the same ``tzinfo`` on every datetime, frozen alike,
and the same after a pickle round trip and a ``model_copy``. The rows cover every shape:
each value type, qualifiers or none, a payload or a purged one, deleted, revoked and
superseded records, caller times with an offset.
"""

from __future__ import annotations

import pickle
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from lossgate import NewEvent, NewFact
from lossgate.model.values import VALUE_TYPES, Money
from lossgate.store import rows

T, S = "acme", "rows-1"
AT = datetime(2026, 3, 14, 14, 32, 5, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30)))

# (reader, validated twin) per kind of record
BUILDERS = {
    "event": ("event_from_row", "event_from_row_validated"),
    "fact": ("fact_from_row", "fact_from_row_validated"),
    "conflict": ("conflict_from_row", "conflict_from_row_validated"),
    "log": ("log_from_row", "log_from_row_validated"),
}


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the store's reads turn into records, by kind (the readers still answer)."""
    seen: dict[str, list[tuple[Any, ...]]] = {kind: [] for kind in BUILDERS}
    for kind, (name, _) in BUILDERS.items():
        original = getattr(rows, name)

        def reader(r: Any, *, _kind: str = kind, _original: Any = original) -> Any:
            seen[_kind].append(tuple(r))
            return _original(r)

        monkeypatch.setattr(rows, name, reader)
    return seen


def ev(event_id: str, text: str, **kw: Any) -> NewEvent:
    return NewEvent(tenant_id=T, subject_id=S, event_id=event_id, text=text, **{"occurred_at": AT, **kw})


def fact(fact_id: str, predicate: str, value: Any, sources: list[str], **kw: Any) -> NewFact:
    return NewFact(
        tenant_id=T,
        subject_id=S,
        fact_id=fact_id,
        predicate=predicate,
        value=value,
        source_event_ids=tuple(sources),
        **kw,
    )


# One fact of every value type (a predicate of examples/predicates.toml each).
VALUES = {
    "bool": ("food.peanuts_allowed", False, {"basis": "allergy", "severity": "critical"}),
    "int": ("subscription.seats", 42, {}),
    "decimal": ("sla.uptime_percent", Decimal("99.950"), {}),
    "money": ("invoice.total", Money(amount=Decimal("14250.00"), currency="EUR"), {"invoice_id": "INV-7"}),
    "date": ("payment.deadline", date(2026, 4, 1), {"invoice_id": "INV-7"}),
    "datetime": ("meeting.starts_at", datetime(2026, 4, 2, 9, 30, tzinfo=timezone(timedelta(hours=-5))), {}),
    "duration": ("response.max_wait", timedelta(hours=4, minutes=30), {}),
    "string": ("timezone", "UTC-05:00", {}),
    "enum": ("travel.seat_preference", "aisle", {}),
    "entity_id": ("customer.id", "CUST-00042", {}),
}


def history(memory: Any) -> None:
    """Events and facts of every shape, through the ledger as an application would write them."""
    memory.append(
        [
            ev("e-plain", "a plain turn"),
            ev(
                "e-payload",
                "a tool said so",
                kind="tool_result",
                actor="tool:crm.lookup",
                trust="tool",
                payload={"rows": [1, 2.5, None, True], "nested": {"k": "v"}, "text": "é ✓"},
            ),
            ev("e-utc", "stated in UTC", occurred_at=datetime(2026, 3, 1, tzinfo=UTC)),
            ev("e-untrusted", "a web page", kind="document", trust="untrusted", actor="web"),
            *[ev(f"e-{t}", f"the {t} value") for t in VALUE_TYPES],
            ev("e-gone", "my old address, forget it"),
            ev("e-revoked", "a mistaken turn"),
            ev("e-old", "the first total"),
            ev("e-new", "the corrected total"),
            ev("e-rival", "another total"),
            ev("e-rival-tz", "another timezone"),
        ]
    )
    for value_type, (predicate, value, qualifiers) in VALUES.items():
        memory.assert_fact(fact(f"f-{value_type}", predicate, value, [f"e-{value_type}"], qualifiers=qualifiers))
    memory.assert_facts(
        [
            fact(
                "f-negative",
                "contact.allowed",
                False,
                ["e-plain", "e-payload"],
                qualifiers={"channel": "sms"},
                polarity="negative",
                modality="speculative",
                authority="tool",
                valid_from=datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=1))),
            ),
            fact("f-gone", "contact.home_address", "221 Elm Street", ["e-gone"]),
            fact("f-revoked", "chat.topic", "jazz", ["e-revoked"]),
            fact("f-old", "refund.limit", Money(amount=Decimal("50"), currency="USD"), ["e-old"]),
        ]
    )
    memory.supersede(
        T, S, "f-old", fact("f-new", "refund.limit", Money(amount=Decimal("75.5"), currency="USD"), ["e-new"])
    )
    # a rival value of a cardinality-one predicate: an open conflict, then one resolved
    memory.assert_facts(
        [
            fact(
                "f-rival",
                "invoice.total",
                Money(amount=Decimal("1.00"), currency="EUR"),
                ["e-rival"],
                qualifiers={"invoice_id": "INV-7"},
            ),
            fact("f-rival-tz", "timezone", "UTC+01:00", ["e-rival-tz"]),
        ]
    )
    memory.revoke_event(T, S, "e-rival", reason="not a total")  # its conflict resolves
    memory.delete_fact(T, S, "f-gone", reason="forget my address")  # value and event purged
    memory.revoke_event(T, S, "e-revoked", reason="a mistake")  # and its fact revoked
    memory.delete_event(T, S, "e-utc", reason="purge")


def read_everything(memory: Any) -> None:
    with memory.store.read() as tx:
        tx.events(T, S)
        tx.events(T, S, ids=["e-plain", "e-gone"], skip_erased=True)
        tx.facts(T, S)
        tx.facts_citing(T, S, ["e-gone", "e-plain"])
        tx.conflicts(T, S)
        tx.log(T, S)


def assert_indistinguishable(fast: BaseModel, validated: BaseModel) -> None:
    assert type(fast) is type(validated)
    assert fast == validated and validated == fast
    assert list(fast.model_dump()) == list(type(fast).model_fields)  # every field, in declared order
    assert fast.model_dump() == validated.model_dump()
    assert list(fast.model_dump()) == list(validated.model_dump())
    assert fast.model_dump(mode="json") == validated.model_dump(mode="json")
    assert fast.model_dump_json() == validated.model_dump_json()
    assert repr(fast) == repr(validated)
    assert fast.model_fields_set == validated.model_fields_set
    assert fast.__getstate__() == validated.__getstate__()  # type: ignore[operator]
    for name in type(fast).model_fields:
        a, b = getattr(fast, name), getattr(validated, name)
        assert type(a) is type(b), name
        if isinstance(a, datetime):
            assert type(a.tzinfo) is type(b.tzinfo) and a.tzname() == b.tzname() and str(a) == str(b), name
        if isinstance(a, tuple):
            assert all(type(x) is type(y) for x, y in zip(a, b, strict=False)), name
    try:
        expected: Any = hash(validated)
    except TypeError as exc:  # an event's payload is a dict: neither hashes
        with pytest.raises(TypeError):
            hash(fast)
        expected = str(exc)
    else:
        assert hash(fast) == expected
    for record in (fast, validated):
        with pytest.raises(ValidationError, match="frozen"):
            record.tenant_id = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(fast)) == validated
    assert fast.model_copy() == validated.model_copy()
    assert fast.model_copy(update={"subject_id": "x"}) == validated.model_copy(update={"subject_id": "x"})
    assert type(fast).model_validate(fast.model_dump()) == type(fast).model_validate(validated.model_dump())


def test_records_read_without_validation_equal_validated_ones(memory, captured) -> None:
    history(memory)
    for kind in captured:
        captured[kind].clear()
    read_everything(memory)

    for kind, (name, twin) in BUILDERS.items():
        assert captured[kind], f"no {kind} row was read"
        for r in captured[kind]:
            assert_indistinguishable(_reader(name)(r), getattr(rows, twin)(r))

    # every shape was among them
    events = [rows.event_from_row_validated(r) for r in captured["event"]]
    facts = [rows.fact_from_row_validated(r) for r in captured["fact"]]
    conflicts = [rows.conflict_from_row_validated(r) for r in captured["conflict"]]
    assert {e.state for e in events} == {"valid", "deleted", "revoked"}
    assert any(e.payload is None and e.text is None for e in events)  # purged
    assert any(e.payload == {} for e in events) and any(e.payload and "nested" in e.payload for e in events)
    assert any(e.occurred_at.utcoffset() == timedelta(hours=5, minutes=30) for e in events)
    assert {f.value_type for f in facts if f.value is not None} == set(VALUE_TYPES)
    assert {f.status for f in facts} == {"active", "superseded", "deleted", "revoked"}
    assert any(f.value is None and f.qualifiers == () for f in facts if f.status == "deleted")  # purged
    assert any(len(f.qualifiers) == 2 for f in facts) and any(f.qualifiers == () for f in facts)
    assert any(f.valid_from is not None for f in facts) and any(len(f.source_event_ids) == 2 for f in facts)
    assert {c.status for c in conflicts} == {"resolved", "unresolved"}
    assert any(c.resolved_at is not None and c.resolution for c in conflicts)


_ORIGINALS = {name: getattr(rows, name) for name, _ in BUILDERS.values()}


def _reader(name: str) -> Any:
    """The reader as the store module defines it (the fixture wraps the module attribute)."""
    return _ORIGINALS[name]


@pytest.mark.parametrize(
    "stored",
    [
        "2026-03-14T14:32:05+00:00",
        "2026-03-14T14:32:05.123456+00:00",
        "2026-03-14T14:32:05-08:00",
        "2026-03-14T14:32:05.5+05:45",
        "2026-03-14T14:32:05",
        datetime(2026, 3, 14, tzinfo=UTC),
    ],
)
def test_a_stored_time_reads_as_validation_parses_it(stored: Any) -> None:
    row = (
        T,
        S,
        1,
        "e1",
        "message",
        "user",
        "authenticated_user",
        "hi",
        "{}",
        stored,
        stored,
        "sha256:" + "0" * 64,
        "valid",
        "hot",
    )
    assert_indistinguishable(rows.event_from_row(row), rows.event_from_row_validated(row))
