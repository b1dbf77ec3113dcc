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
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from .patterns import _alt
from .tables import EOD, GENERIC_ZONES, MONTHS, NUMBER_WORDS, WEEKDAY_ABBR, WEEKDAYS, ZONE_OFFSETS

# "may" is a modal verb far more often than a month, so only "May" counts.
_MONTH = "(?:(?i:" + _alt(m for m in MONTHS if m != "may") + ")|May|MAY)"
_ORD = r"(?:st|nd|rd|th)?"
_Y = r"(?P<{}>[0-9]{{4}})(?![0-9])"

NUMERIC_DATE = re.compile(
    r"(?<![\w./:-])(?:"
    r"(?P<iy>[0-9]{4})(?P<isep>[-/.])(?P<im>[0-9]{1,2})(?P=isep)(?P<id>[0-9]{1,2})"
    r"|(?P<um>[0-9]{1,2})/(?P<ud>[0-9]{1,2})/(?P<uy>[0-9]{4}|[0-9]{2})"
    r"|(?P<ed>[0-9]{1,2})\.(?P<em>[0-9]{1,2})\.(?P<ey>[0-9]{4})"
    r")(?![0-9]|[/.:-][0-9])"
)
NAMED_DATE = re.compile(
    r"(?<![\w])(?:"
    rf"(?P<m1>{_MONTH})\.?[ \t]+(?P<d1>[0-9]{{1,2}}){_ORD}(?![0-9:]|\.[0-9])"
    rf"(?:,?[ \t]+{_Y.format('y1')})?"
    rf"|(?P<d2>[0-9]{{1,2}}){_ORD}[ \t]+(?:of[ \t]+)?(?P<m2>{_MONTH})\.?"
    rf"(?:,?[ \t]+{_Y.format('y2')})?"
    rf"|(?P<m3>{_MONTH})\.?,?[ \t]+{_Y.format('y3')}"
    r")(?![\w])"
)
_WEEKDAY = "(?:" + _alt(WEEKDAYS) + ")"
_COUNT = "(?:[0-9]{1,3}|an?|" + _alt(NUMBER_WORDS) + ")"
RELATIVE_DATE = re.compile(
    r"(?i)(?<![\w])(?:"
    r"(?P<dat>(?:the[ \t]+)?day[ \t]+after[ \t]+tomorrow)"
    r"|(?P<dby>(?:the[ \t]+)?day[ \t]+before[ \t]+yesterday)"
    r"|(?P<word>today|tonight|tomorrow|yesterday)"
    rf"|(?P<mod>next|last|this|coming)[ \t]+(?P<wd>{_WEEKDAY})"
    rf"|in[ \t]+(?P<inn>{_COUNT})[ \t]+(?P<inu>days?|weeks?|months?)"
    rf"|(?P<agon>{_COUNT})[ \t]+(?P<agou>days?|weeks?|months?)[ \t]+ago"
    r")(?![\w])"
)

_ZONE = "(?:" + _alt(set(ZONE_OFFSETS) - {"Z"} | GENERIC_ZONES) + ")"
_OFFSET = r"(?:Z|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])"
_SECS = r"(?::(?P<{}>[0-5][0-9])(?:\.[0-9]+)?)"
_AMPM = r"(?:[ \t]*(?P<{}>[AaPp])\.?[Mm]\.?(?![\w]))"
# A numeric offset is only read after an ISO "T" or after seconds, so the
# range "10:30-11:30" stays two times.
TIME = re.compile(
    r"(?:(?<=[0-9]T)(?P<th>[01][0-9]|2[0-3]):(?P<tmi>[0-5][0-9])"
    + _SECS.format("ts") + rf"?(?P<off1>{_OFFSET})?(?![0-9])"
    r"|(?<![\w:.])(?P<h>[01]?[0-9]|2[0-3]):(?P<mi>[0-5][0-9])"
    + "(?:" + _SECS.format("s") + rf"(?P<off2>{_OFFSET})?)?(?![0-9])"
    + _AMPM.format("ap") + "?"
    r"|(?<![\w:.])(?P<h12>1[0-2]|0?[1-9])" + _AMPM.format("ap2")
    + r"|(?<![\w])(?P<word>(?i:noon|midnight))(?![\w])"
    r"|(?<![\w])(?P<eod>(?i:eod)|COB|EOB|(?i:(?:the[ \t]+)?end[ \t]+of[ \t]+(?:the[ \t]+)?"
    r"(?:business[ \t]+)?day|close[ \t]+of[ \t]+business))(?![\w])"
    r")(?:[ \t]*(?P<zone>" + _ZONE + r")(?P<zoff>[+-][0-9]{1,2}(?::?[0-5][0-9])?)?(?![\w]))?"
)

