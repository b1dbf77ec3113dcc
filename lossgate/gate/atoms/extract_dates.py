"""The date and time pass of the extractor (keys: see :mod:`.dates`).

Dates and times are claimed first among the numeric atoms, then each date
adjacent to a time is merged into a datetime that also owns the gap between
them ("2026-03-14 at 14:32").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from . import dates as T
from . import patterns as P
from .claims import Claims
from .tables import EOD, NUMBER_WORDS

_WS = re.compile(r"[ \t]+")


def temporal_pass(text: str, c: Claims, ref: datetime | None) -> None:
    """Claim the dates, times and datetimes of ``text`` (resolving relative
    ones against ``ref`` when given) and record them in ``c.found``."""
    found: list[T.Temporal] = []

    def add(kind: Literal["date", "time"], key: str | None, start: int, end: int) -> None:
        if key is not None and c.take(kind, "", start, end):
            found.append((kind, key, start, end))

    for m in T.NUMERIC_DATE.finditer(text):
        if m["lone"] is None:
            add("date", T.numeric_date(m, ref), m.start(), m.end())
            continue
        month = T.MONTH_BEFORE.search(text, max(0, m.start() - 12), m.start())
        named = T.NAMED_DATE.match(text, month.start()) if month else None
        if named is not None and named.end() >= m.end():
            add("date", T.named_date(named, ref), named.start(), named.end())
    for m in T.LEAD.finditer(text):
        _lead(text, m, c, ref, add)
    for m in T.TIME.finditer(text):
        add("time", T.time_key(m), m.start(), m.end())
    today = ref.date().isoformat() if ref is not None else "rel:+0d"
    for kind, key, start, end in T.merge(found, text):
        if kind == "time" and key.startswith(EOD):
            kind, key = "datetime", f"{today}T{key}"  # "by EOD" means today
        c.mask[start:end] = b"\x01" * (end - start)  # a datetime also owns the gap
        c.found.append((kind, key, start, end))


_Add = Callable[[Literal["date", "time"], "str | None", int, int], None]


def _lead(text: str, m: re.Match[str], c: Claims, ref: datetime | None, add: _Add) -> None:
    """One word found by ``T.LEAD``: read the temporal atom it starts."""
    word = m["lead"]
    kind = T.LEAD_KIND[word.lower()]
    start, end = m.start(), m.end()
    if kind == "day":  # today, tomorrow ... (or "the day after tomorrow")
        back = T.DAY_AFTER.search(text, max(0, start - 24), start)
        if back is not None and c.word_start(back.start()):
            start = back.start()
        add("date", T.word_date(word, back["dir"].lower() if back else None, ref), start, end)
    elif kind == "weekday":  # next Monday
        tail = T.WEEKDAY_TAIL.match(text, end)
        if tail is not None:
            add("date", T.weekday_date(word, tail["wd"], ref), start, tail.end())
    elif kind == "unit":
        _span(text, m, c, ref, add)
    else:  # noon, midnight, EOD, COB, end of day, close of business
        low = word.lower()
        if low in ("cob", "eob") and not word.isupper():
            return  # "cob" is a word; only the acronym means close of business
        if low in ("end", "close"):
            tail = T.EOD_TAIL.match(text, end)
            if tail is None or (low == "close") != tail.group().lower().endswith("business"):
                return
            end = tail.end()
        zone = T.ZONE_AFTER.match(text, end)  # all optional: always matches
        if zone is not None:
            add("time", T.clock_word_key(word, zone), start, zone.end())


def _span(text: str, m: re.Match[str], c: Claims, ref: datetime | None, add: _Add) -> None:
    """A time-unit word: a relative date ("in 3 days", "a week ago") or a
    duration written with a number word ("seven business days")."""
    head = T.SPAN_HEAD.search(text, max(0, m.start() - 40), m.start())
    if head is None:
        return
    unit = m["lead"].lower()
    ago = T.SPAN_AGO.match(text, m.end())
    if not head["qual"] and (head["in"] or ago):
        if head["in"] and ago:
            return  # "in 3 days ago": not a date we can read
        end = ago.end() if ago else m.end()
        add("date", T.span_date(head["count"], unit, -1 if ago else 1, ref), head.start(), end)
        return
    count = head["count"].lower()
    if count in NUMBER_WORDS:  # digits are left to the numeric pass
        start = head.start("count")
        qual = _WS.sub(" ", head["qual"] or "").lower()
        canon = P.UNIT_OF.get(qual + unit)
        c.take("quantity", canon and f"{NUMBER_WORDS[count]} {canon}", start, m.end())
