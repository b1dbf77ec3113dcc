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
misses of each other are paired into changes (see :mod:`.near`), greedily
from the closest pair, each atom used at most once. Affirmative statement
atoms (``is|...``) are never reported on their own; they only let a dropped
negation be reported as ``polarity_flipped`` when the summary states the
positive, and an invented negation likewise when the source stated it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from .model import (
    ATOM_KINDS,
    Atom,
    AtomChange,
    AtomDiff,
    AtomKind,
    ChangeReason,
    is_affirmation,
)
from .near import FAMILY, NUMERIC, closeness, instant, split_clock, split_dt, statement
from .numbers import base_quantity, number_of


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
                d, t = split_dt(a.key) if a.kind == "datetime" else (a.key, "")
                self.dates.add(d)
                if d[:4].isdigit():
                    self.years.add(d[:4].lstrip("0"))
                if t:
                    self.times.add(t)
                    self.clocks.add(split_clock(t)[0])
                    self.moments.add((d, split_clock(t)[0]))
                    inst = instant(a.key)
                    if inst is not None:
                        self.instants.add(inst)
            elif a.kind == "time":
                self.times.add(a.key)
                self.clocks.add(split_clock(a.key)[0])
            elif a.kind in NUMERIC:
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
            clock, zone = split_clock(a.key)
            return a.key in self.times or (not zone and clock in self.clocks)
        if a.kind == "datetime":
            inst = instant(a.key)
            if inst is not None and inst in self.instants:
                return True
            d, t = split_dt(a.key)
            clock, zone = split_clock(t)
            return not zone and (d, clock) in self.moments
        if a.kind == "quantity":
            if " " not in a.key:  # a bare number
                return a.key in self.numbers or a.key in self.years
            base = base_quantity(a.key)
            return base is not None and base in self.bases
        return False


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
        candidates.setdefault(FAMILY[t.kind], []).append(t)
    for s in missing:
        for t in candidates.get(FAMILY[s.kind], ()):
            hit = closeness(s, t)
            if hit is not None:
                pairs.append((hit[1], s.kind, s.key, t.kind, t.key, s, t, hit[0]))
        if s.kind == "negation":
            for t in summ_aff:
                hit = statement(s, t, stems)
                if hit is not None:
                    pairs.append((hit[1], s.kind, s.key, t.kind, t.key, s, t, hit[0]))
    for t in added:
        if t.kind == "negation":
            for s in src_aff:
                hit = statement(s, t, stems)
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