#: What may sit between a date and a time that belong together.
DATE_THEN_TIME = re.compile(r"(?i)T|[ \t]*,?[ \t]*(?:(?:at|@|by|from)[ \t]+)?")
TIME_THEN_DATE = re.compile(r"(?i)[ \t]*,?[ \t]*(?:(?:on|of)[ \t]+)?")


@dataclass(frozen=True, slots=True)
class Temporal:
    """A date or time found by one of the patterns, before merging."""

    kind: str  # "date" | "time"
    key: str
    start: int
    end: int


def _valid(y: int, m: int, d: int) -> bool:
    return 1 <= y <= 9999 and 1 <= m <= 12 and 1 <= d <= monthrange(y, m)[1]


def _ymd(y: int | None, m: int, d: int, ref: datetime | None) -> str | None:
    """Key for a calendar date; year None means "not written"."""
    if y is None and ref is not None:
        y = ref.year
    if y is None:
        return f"--{m:02d}-{d:02d}" if _valid(2000, m, d) else None
    return f"{y:04d}-{m:02d}-{d:02d}" if _valid(y, m, d) else None


def numeric_date(m: re.Match[str]) -> str | None:
    """Key of a NUMERIC_DATE match. m/d/y is US order; if the month would
    exceed 12 but the day would not, the date is read as d/m/y instead."""
    if m["iy"]:
        return _ymd(int(m["iy"]), int(m["im"]), int(m["id"]), None)
    if m["uy"]:
        y = int(m["uy"])
        y = y + 2000 if len(m["uy"]) == 2 else y
        mo, d = int(m["um"]), int(m["ud"])
        if mo > 12 >= d:
            mo, d = d, mo
        return _ymd(y, mo, d, None)
    return _ymd(int(m["ey"]), int(m["em"]), int(m["ed"]), None)


def named_date(m: re.Match[str], ref: datetime | None) -> str | None:
    """Key of a NAMED_DATE match ("March 25, 2026", "25 March", "March 2026")."""
    if m["m3"]:
        y = int(m["y3"])
        return f"{y:04d}-{MONTHS[m['m3'].lower()]:02d}" if y >= 1 else None
    month = MONTHS[(m["m1"] or m["m2"]).lower()]
    day = int(m["d1"] or m["d2"])
    year = m["y1"] or m["y2"]
    return _ymd(int(year) if year else None, month, day, ref)


def _count(word: str) -> int:
    w = word.lower()
    if w in ("a", "an"):
        return 1
    return NUMBER_WORDS[w] if w in NUMBER_WORDS else int(w)


def _add_months(d: date, n: int) -> date:
    y, mo = divmod(d.month - 1 + n, 12)
    y += d.year
    return date(y, mo + 1, min(d.day, monthrange(y, mo + 1)[1]))


