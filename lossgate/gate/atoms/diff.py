"""The atom diff: what a summary lost, changed or invented.

Atoms compare by (kind, key). On top of exact equality, a more specific atom
*covers* a less specific one with the same meaning, in both directions:

* a datetime covers its date and its time; a zoned time covers the same
  clock time written without a zone; datetimes with numeric offsets that
  denote the same instant are equal;
* any number-bearing atom (money, quantity, percent) covers a bare number
  with the same value ("adjustment_amount=-2400" is kept by "-$2,400"), and
  any date covers a bare year;
* quantities in convertible units cover each other ("2 weeks" = "14 days").

A source atom nothing in the summary covers is a loss; a summary atom nothing
in the source covers is an invention. Losses and inventions that are near
misses of each other are paired into changes (see ``_closeness``), greedily
from the closest pair, each atom used at most once. Affirmative statement
atoms (``is|...``) are never reported on their own; they only let a dropped
negation be reported as ``polarity_flipped`` when the summary states the
positive, and an invented negation likewise when the source stated it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from datetime import date, datetime

from .model import (
    AFFIRMED,
    ATOM_KINDS,
    NEGATED,
    Atom,
    AtomChange,
    AtomDiff,
    AtomKind,
    ChangeReason,
    is_affirmation,
)
from .numbers import base_quantity, number_of, to_decimal
from .statements import content_stems

_NUMERIC = frozenset({"money", "quantity", "percent"})
_TEMPORAL = frozenset({"date", "datetime", "time"})
_FAMILY: dict[str, str] = {k: ("num" if k in _NUMERIC else "time" if k in _TEMPORAL else k) for k in ATOM_KINDS}
_CLOCK = re.compile(r"(eod|[0-9]{2}:[0-9]{2}(?::[0-9]{2})?)(.*)")
_FULL_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_PART_DATE = re.compile(r"--([0-9]{2})-([0-9]{2})")
_REL_DAYS = re.compile(r"rel:([+-][0-9]+)d")
_OFFSET = re.compile(r"[+-][0-9]{2}:[0-9]{2}")
_DIGITS = re.compile(r"[0-9]")


def _split_dt(key: str) -> tuple[str, str]:
    """'2026-03-14T14:32-05:00' -> ('2026-03-14', '14:32-05:00')."""
    d, _, t = key.partition("T")
    return d, t


def _clock(time_key: str) -> tuple[str, str]:
    """'14:32-05:00' -> ('14:32', '-05:00'); 'eod' -> ('eod', '')."""
    m = _CLOCK.fullmatch(time_key)
    return (m[1], m[2]) if m else (time_key, "")


def _instant(key: str) -> datetime | None:
    """Absolute instant of a zoned datetime key, else None."""
    d, t = _split_dt(key)
    clock, zone = _clock(t)
    if not _FULL_DATE.fullmatch(d) or clock == "eod" or not _OFFSET.fullmatch(zone):
        return None
    try:
        return datetime.fromisoformat(f"{d}T{clock}{zone}")
    except ValueError:
        return None


class _Index:
    """What a set of atoms covers, precomputed for O(1) look-ups."""

    def __init__(self, atoms: Iterable[Atom]) -> None:
        self.keys: set[tuple[str, str]] = set()
        self.dates: set[str] = set()
        self.times: set[str] = set()
        self.clocks: set[str] = set()
        self.moments: set[tuple[str, str]] = set()  # (date, clock)
        self.instants: set[datetime] = set()
        self.numbers: set[str] = set()
        self.years: set[str] = set()
        self.bases: set[tuple[str, object]] = set()
        for a in atoms:
            self.keys.add((a.kind, a.key))
            if a.kind in ("date", "datetime"):
                d, t = _split_dt(a.key) if a.kind == "datetime" else (a.key, "")
                self.dates.add(d)
                if d[:4].isdigit():
                    self.years.add(d[:4].lstrip("0"))
                if t:
                    self.times.add(t)
                    self.clocks.add(_clock(t)[0])
                    self.moments.add((d, _clock(t)[0]))
                    inst = _instant(a.key)
                    if inst is not None:
                        self.instants.add(inst)
            elif a.kind == "time":
                self.times.add(a.key)
                self.clocks.add(_clock(a.key)[0])
            elif a.kind in _NUMERIC:
                num = number_of(a.key)
                if num is not None:
                    self.numbers.add(num)
                base = base_quantity(a.key) if a.kind == "quantity" else None
                if base is not None:
                    self.bases.add(base)

    def covers(self, a: Atom) -> bool:
        """True if ``a`` is present here, or implied by a more specific atom."""
        if (a.kind, a.key) in self.keys:
            return True
        if a.kind == "date":
            return a.key in self.dates
        if a.kind == "time":
            clock, zone = _clock(a.key)
            return a.key in self.times or (not zone and clock in self.clocks)
        if a.kind == "datetime":
            inst = _instant(a.key)
            if inst is not None and inst in self.instants:
                return True
            d, t = _split_dt(a.key)
            clock, zone = _clock(t)
            return not zone and (d, clock) in self.moments
        if a.kind == "quantity":
            if " " not in a.key:  # a bare number
                return a.key in self.numbers or a.key in self.years
            base = base_quantity(a.key)
            return base is not None and base in self.bases
        return False


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
    a, b = _minutes(_clock(st)[0]), _minutes(_clock(tt)[0])
    if a is None or b is None:
        return "time_changed", 0.9
    return "time_changed", abs(a - b) / 1440


def _temporal(s: Atom, t: Atom) -> tuple[ChangeReason, float] | None:
    if s.kind == "time" or t.kind == "time":
        if s.kind == t.kind:
            return _times(s.key, t.key)
        return None
    sd, st = _split_dt(s.key) if s.kind == "datetime" else (s.key, "")
    td, tt = _split_dt(t.key) if t.kind == "datetime" else (t.key, "")
    if sd == td:  # same day: the time moved, or one side lost it
        return _times(st, tt) if st and tt else ("time_changed", 0.5)
    return _dates(sd, td)


def _statement(s: Atom, t: Atom, stems: dict[str, frozenset[str]]) -> tuple[ChangeReason, float] | None:
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
        pos = stems[pos_atom.key] = content_stems(pos_atom.key[len(AFFIRMED):])
    if pos and neg <= pos:  # the positive clause states the negated content
        return "polarity_flipped", (len(pos) - len(neg)) / len(pos)
    return None


def _textual(s: Atom, t: Atom) -> tuple[ChangeReason, float] | None:
    reason: ChangeReason = {"identifier": "identifier_changed", "email": "email_changed",
                            "phone": "phone_changed", "party": "party_changed"}[s.kind]  # type: ignore[assignment]
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


def _closeness(s: Atom, t: Atom) -> tuple[ChangeReason, float] | None:
    """Why ``t`` (summary) is a near miss of ``s`` (source), and how near
    (0 = nearest); None if they are unrelated."""
    fam = _FAMILY[s.kind]
    if fam != _FAMILY[t.kind]:
        return None
    if fam == "num":
        return _numeric(s, t)
    if fam == "time":
        return _temporal(s, t)
    if fam == "negation":
        return _statement(s, t, {})
    if s.kind != t.kind:
        return None
    return _textual(s, t)


def _unique(atoms: Iterable[Atom]) -> list[Atom]:
    """One atom per (kind, key): the earliest occurrence."""
    best: dict[tuple[str, str], Atom] = {}
    for a in sorted(atoms, key=lambda a: (a.start, a.end, a.kind, a.key, a.text)):
        best.setdefault((a.kind, a.key), a)
    return sorted(best.values(), key=lambda a: (a.kind, a.key))


def diff_atoms(
    source: Iterable[Atom],
    summary: Iterable[Atom],
    *,
    kinds: Collection[AtomKind] | None = None,
) -> AtomDiff:
    """Compare the atoms of a source text with the atoms of its summary.

    Returns an :class:`AtomDiff` whose ``missing`` atoms are source facts the
    summary does not state, ``added`` atoms summary facts the source never
    stated, and ``changed`` pairs (source atom, summary atom, reason) for
    near misses: a close number, the same amount in another currency or
    unit, a date shifted by up to 31 days or with day and month swapped, a
    changed time, a similar identifier, a negation dropped in favour of the
    positive statement (``polarity_flipped``). Comparison is a set
    comparison on keys, so repetition and order do not matter. ``kinds``
    limits which kinds are reported. Each tuple is sorted by (kind, key).
    """
    src, summ = list(source), list(summary)
    wanted = frozenset(ATOM_KINDS if kinds is None else kinds)
    src_idx, summ_idx = _Index(src), _Index(summ)

    def facts(atoms: list[Atom], other: _Index) -> list[Atom]:
        return _unique(a for a in atoms if a.kind in wanted and not is_affirmation(a) and not other.covers(a))

    missing, added = facts(src, summ_idx), facts(summ, src_idx)
    # Summary atoms the source implies without stating them ("2400" for
    # "$2,400", a bare date for a datetime) are not inventions, but they can
    # still explain a loss: "$2,400" -> "2400" is a currency change.
    weak = _unique(
        t for t in summ
        if t.kind in wanted and not is_affirmation(t) and (t.kind, t.key) not in src_idx.keys and src_idx.covers(t)
    )
    # Affirmations stated on one side only can explain a flip on the other.
    src_aff = _unique(a for a in src if is_affirmation(a) and "negation" in wanted)
    summ_aff = _unique(a for a in summ if is_affirmation(a) and "negation" in wanted)
    src_aff_keys = {a.key for a in src_aff}
    summ_aff_keys = {a.key for a in summ_aff}
    src_aff = [a for a in src_aff if a.key not in summ_aff_keys]
    summ_aff = [a for a in summ_aff if a.key not in src_aff_keys]

    pairs: list[tuple[float, str, str, str, str, Atom, Atom, ChangeReason]] = []
    stems: dict[str, frozenset[str]] = {}
    candidates: dict[str, list[Atom]] = {}  # summary atoms by family: only those can be near misses
    for t in (*added, *weak):
        candidates.setdefault(_FAMILY[t.kind], []).append(t)
    for s in missing:
        for t in candidates.get(_FAMILY[s.kind], ()):
            hit = _closeness(s, t)
            if hit is not None:
                pairs.append((hit[1], s.kind, s.key, t.kind, t.key, s, t, hit[0]))
        if s.kind == "negation":
            for t in summ_aff:
                hit = _statement(s, t, stems)
                if hit is not None:
                    pairs.append((hit[1], s.kind, s.key, t.kind, t.key, s, t, hit[0]))
    for t in added:
        if t.kind == "negation":
            for s in src_aff:
                hit = _statement(s, t, stems)
                if hit is not None:
                    pairs.append((hit[1], s.kind, s.key, t.kind, t.key, s, t, hit[0]))
    pairs.sort(key=lambda p: p[:5])

    used_src: set[tuple[str, str]] = set()
    used_summ: set[tuple[str, str]] = set()
    changes: list[AtomChange] = []
    for *_, s, t, reason in pairs:
        sk, tk = (s.kind, s.key), (t.kind, t.key)
        if sk in used_src or tk in used_summ:
            continue
        used_src.add(sk)
        used_summ.add(tk)
        changes.append(AtomChange(s, t, reason))
    changes.sort(key=lambda c: (c.source.kind, c.source.key, c.summary.kind, c.summary.key))
    return AtomDiff(
        missing=tuple(a for a in missing if (a.kind, a.key) not in used_src),
        changed=tuple(changes),
        added=tuple(a for a in added if (a.kind, a.key) not in used_summ),
    )
