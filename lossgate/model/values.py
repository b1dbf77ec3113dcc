"""Typed fact values.

A fact's value has one of ten types, declared by its predicate. Values keep
their type from input to storage and back (invariant 9): ``False`` is not
``"false"``, ``50`` is not ``50.0``, money is a decimal amount with an ISO 4217
currency, datetimes keep their UTC offset.

Three forms exist for each value:

* the **Python** form a caller works with (``bool``, ``int``, ``Decimal``,
  :class:`Money`, ``date``, ``datetime``, ``timedelta``, ``str``);
* the **stored** JSON form (:func:`encode_value`), exact and reversible
  (:func:`decode_value`): ``Decimal("14250.00")`` is stored as ``"14250.00"``;
* the **canonical** JSON form (:func:`canonical_value`), used for hashing and
  equality, where numerically equal decimals agree (``"14250"``).

:func:`coerce_value` turns caller input into the Python form. It accepts the
spellings JSON forces on a caller (an ISO string for a date, a string or
number for a decimal) and refuses any conversion that could change meaning:
a bool for an int, a float for a decimal, a string for a bool.

A duration is read one way: ISO 8601 in weeks, days, hours, minutes and seconds
(``P7D``, ``PT1H30M``, ``P1W2D``), whole numbers but for the seconds, which may have a
fraction of up to six digits (``PT0.25S``), and an optional ``-`` in front that negates
all of it (``-P1DT2H``). Anything else is refused rather than re-read: a fraction of a
larger unit (``P1.5D``), a finer fraction, a sign inside (``P-1D``) or a ``+``, years and
months (their length varies). Its stored form is canonical and means the same: days,
hours, minutes and seconds, a week as 7 days, 24 hours as a day (``PT36H`` is stored as
``P1DT12H``), zero as ``PT0S``.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, TypeAdapter

from lossgate.model.instants import instant_problem, written_problem
from lossgate.model.limits import id_problem

_DECIMAL_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

__all__ = [
    "stored_form",
    "stored_claims",
    "Money",
    "ValueType",
    "VALUE_TYPES",
    "ValueMismatch",
    "coerce_value",
    "encode_value",
    "decode_value",
    "canonical_value",
    "describe_type",
]

ValueType = Literal["bool", "int", "decimal", "money", "date", "datetime", "duration", "string", "enum", "entity_id"]
VALUE_TYPES: tuple[str, ...] = get_args(ValueType)

_SAFE_INT = 2**53 - 1
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_DURATION = TypeAdapter(timedelta)
# Bounds that keep a decimal's canonical (plain) form short: 1e400000000 is not a price.
_MAX_EXPONENT = 100
_MAX_DIGITS = 100
# A duration as lossgate reads it: ISO 8601 in weeks, days, hours, minutes and seconds, with
# an optional "-" in front that negates the whole of it. Whole numbers only, ASCII digits,
# but for a fraction of a second of up to six digits (a microsecond, what a timedelta
# holds): a fraction of a larger unit or a finer one would be read as something else than
# was written. Years and months, whose length varies, are refused, as is a sign anywhere
# else.
_ISO_DURATION = re.compile(
    r"(?P<sign>-?)P(?:(?P<weeks>[0-9]+)W)?(?:(?P<days>[0-9]+)D)?"
    r"(?:T(?=[0-9])(?:(?P<hours>[0-9]+)H)?(?:(?P<minutes>[0-9]+)M)?"
    r"(?:(?P<seconds>[0-9]+)(?:\.(?P<fraction>[0-9]{1,6}))?S)?)?"
)
_DURATION_FORM = "an ISO 8601 duration like 'P7D', 'PT1H30M' or '-PT0.5S'"


class Money(BaseModel):
    """A decimal amount in an ISO 4217 currency. Equal when amount and currency are equal."""

    model_config = ConfigDict(frozen=True)

    amount: Decimal
    currency: str

    def __str__(self) -> str:
        return f"{self.amount} {self.currency}"


class ValueMismatch(ValueError):
    """Raised by :func:`coerce_value`; the caller adds the fact and predicate to the message."""


def describe_type(value: Any) -> str:
    """A short name for the received value's type, for error messages."""
    if isinstance(value, BaseModel):
        return type(value).__name__
    return {
        bool: "bool",
        int: "int",
        float: "float",
        str: "string",
        dict: "object",
        list: "array",
        type(None): "null",
        Decimal: "decimal",
    }.get(type(value), type(value).__name__)