def relative_date(m: re.Match[str], ref: datetime | None) -> str | None:
    """Key of a RELATIVE_DATE match, resolved against ``ref`` when given.

    "next X" is the first X strictly after the reference day, "last X" the
    last one strictly before it, "this X" the first X on or after it.
    """
    days: int | None = None
    months = 0
    if m["dat"]:
        days = 2
    elif m["dby"]:
        days = -2
    elif m["word"]:
        days = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}[m["word"].lower()]
    elif m["wd"]:
        mod = m["mod"].lower()
        mod = "next" if mod == "coming" else mod
        wd = WEEKDAYS[m["wd"].lower()]
        if ref is None:
            return f"rel:{mod}-{WEEKDAY_ABBR[wd]}"
        delta = (wd - ref.weekday()) % 7
        if mod == "next":
            days = delta or 7
        elif mod == "this":
            days = delta
        else:
            days = -((ref.weekday() - wd) % 7 or 7)
    else:
        n = _count(m["inn"] or m["agon"])
        unit = (m["inu"] or m["agou"]).lower()
        sign = 1 if m["inn"] else -1
        if unit.startswith("month"):
            months = sign * n
        else:
            days = sign * n * (7 if unit.startswith("week") else 1)
    if ref is None:
        return f"rel:{months:+d}mo" if months else f"rel:{days:+d}d"
    try:
        base = ref.date()
        out = _add_months(base, months) if months else base + timedelta(days=days or 0)
    except (OverflowError, ValueError):
        return None
    return out.isoformat()


def _offset(raw: str) -> str:
    """'+0530' / '+05:30' / 'Z' -> '+05:30'."""
    if raw == "Z":
        return "+00:00"
    digits = raw[1:].replace(":", "")
    return f"{raw[0]}{digits[:2]}:{digits[2:4]}"


def time_key(m: re.Match[str]) -> str | None:
    """Key of a TIME match (see module docstring)."""
    if m["eod"]:
        clock = EOD
    elif m["word"]:
        clock = "12:00" if m["word"].lower() == "noon" else "00:00"
    else:
        if m["h12"]:
            h, mi, s, ap = int(m["h12"]), 0, None, m["ap2"]
        elif m["th"]:
            h, mi, s, ap = int(m["th"]), int(m["tmi"]), m["ts"], None
        else:
            h, mi, s, ap = int(m["h"]), int(m["mi"]), m["s"], m["ap"]
        if ap and 1 <= h <= 12:
            h = h % 12 + (12 if ap.lower() == "p" else 0)
        elif ap and h == 0:
            return None  # "0 pm" is not a time
        clock = f"{h:02d}:{mi:02d}" + (f":{s}" if s and s != "00" else "")
    off = m["off1"] or m["off2"]
    if off:
        return clock + _offset(off)
    zone = m["zone"]
    if zone:
        if m["zoff"]:  # "UTC+2", "GMT-05:30"
            sign, rest = m["zoff"][0], m["zoff"][1:].replace(":", "")
            hh, mm = rest[:-2] if len(rest) > 2 else rest, rest[-2:] if len(rest) > 2 else "00"
            return clock + f"{sign}{int(hh):02d}:{mm}"
        if zone in ZONE_OFFSETS:
            return clock + ZONE_OFFSETS[zone]
        return f"{clock} {zone}"
    return clock


def merge(found: list[Temporal], text: str) -> list[tuple[str, str, int, int]]:
    """Join each date with an adjacent time into a datetime.

    Returns (kind, key, start, end) tuples. A lone end-of-day marker becomes
    a datetime on the relative day ``rel:+0d`` (callers resolve it).
    """
    found = sorted(found, key=lambda t: t.start)
    out: list[tuple[str, str, int, int]] = []
    i = 0
    while i < len(found):
        a = found[i]
        b = found[i + 1] if i + 1 < len(found) else None
        if b is not None and a.kind != b.kind:
            gap = DATE_THEN_TIME if a.kind == "date" else TIME_THEN_DATE
            if gap.fullmatch(text, a.end, b.start):
                d, t = (a, b) if a.kind == "date" else (b, a)
                out.append(("datetime", f"{d.key}T{t.key}", a.start, b.end))
                i += 2
                continue
        out.append((a.kind, a.key, a.start, a.end))
        i += 1
    return out
