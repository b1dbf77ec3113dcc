"""The instants lossgate accepts, and date arithmetic that never leaves them.

An instant lossgate keeps (an event's ``occurred_at``, a fact's ``valid_from``, a taint
policy's ``created_at``, a datetime fact value, the clock a command is told to use) is an
aware datetime whose UTC instant lies from :data:`EARLIEST` to :data:`LATEST`: from
0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, the instants that have a UTC form
in Python's calendar. ``9999-12-31T23:59:59-05:00`` is 10000-01-01 in UTC and is refused;
so is ``0001-01-01T00:00:00+05:00`` (0000-12-31 in UTC). Within the range every instant
has both a local and a UTC date, so a reader that groups by either never fails.

What is computed from an accepted instant stays total at both ends: a span before or
after it saturates at the range's end (:func:`before`, :func:`after`), and a calendar
date that a relative word would name past year 9999 or before year 1 ("tomorrow" said on
9999-12-31) is no date: the gate's extractor then keys the word as it is written
(``rel:+1d``), on the source and the summary alike.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

__all__ = [
    "EARLIEST",
    "LATEST",
    "SPAN_DAYS",
    "Instant",
    "instant_problem",
    "read_instant",
    "checked_instant",
    "before",
    "after",
    "utc",
    "shift_date",
    "written_problem",
]

EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)
#: The days from the first instant to the last: no span lossgate keeps is longer.
SPAN_DAYS = (LATEST - EARLIEST).days + 1


# Written text that a parser would silently round: a fraction of a second finer than a
# microsecond, an offset with seconds (Python reads "-00:00:00.000001" as +00:00).
_TOO_FINE = re.compile(r"[.,][0-9]{7,}")
_OFFSET_SECONDS = re.compile(r"[+-][0-9]{2}:?[0-9]{2}:[0-9]")
_DATE_FIRST = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def written_problem(text: str) -> str | None:
    """Why ISO 8601 ``text`` would not read back as written (a fraction of a second finer than
    a microsecond, an offset in seconds), or ``None``."""
    if _TOO_FINE.search(text):
        return f"{text!r} has a fraction of a second finer than a microsecond"
    if _OFFSET_SECONDS.search(text):
        return f"{text!r} has a UTC offset in seconds; an offset is hours and minutes"
    return None


def instant_problem(value: datetime) -> str | None:
    """Why ``value`` is not an instant lossgate keeps (no UTC offset, an offset that is not a
    whole number of minutes, as ISO 8601 writes them, or a UTC form outside years 1 to 9999),
    or ``None``."""
    offset = value.utcoffset() if value.tzinfo is not None else None
    if offset is None:
        return "must carry a UTC offset (a naive time is ambiguous)"
    if offset % timedelta(minutes=1):
        return f"has a UTC offset of {offset}, which is not a whole number of minutes"
    try:
        value.astimezone(UTC)
    except OverflowError:
        return (
            f"{value.isoformat()} is outside the instants lossgate keeps: its UTC time must lie from "
            f"{EARLIEST.isoformat()} to {LATEST.isoformat()}"
        )
    return None


def _validate(value: datetime) -> datetime:
    problem = instant_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _written(value: Any) -> Any:
    """What a time may be written as: a datetime or ISO 8601 text, never a number (a count of
    seconds says no offset), nor text with digits a parser would drop."""
    if isinstance(value, (int, float)):
        raise ValueError("a time is ISO 8601 text with a UTC offset, not a number")
    if isinstance(value, str):
        if not _DATE_FIRST.match(value):  # pydantic would read "1700000000" as a count of seconds
            raise ValueError(f"{value[:40]!r} is not ISO 8601 text (YYYY-MM-DDThh:mm:ss with a UTC offset)")
        if (problem := written_problem(value)) is not None:
            raise ValueError(problem)
    return value


Instant = Annotated[datetime, BeforeValidator(_written), AfterValidator(_validate)]
"""A pydantic field type: an aware datetime within :data:`EARLIEST` and :data:`LATEST`, given
as a datetime or as ISO 8601 text (never a number)."""


def read_instant(text: str) -> datetime:
    """ISO 8601 ``text`` as an instant lossgate keeps; ``ValueError`` saying why it is not one."""
    _written(text)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time") from None
    return _validate(value)


def checked_instant(value: Any, name: str) -> datetime:
    """``value`` if it is an instant lossgate keeps; else :class:`~lossgate.errors.InvalidInput`
    naming ``name`` (for plain arguments of the Python API and the CLI's options)."""
    from lossgate.errors import InvalidInput

    if not isinstance(value, datetime):
        raise InvalidInput(f"{name} must be a datetime, got {type(value).__name__}")
    problem = instant_problem(value)
    if problem is not None:
        raise InvalidInput(f"{name} {problem}")
    return value


def utc(value: datetime) -> datetime:
    """``value`` in UTC, saturated at the range's ends (a value a store read back from before
    the range was enforced may lie outside it)."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return LATEST if value.year == datetime.max.year else EARLIEST


def before(value: datetime, span: timedelta) -> datetime:
    """``value - span``, or :data:`EARLIEST` (:data:`LATEST` for a negative span) where that
    leaves the range."""
    try:
        return utc(value) - span
    except OverflowError:
        return EARLIEST if span > timedelta(0) else LATEST


def after(value: datetime, span: timedelta) -> datetime:
    """``value + span``, saturated as :func:`before` is."""
    try:
        return utc(value) + span
    except OverflowError:
        return LATEST if span > timedelta(0) else EARLIEST


def shift_date(day: date, days: int) -> date | None:
    """``day`` moved by ``days``, or ``None`` where that is no calendar date (before year 1 or
    after year 9999)."""
    try:
        return day + timedelta(days=days)
    except OverflowError:
        return None