def _decimal(value: Any) -> Decimal:
    t = type(value)
    d: Decimal
    if t is bool or t is float:
        # A float has already lost the decimal the user wrote; refuse rather than guess.
        raise ValueMismatch(f"got {describe_type(value)}")
    if t is Decimal:
        d = value
    elif t is int:
        d = Decimal(value)
    elif t is str:
        # As JSON writes a number, in ASCII digits: Decimal() would also read " 5 ", "5_000"
        # and other scripts' digits, each silently a different text than the one stored.
        if not _DECIMAL_TEXT.fullmatch(value):
            raise ValueMismatch(f"got string {value!r}, not a decimal number as JSON writes one (-12.50, 1e-3)")
        try:
            d = Decimal(value)
        except InvalidOperation:
            raise ValueMismatch(f"got string {value!r}") from None
    else:
        raise ValueMismatch(f"got {describe_type(value)}")
    if not d.is_finite():
        raise ValueMismatch(f"got a non-finite decimal {value!r}")
    if abs(d.adjusted()) > _MAX_EXPONENT or len(d.as_tuple().digits) > _MAX_DIGITS:
        raise ValueMismatch(
            f"decimal {value!r} is out of range (|exponent| <= {_MAX_EXPONENT}, <= {_MAX_DIGITS} digits)"
        )
    return d


def _money(value: Any) -> Money:
    if type(value) is Money:
        return value
    if isinstance(value, dict):
        if set(value) != {"amount", "currency"}:
            raise ValueMismatch(f"money needs exactly 'amount' and 'currency', got keys {sorted(value)}")
        currency = value["currency"]
        if not isinstance(currency, str) or not _CURRENCY.match(currency):
            raise ValueMismatch(f"currency must be an ISO 4217 code like 'USD', got {currency!r}")
        return Money(amount=_decimal(value["amount"]), currency=currency)
    raise ValueMismatch(f"got {describe_type(value)}")


