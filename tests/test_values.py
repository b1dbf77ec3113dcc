"""Typed values: coercion rules and lossless round trips (invariant 9)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lossgate.model.values import Money, ValueMismatch, canonical_value, coerce_value, decode_value, encode_value

decimals = st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**9), max_value=10**9)
aware = st.datetimes(
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5)), timezone(timedelta(hours=5, minutes=30))])
)
typed = st.one_of(
    st.tuples(st.just("bool"), st.booleans()),
    st.tuples(st.just("int"), st.integers(-(2**53) + 1, 2**53 - 1)),
    st.tuples(st.just("decimal"), decimals),
    st.tuples(st.just("money"), st.builds(Money, amount=decimals, currency=st.sampled_from(["USD", "EUR", "JPY"]))),
    st.tuples(st.just("date"), st.dates()),
    st.tuples(st.just("datetime"), aware),
    st.tuples(st.just("duration"), st.timedeltas(min_value=timedelta(days=-999), max_value=timedelta(days=999))),
    st.tuples(st.just("string"), st.text(min_size=1)),
    st.tuples(st.just("entity_id"), st.from_regex(r"[A-Za-z][A-Za-z0-9_\-]{0,20}", fullmatch=True)),
)


@given(typed)
def test_values_round_trip_through_their_stored_json(pair):
    value_type, value = pair
    stored = orjson.loads(orjson.dumps(encode_value(value_type, value)))  # as a store would keep it
    back = decode_value(value_type, stored)
    assert type(back) is type(value) and back == value
    if value_type == "datetime":
        assert back.utcoffset() == value.utcoffset()
    assert coerce_value(value_type, back) == value


@given(decimals)
def test_numerically_equal_decimals_share_a_canonical_form(d):
    padded = Decimal(f"{d:.6f}")
    assert canonical_value("decimal", d) == canonical_value("decimal", padded)
    m1, m2 = Money(amount=d, currency="USD"), Money(amount=padded, currency="USD")
    assert canonical_value("money", m1) == canonical_value("money", m2)
    assert canonical_value("money", m1) != canonical_value("money", Money(amount=d, currency="EUR"))


@pytest.mark.parametrize(
    ("value_type", "value"),
    [
        ("bool", "false"),
        ("bool", 0),
        ("int", True),
        ("int", 50.0),
        ("int", Decimal("50.0")),
        ("int", "50"),
        ("decimal", 0.1),
        ("money", {"amount": 1.5, "currency": "USD"}),
        ("money", {"amount": "1", "currency": "usd"}),
        ("date", "25/03/2026"),
        ("datetime", datetime(2026, 1, 1)),
        ("duration", "7 days"),
        ("string", ""),
        ("string", 5),
        ("enum", "x"),
    ],
)
def test_lossy_or_ambiguous_conversions_are_refused(value_type, value):
    with pytest.raises(ValueMismatch):
        coerce_value(value_type, value, enum_values=("a", "b"))


def test_date_and_datetime_are_distinct():
    with pytest.raises(ValueMismatch):
        coerce_value("date", datetime(2026, 3, 25, tzinfo=UTC))
    assert coerce_value("date", date(2026, 3, 25)) == date(2026, 3, 25)
