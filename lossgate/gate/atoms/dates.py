"""Dates, times and date-times.

Keys:

* date: ``2026-03-25``; a date without a year is ``--03-06`` (or takes the
  year of ``reference_time``); a month and year is ``2026-03``.
* relative date without ``reference_time``: ``rel:+1d`` (tomorrow),
  ``rel:-3d`` (3 days ago), ``rel:+2mo`` (in 2 months), ``rel:next-mon``,
  ``rel:last-fri``, ``rel:this-wed``. With ``reference_time`` they resolve to
  a calendar date.
* time: ``14:32``, ``14:32:05``, ``14:32-05:00`` (zone abbreviations become
  offsets, see ``tables.ZONE_OFFSETS``), ``14:32 ET`` for generic zones,
  ``eod`` for end of day / close of business.
* datetime: ``<date key>T<time key>``, e.g. ``2026-03-14T14:32-05:00`` or
  ``2026-03-15Teod``, made when a date and a time are adjacent in the text.
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import date, datetime, timedelta
from typing import Literal

from .atom import AtomKind
from .patterns import WORD_CHAR, trie
from .tables import (
    EOD,
    GENERIC_ZONES,
    MONTHS,
    NUMBER_WORDS,
    WEEKDAY_ABBR,
    WEEKDAYS,
    ZONE_OFFSETS,
)

# "may" is a modal verb far more often than a month, so only "May" counts.
_MONTH_FORMS = {f for m in MONTHS for f in (m, m.capitalize(), m.upper())} - {"may"}
_MONTH = "(?:" + trie(_MONTH_FORMS) + ")"
_MONTH_AT_WORD = "(?:" + trie(_MONTH_FORMS, guard=WORD_CHAR) + ")"
_ORD = r"(?:st|nd|rd|th)?"
_YEAR = r"(?:,?[ \t]+(?P<{0}>[0-9]{{4}})(?![0-9]))"

#: Dates that start with a digit. The first digit is matched outside the
#: alternatives (``lead``) so the engine can skip to digits in C.
NUMERIC_DATE = re.compile(
    r"(?P<lead>[0-9])(?<![\w./:-][0-9])(?:"
    r"(?P<iy>[0-9]{3})(?P<isep>[-/.])(?P<im>[0-9]{1,2})(?P=isep)(?P<id>[0-9]{1,2})(?![0-9]|[/.:-][0-9])"
    r"|(?P<um>[0-9]?)/(?P<ud>[0-9]{1,2})/(?P<uy>[0-9]{4}|[0-9]{2})(?![0-9]|[/.:-][0-9])"
    r"|(?P<ed>[0-9]?)\.(?P<em>[0-9]{1,2})\.(?P<ey>[0-9]{4})(?![0-9]|[/.:-][0-9])"
    rf"|(?P<d2>[0-9]?){_ORD}[ \t]+(?:of[ \t]+)?(?P<m2>{_MONTH})\.?{_YEAR.format('y2')}?(?![\w])"
    # maybe the day or year after a month name ("March 6", "Mar. 6", "March, 2026"):
    # only after a letter that ends some month name, "." or ",", so that
    # "items 3" costs no look-back
    r"|(?:(?<=[ynhletrbgpvcYNHLETRBGPVC.,][ \t][0-9])|(?<=[ \t][ \t][0-9]))(?P<lone>[0-9]{0,3})(?![0-9])"
    r")"
)
#: A month name ending just before a number (searched in a short window).
MONTH_BEFORE = re.compile(rf"(?<![\w]){_MONTH}\.?,?[ \t]+$")
#: Dates that start with a month name; matched where MONTH_BEFORE finds one
#: in front of a number, since scanning the text for month names is slow.
NAMED_DATE = re.compile(
    rf"(?P<m>{_MONTH_AT_WORD})\.?(?:"
    rf"[ \t]+(?P<d1>[0-9]{{1,2}}){_ORD}(?![0-9:]|\.[0-9]){_YEAR.format('y1')}?"
    rf"|,?[ \t]+(?P<y3>[0-9]{{4}})"
    r")(?![\w])"
)
_WEEKDAY = "(?:" + trie(WEEKDAYS, fold=True) + ")"
_COUNT = "(?:[0-9]{1,3}|an?|" + trie(NUMBER_WORDS) + ")"
DAY_AFTER = re.compile(r"(?i)(?:the[ \t]+)?day[ \t]+(?P<dir>after|before)[ \t]+$")
#: Words that start or anchor a word-led temporal atom: relative day words,
#: weekday modifiers, time units (for "in 3 days", "a week ago", "seven
#: days") and time-of-day words. One trie pass finds them all; the caller
#: dispatches on the word (``LEAD_KIND``) and reads the rest with the small
#: patterns below. One pass over the text instead of five.
LEAD_KIND: dict[str, str] = {
    **dict.fromkeys(("today", "tonight", "tomorrow", "yesterday"), "day"),
    **dict.fromkeys(("next", "last", "this", "coming"), "weekday"),
    **dict.fromkeys(
        (
            "day",
            "days",
            "week",
            "weeks",
            "month",
            "months",
            "year",
            "years",
            "hour",
            "hours",
            "minute",
            "minutes",
            "second",
            "seconds",
        ),
        "unit",
    ),
    **dict.fromkeys(("noon", "midnight", "eod", "cob", "eob", "end", "close"), "clock"),
}
LEAD = re.compile(rf"(?P<lead>{trie(LEAD_KIND, fold=True, guard=WORD_CHAR)})(?![\w])")
#: after next / last / this / coming
WEEKDAY_TAIL = re.compile(rf"[ \t]+(?P<wd>{_WEEKDAY})(?![\w])")
#: after end / close
EOD_TAIL = re.compile(r"(?i)[ \t]+of[ \t]+(?:(?:the[ \t]+)?(?:business[ \t]+)?day|business)(?![\w])")
SPAN_HEAD = re.compile(
    rf"(?<![\w])(?:(?P<in>in)[ \t]+)?(?P<count>{_COUNT})(?:[ \t]*-[ \t]*|[ \t]+)"
    r"(?P<qual>(?:business|working|calendar)[ \t]+)?$",
    re.IGNORECASE,
)
SPAN_AGO = re.compile(r"[ \t]+ago(?![\w])")


_ZONE = "(?:" + trie(set(ZONE_OFFSETS) - {"Z"} | GENERIC_ZONES) + ")"
_OFFSET = r"(?:Z|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])"
_AMPM = r"(?:[ \t]*(?P<{}>[AaPp])\.?[Mm]\.?(?![\w]))"
_ZONE_TAIL = r"(?:[ \t]*(?P<zone>" + _ZONE + r")(?P<zoff>[+-][0-9]{1,2}(?::?[0-5][0-9])?)?(?![\w]))?"
#: 14:32 | 14:32:05 | 2:32 pm | 2pm | T14:32-05:00 | 14:32:00Z | 14:32 EST.
#: A numeric offset is read only after seconds or in an ISO "T" time, so the
#: range "10:30-11:30" stays two times. The caller validates the hour.
TIME = re.compile(
    r"(?P<h>[0-9](?:(?<=[0-9]T[0-9])|(?<![\w:.][0-9]))[0-9]?)(?:"
    r":(?P<mi>[0-5][0-9])"
    r"(?::(?P<s>[0-5][0-9])(?:\.[0-9]+)?(?P<off2>" + _OFFSET + r")?)?"
    r"(?:(?<=T[0-9]{2}:[0-9]{2})(?P<off1>" + _OFFSET + r"))?(?![0-9])" + _AMPM.format("ap") + "?"
    r"|" + _AMPM.format("ap2") + r")" + _ZONE_TAIL
)
#: A zone written after a time of day ("EOD EST")
ZONE_AFTER = re.compile(_ZONE_TAIL)

#: What may sit between a date and a time that belong together.
DATE_THEN_TIME = re.compile(r"(?i)T|[ \t]*,?[ \t]*(?:(?:at|@|by|from)[ \t]+)?")
TIME_THEN_DATE = re.compile(r"(?i)[ \t]*,?[ \t]*(?:(?:on|of)[ \t]+)?")


#: A date or time found by one of the patterns, before merging:
#: (kind, key, start, end).
Temporal = tuple[Literal["date", "time"], str, int, int]


def _valid(y: int, m: int, d: int) -> bool:
    return 1 <= y <= 9999 and 1 <= m <= 12 and 1 <= d <= monthrange(y, m)[1]


def _ymd(y: int | None, m: int, d: int, ref: datetime | None) -> str | None:
    """Key for a calendar date; year None means "not written"."""
    if y is None and ref is not None:
        y = ref.year
    if y is None:
        return f"--{m:02d}-{d:02d}" if _valid(2000, m, d) else None
    return f"{y:04d}-{m:02d}-{d:02d}" if _valid(y, m, d) else None


def numeric_date(m: re.Match[str], ref: datetime | None) -> str | None:
    """Key of a NUMERIC_DATE match. m/d/y is US order; if the month would
    exceed 12 but the day would not, the date is read as d/m/y instead."""
    lead = m["lead"]
    if m["iy"] is not None:
        return _ymd(int(lead + m["iy"]), int(m["im"]), int(m["id"]), None)
    if m["uy"] is not None:
        y = int(m["uy"]) + (2000 if len(m["uy"]) == 2 else 0)
        mo, d = int(lead + m["um"]), int(m["ud"])
        if mo > 12 >= d:
            mo, d = d, mo
        return _ymd(y, mo, d, None)
    if m["ey"] is not None:
        return _ymd(int(m["ey"]), int(m["em"]), int(lead + m["ed"]), None)
    year = m["y2"]
    return _ymd(int(year) if year else None, MONTHS[m["m2"].lower()], int(lead + m["d2"]), ref)


def named_date(m: re.Match[str], ref: datetime | None) -> str | None:
    """Key of a NAMED_DATE match ("March 25, 2026", "March 6", "March 2026")."""
    month = MONTHS[m["m"].lower()]
    if m["y3"]:
        y = int(m["y3"])
        return f"{y:04d}-{month:02d}" if y >= 1 else None
    year = m["y1"]
    return _ymd(int(year) if year else None, month, int(m["d1"]), ref)


def _count(word: str) -> int:
    w = word.lower()
    if w in ("a", "an"):
        return 1
    return NUMBER_WORDS[w] if w in NUMBER_WORDS else int(w)


def _add_months(d: date, n: int) -> date:
    y, mo = divmod(d.month - 1 + n, 12)
    y += d.year
    return date(y, mo + 1, min(d.day, monthrange(y, mo + 1)[1]))


def _resolve(days: int, months: int, ref: datetime | None) -> str:
    """The calendar date ``days`` or ``months`` from ``ref``'s date; without ``ref``, or where
    that date is not in the calendar (past 9999-12-31 or before 0001-01-01), the words as
    written (``rel:+1d``), so that a source and a summary that use them agree."""
    literal = f"rel:{months:+d}mo" if months else f"rel:{days:+d}d"
    if ref is None:
        return literal
    try:
        base = ref.date()
        return (_add_months(base, months) if months else base + timedelta(days=days)).isoformat()
    except (OverflowError, ValueError):
        return literal


def word_date(word: str, before: str | None, ref: datetime | None) -> str | None:
    """today / tonight / tomorrow / yesterday; ``before`` is "after" or
    "before" when the text says "the day after tomorrow" and the like."""
    days = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}[word.lower()]
    if before == "after" and days == 1:
        days = 2
    elif before == "before" and days == -1:
        days = -2
    return _resolve(days, 0, ref)


def weekday_date(modifier: str, weekday: str, ref: datetime | None) -> str | None:
    """Key of "next Monday" and the like. "next X" is the first X strictly
    after the reference day, "last X" the last one strictly before it,
    "this X" the first X on or after it; "coming" means "next"."""
    mod = modifier.lower()
    mod = "next" if mod == "coming" else mod
    wd = WEEKDAYS[weekday.lower()]
    literal = f"rel:{mod}-{WEEKDAY_ABBR[wd]}"
    if ref is None:
        return literal
    delta = (wd - ref.weekday()) % 7
    if mod == "next":
        days = delta or 7
    elif mod == "this":
        days = delta
    else:
        days = -((ref.weekday() - wd) % 7 or 7)
    resolved = _resolve(days, 0, ref)
    return literal if resolved.startswith("rel:") else resolved


def span_date(count: str, unit: str, sign: int, ref: datetime | None) -> str | None:
    """ "in 3 days" (sign +1) or "3 weeks ago" (sign -1); None for units
    that do not make a calendar date (hours, years ...)."""
    n = sign * _count(count)
    unit = unit.lower()
    if unit.startswith("month"):
        return _resolve(0, n, ref)
    if unit.startswith(("day", "week")):
        return _resolve(n * (7 if unit.startswith("week") else 1), 0, ref)
    return None


def _offset(raw: str) -> str:
    """'+0530' / '+05:30' / 'Z' -> '+05:30'."""
    if raw == "Z":
        return "+00:00"
    digits = raw[1:].replace(":", "")
    return f"{raw[0]}{digits[:2]}:{digits[2:4]}"


def _zone(m: re.Match[str], clock: str) -> str:
    """``clock`` with the zone of ``m`` (groups zone, zoff) appended."""
    zone = m["zone"]
    if not zone:
        return clock
    if m["zoff"]:  # "UTC+2", "GMT-05:30"
        sign, rest = m["zoff"][0], m["zoff"][1:].replace(":", "")
        hh, mm = (rest[:-2], rest[-2:]) if len(rest) > 2 else (rest, "00")
        return clock + f"{sign}{int(hh):02d}:{mm}"
    if zone in ZONE_OFFSETS:
        return clock + ZONE_OFFSETS[zone]
    return f"{clock} {zone}"


def time_key(m: re.Match[str]) -> str | None:
    """Key of a TIME match (see module docstring); None if not a real time."""
    h = int(m["h"])
    mi = int(m["mi"] or 0)
    ap = m["ap2"] if m["mi"] is None else m["ap"]
    if ap and 1 <= h <= 12:
        h = h % 12 + (12 if ap.lower() == "p" else 0)
    elif ap and m["mi"] is None:
        return None  # "13pm", "0 am"
    if h > 23:
        return None
    return _plain(m, h, mi)


def _plain(m: re.Match[str], h: int, mi: int) -> str:
    s = m["s"]
    clock = f"{h:02d}:{mi:02d}" + (f":{s}" if s and s != "00" else "")
    off = m["off1"] or m["off2"]
    if off:
        return clock + _offset(off)
    return _zone(m, clock)


def clock_word_key(word: str, zone: re.Match[str]) -> str:
    """Key of a time-of-day word ("noon", "EOD", "end of day"): "12:00",
    "00:00" or "eod", plus the zone read by ZONE_AFTER right after it."""
    word = word.lower()
    clock = "12:00" if word == "noon" else "00:00" if word == "midnight" else EOD
    return _zone(zone, clock)


def merge(found: list[Temporal], text: str) -> list[tuple[AtomKind, str, int, int]]:
    """Join each date with an adjacent time into a datetime (key
    ``<date>T<time>``); what may sit between them is DATE_THEN_TIME or
    TIME_THEN_DATE. Returns (kind, key, start, end) tuples in text order."""
    found = sorted(found, key=lambda t: t[2])
    out: list[tuple[AtomKind, str, int, int]] = []
    i, n = 0, len(found)
    while i < n:
        a = found[i]
        if i + 1 < n:
            b = found[i + 1]
            if a[0] != b[0] and b[2] - a[3] < 16:
                gap = DATE_THEN_TIME if a[0] == "date" else TIME_THEN_DATE
                if gap.fullmatch(text, a[3], b[2]):
                    d, t = (a, b) if a[0] == "date" else (b, a)
                    out.append(("datetime", f"{d[1]}T{t[1]}", a[2], b[3]))
                    i += 2
                    continue
        out.append(a)
        i += 1
    return out