def _datetime(value: Any) -> datetime:
    if type(value) is str:
        if (problem := written_problem(value)) is not None:  # the parser would round it silently
            raise ValueMismatch(problem)
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueMismatch(f"got string {value!r}, not an ISO 8601 datetime") from None
    if not isinstance(value, datetime):
        raise ValueMismatch(f"got {describe_type(value)}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueMismatch("datetime has no UTC offset (naive datetimes are ambiguous)")
    if (problem := instant_problem(value)) is not None:
        raise ValueMismatch(problem)
    return value


def _date(value: Any) -> date:
    if type(value) is str:
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise ValueMismatch(f"got string {value!r}, not an ISO 8601 date") from None
    if type(value) is date:
        return value
    raise ValueMismatch(f"got {describe_type(value)}")


def _duration(value: Any) -> timedelta:
    if type(value) is timedelta:
        return value
    if type(value) is str:
        return _read_duration(value)
    raise ValueMismatch(f"got {describe_type(value)}")


def _read_duration(text: str) -> timedelta:
    """``text`` in the grammar of :data:`_ISO_DURATION` as a timedelta (a week is 7 days, a day
    24 hours), or :class:`ValueMismatch`. Whatever it accepts is stored as written or in
    the canonical form of :func:`_iso_duration`, which means the same."""
    found = _ISO_DURATION.fullmatch(text)
    if found is None or not any(found.group(unit) for unit in ("weeks", "days", "hours", "minutes", "seconds")):
        raise ValueMismatch(
            f"got string {_shown(text)}, not {_DURATION_FORM} (whole numbers, a fraction "
            "only of seconds and to the microsecond, a sign only in front)"
        )
    try:
        parts = {unit: int(found.group(unit) or 0) for unit in ("weeks", "days", "hours", "minutes", "seconds")}
        micro = int((found.group("fraction") or "").ljust(6, "0"))
        magnitude = timedelta(**parts, microseconds=micro)
    except (ValueError, OverflowError):  # past timedelta's 999,999,999 days, or digits past int's limit
        raise ValueMismatch(f"duration {_shown(text)} is out of range (at most 999,999,999 days)") from None
    return -magnitude if found.group("sign") else magnitude


def _shown(text: str, limit: int = 60) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _text(value: Any) -> str:
    if type(value) is not str:
        raise ValueMismatch(f"got {describe_type(value)}")
    if not value:
        raise ValueMismatch("got an empty string")
    return value


def coerce_value(value_type: str, value: Any, *, enum_values: tuple[str, ...] = ()) -> Any:
    """Return ``value`` in the Python form of ``value_type``, or raise :class:`ValueMismatch`."""
    if value_type == "bool":
        if type(value) is not bool:
            raise ValueMismatch(f"got {describe_type(value)}")
        return value
    if value_type == "int":
        if type(value) is not int:
            raise ValueMismatch(f"got {describe_type(value)}")
        if not -_SAFE_INT <= value <= _SAFE_INT:
            raise ValueMismatch("int outside +/-2**53 (use a decimal predicate)")
        return value
    if value_type == "decimal":
        return _decimal(value)
    if value_type == "money":
        return _money(value)
    if value_type == "date":
        return _date(value)
    if value_type == "datetime":
        return _datetime(value)
    if value_type == "duration":
        return _duration(value)
    if value_type == "string":
        return _text(value)
    if value_type == "enum":
        text = _text(value)
        if text not in enum_values:
            raise ValueMismatch(f"{text!r} is not one of {list(enum_values)}")
        return text
    if value_type == "entity_id":
        text = _text(value)
        if (problem := id_problem(text, slash=True)) is not None:  # an id's rule; a "/" may name a path
            raise ValueMismatch(f"entity id {ascii(text)} {problem}")
        return text
    raise ValueMismatch(f"unknown value type {value_type!r}")


def encode_value(value_type: str, value: Any) -> Any:
    """The exact, reversible JSON form of a coerced value."""
    if value_type in ("bool", "int", "string", "enum", "entity_id"):
        return value
    if value_type == "decimal":
        return str(value)
    if value_type == "money":
        return {"amount": str(value.amount), "currency": value.currency}
    if value_type in ("date", "datetime"):
        return value.isoformat()
    if value_type == "duration":
        return _iso_duration(value)
    raise ValueMismatch(f"unknown value type {value_type!r}")


def _iso_duration(td: timedelta) -> str:
    """ISO 8601 in days, hours, minutes and seconds only: no years or months, whose
    length is ambiguous (pydantic writes 365 days as ``P1Y``)."""
    sign = "-" if td < timedelta(0) else ""
    td = abs(td)
    days, rest = td.days, td.seconds
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    out = f"{sign}P" + (f"{days}D" if days else "")
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds or td.microseconds:
        frac = f".{td.microseconds:06d}".rstrip("0") if td.microseconds else ""
        clock += f"{seconds}{frac}S"
    if clock:
        out += "T" + clock
    return out if out not in ("P", "-P") else "PT0S"


def decode_value(value_type: str, stored: Any) -> Any:
    """Inverse of :func:`encode_value`."""
    if value_type == "decimal":
        return Decimal(stored)
    if value_type == "money":
        return Money(amount=Decimal(stored["amount"]), currency=stored["currency"])
    if value_type == "date":
        return date.fromisoformat(stored)
    if value_type == "datetime":
        return datetime.fromisoformat(stored)
    if value_type == "duration":
        return _DURATION.validate_python(stored)
    return stored


def _plain_decimal(d: Decimal) -> str:
    """``Decimal('14250.00')`` and ``Decimal('1.425E+4')`` both become ``'14250'``."""
    text = format(d.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def canonical_value(value_type: str, value: Any) -> Any:
    """The JSON form used for hashing and equality: equal meaning, equal form."""
    if value_type == "decimal":
        return _plain_decimal(value)
    if value_type == "money":
        return {"amount": _plain_decimal(value.amount), "currency": value.currency}
    return encode_value(value_type, value)


_FINER_THAN_MICROSECONDS = re.compile(r"\.\d{7,}")


def stored_form(value_type: str, value: Any) -> Any:
    """``value`` in the exact stored form of ``value_type`` (:func:`encode_value` of its typed
    value) when it reads as that type; otherwise ``value`` as it is, never guessed at. A
    time or duration written finer than a microsecond is kept as written: its typed value
    would round it."""
    if value is None or value_type not in VALUE_TYPES:
        return value
    if value_type in ("datetime", "duration") and isinstance(value, str) and _FINER_THAN_MICROSECONDS.search(value):
        return value
    try:
        # an enum's membership is the registry's business; here only its spelling
        typed = coerce_value("string" if value_type == "enum" else value_type, value)
    except (ValueMismatch, TypeError, ValueError, AttributeError, ArithmeticError):
        return value
    return encode_value(value_type, typed)


def stored_claims(body: Any) -> Any:
    """An :class:`~lossgate.model.records.ArtifactBody` whose claim values are in their stored form."""
    claims = tuple(c.model_copy(update={"value": stored_form(c.value_type, c.value)}) for c in body.claims)
    return body if claims == body.claims else body.model_copy(update={"claims": claims})
