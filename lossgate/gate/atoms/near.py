"""Near misses: why a summary atom is a changed version of a source atom.

``closeness(source, summary)`` returns a reason and a distance (0 is
nearest) or None. The rules: numbers of one kind and unit within 10% or one
edit (a digit changed, two swapped: 14250 -> 14205); the same number in
another currency or unit; dates up to 31 days apart or with day and month
swapped; another time on the same day (or a time dropped); identifiers,
e-mails, phones and names one or two edits apart or of the same shape;
negations of the same head with overlapping content; and a negation against
an affirmative clause that states its content (``polarity_flipped``).
"""

from __future__ import annotations

import re
from datetime import date, datetime

from .atom import AFFIRMED, ATOM_KINDS, NEGATED, Atom, ChangeReason
from .numbers import number_of, to_decimal
from .statements import content_stems

NUMERIC = frozenset({"money", "quantity", "percent"})
_TEMPORAL = frozenset({"date", "datetime", "time"})
FAMILY: dict[str, str] = {k: ("num" if k in NUMERIC else "time" if k in _TEMPORAL else k) for k in ATOM_KINDS}
_CLOCK_RE = re.compile(r"(eod|[0-9]{2}:[0-9]{2}(?::[0-9]{2})?)(.*)")
_FULL_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_PART_DATE = re.compile(r"--([0-9]{2})-([0-9]{2})")
_REL_DAYS = re.compile(r"rel:([+-][0-9]+)d")
_OFFSET = re.compile(r"[+-][0-9]{2}:[0-9]{2}")
_DIGITS = re.compile(r"[0-9]")


def split_dt(key: str) -> tuple[str, str]:
    """'2026-03-14T14:32-05:00' -> ('2026-03-14', '14:32-05:00')."""
    d, _, t = key.partition("T")
    return d, t


def split_clock(time_key: str) -> tuple[str, str]:
    """'14:32-05:00' -> ('14:32', '-05:00'); 'eod' -> ('eod', '')."""
    m = _CLOCK_RE.fullmatch(time_key)
    return (m[1], m[2]) if m else (time_key, "")


def instant(key: str) -> datetime | None:
    """Absolute instant of a zoned datetime key, else None."""
    d, t = split_dt(key)
    clock, zone = split_clock(t)
    if not _FULL_DATE.fullmatch(d) or clock == "eod" or not _OFFSET.fullmatch(zone):
        return None
    try:
        return datetime.fromisoformat(f"{d}T{clock}{zone}")
    except ValueError:
        return None


def _osa(a: str, b: str, cap: int = 3) -> int:
    """Optimal-string-alignment edit distance (a transposition costs 1),
    returning ``cap`` as soon as the distance is known to reach it."""
    if abs(len(a) - len(b)) >= cap:
        return cap
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) >= cap:
            return cap
        prev2, prev = prev, cur
    return min(prev[-1], cap)


def _numeric(s: Atom, t: Atom) -> tuple[ChangeReason, float] | None:
    sn, tn = number_of(s.key), number_of(t.key)
    if sn is None or tn is None:
        return None
    su, tu = _unit(s), _unit(t)
    if s.kind == t.kind and su == tu:
        a, b = to_decimal(sn), to_decimal(tn)
        if a is None or b is None:
            return None
        big = max(abs(a), abs(b))
        rel = float(abs(a - b) / big) if big else 0.0
        if rel <= 0.1:
            return "number_changed", rel
        if _osa(sn, tn, 2) <= 1:
            return "number_changed", 0.5
        return None
    if sn == tn:
        money = "money" in (s.kind, t.kind)
        return ("currency_changed" if money else "unit_changed"), 0.0
    return None


def _unit(a: Atom) -> str:
    if a.kind == "percent":
        return "%"
    if a.kind == "money":
        return a.key.partition(" ")[0]
    return a.key.partition(" ")[2]


def _day(key: str) -> date | None:
    """A calendar day for full or year-less date keys (year 2000 if absent)."""
    m = _FULL_DATE.fullmatch(key)
    p = _PART_DATE.fullmatch(key)
    try:
        if m:
            return date(int(m[1]), int(m[2]), int(m[3]))
        if p:
            return date(2000, int(p[1]), int(p[2]))
    except ValueError:
        return None
    return None


def _in_2000(d: date) -> date:
    return d.replace(year=2000)  # a leap year, so 29 February exists


def _dates(sd: str, td: str) -> tuple[ChangeReason, float] | None:
    a, b = _day(sd), _day(td)
    if a is not None and b is not None:
        if (sd[:2] == "--") != (td[:2] == "--"):  # one side has no year: compare in 2000
            a, b = _in_2000(a), _in_2000(b)
        days = abs((a - b).days)
        if days <= 31:
            return "date_shifted", days / 31
        if a.month == b.day and a.day == b.month:
            return "date_shifted", 0.5
        return None
    ra, rb = _REL_DAYS.fullmatch(sd), _REL_DAYS.fullmatch(td)
    if ra and rb:
        return "date_shifted", min(abs(int(ra[1]) - int(rb[1])), 31) / 31
    if sd.startswith("rel:") and td.startswith("rel:"):
        return "date_shifted", 0.5
    if len(sd) == 7 and len(td) == 7 and sd[4] == td[4] == "-":  # months
        return "date_shifted", 0.5
    return None


def _minutes(clock: str) -> int | None:
    """Minutes after midnight of a clock key; None for "eod" or a malformed key."""
    if clock == "eod" or not clock[:2].isdigit() or not clock[3:5].isdigit():
        return None
    return int(clock[:2]) * 60 + int(clock[3:5])


def _times(st: str, tt: str) -> tuple[ChangeReason, float]:
    a, b = _minutes(split_clock(st)[0]), _minutes(split_clock(tt)[0])
    if a is None or b is None:
        return "time_changed", 0.9
    return "time_changed", abs(a - b) / 1440


def _temporal(s: Atom, t: Atom) -> tuple[ChangeReason, float] | None:
    if s.kind == "time" or t.kind == "time":
        if s.kind == t.kind:
            return _times(s.key, t.key)
        return None
    sd, st = split_dt(s.key) if s.kind == "datetime" else (s.key, "")
    td, tt = split_dt(t.key) if t.kind == "datetime" else (t.key, "")
    if sd == td:  # same day: the time moved, or one side lost it
        return _times(st, tt) if st and tt else ("time_changed", 0.5)
    return _dates(sd, td)


def statement(s: Atom, t: Atom, stems: dict[str, frozenset[str]]) -> tuple[ChangeReason, float] | None:
    """Flip or rewording between two statement atoms; ``stems`` memoises
    the (lazily computed) content stems of affirmations."""
    sneg, tneg = s.key.startswith(NEGATED), t.key.startswith(NEGATED)
    if sneg and tneg:
        sw, tw = s.key.split("|")[1:], t.key.split("|")[1:]
        a, b = set(sw), set(tw)
        jac = len(a & b) / len(a | b)
        if sw[0] == tw[0] and (a <= b or b <= a or jac >= 0.5):
            return "negation_changed", 1 - jac
        return None
    if sneg == tneg:
        return None
    neg_atom, pos_atom = (s, t) if sneg else (t, s)
    neg = set(neg_atom.key.split("|")[1:])
    pos = stems.get(pos_atom.key)
    if pos is None:
        pos = stems[pos_atom.key] = content_stems(pos_atom.key[len(AFFIRMED) :])
    if pos and neg <= pos:  # the positive clause states the negated content
        return "polarity_flipped", (len(pos) - len(neg)) / len(pos)
    return None


_TEXTUAL_REASON: dict[str, ChangeReason] = {
    "identifier": "identifier_changed",
    "email": "email_changed",
    "phone": "phone_changed",
    "party": "party_changed",
}


def _textual(s: Atom, t: Atom) -> tuple[ChangeReason, float] | None:
    reason = _TEXTUAL_REASON[s.kind]
    a, b = s.key, t.key
    longest = max(len(a), len(b))
    dist = _osa(a, b, 3)
    score = dist / longest
    if dist <= 1 or (dist <= 2 and longest >= 6):
        return reason, score
    if s.kind == "identifier" and _skeleton(a) == _skeleton(b):
        return reason, 0.9  # same shape, other number: INV-9182 -> INV-1234
    if s.kind == "email" and a.partition("@")[2] == b.partition("@")[2]:
        return reason, 0.9
    if s.kind == "party" and set(a.split()) & set(b.split()):
        return reason, 0.9
    return None


def _skeleton(ident: str) -> str:
    return _DIGITS.sub("9", ident.upper())


def closeness(s: Atom, t: Atom) -> tuple[ChangeReason, float] | None:
    """Why ``t`` (summary) is a near miss of ``s`` (source), and how near
    (0 = nearest); None if they are unrelated."""
    fam = FAMILY[s.kind]
    if fam != FAMILY[t.kind]:
        return None
    if fam == "num":
        return _numeric(s, t)
    if fam == "time":
        return _temporal(s, t)
    if fam == "negation":
        return statement(s, t, {})
    if s.kind != t.kind:
        return None
    return _textual(s, t)
