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

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from operator import itemgetter

from .atom import (
    AFFIRMED,
    ATOM_KINDS,
    Atom,
    AtomChange,
    AtomDiff,
    AtomKind,
    ChangeReason,
)
from .near import FAMILY, NUMERIC, closeness, instant, split_clock, split_dt, statement
from .numbers import base_quantity, number_of
from .tables import UNIT_FACTORS

Key = tuple[str, str]

_SIGNED_DIGITS = frozenset("-0123456789")
assert "" not in UNIT_FACTORS  # so a bare number has no base quantity (_Index.add relies on it)


class _Index:
    """What a set of atoms covers, precomputed for O(1) look-ups. Only the
    (kind, key) of an atom matters, so it is built from distinct keys."""

    __slots__ = ("bases", "clocks", "dates", "instants", "keys", "moments", "numbers", "times", "years")

    def __init__(self, keys: Iterable[Key] = ()) -> None:
        self.keys: set[Key] = set()
        self.dates: set[str] = set()
        self.times: set[str] = set()
        self.clocks: set[str] = set()
        self.moments: set[tuple[str, str]] = set()  # (date, clock)
        self.instants: set[datetime] = set()
        self.numbers: set[str] = set()
        self.years: set[str] = set()
        self.bases: set[tuple[str, object]] = set()
        self.add(keys)

    def add(self, keys: Iterable[Key]) -> None:
        """Index more (kind, key) pairs."""
        own, numbers = self.keys, self.numbers
        for k in keys:
            if k in own:
                continue
            own.add(k)
            kind, key = k
            if kind == "negation":
                continue
            if kind == "quantity" and " " not in key and key[:1] in _SIGNED_DIGITS and key[-1:] != "%":
                numbers.add(key)  # a bare number: number_of(key) is key, base_quantity(key) None
            elif kind == "date" or kind == "datetime":
                d, t = split_dt(key) if kind == "datetime" else (key, "")
                self.dates.add(d)
                if d[:4].isdigit():
                    self.years.add(d[:4].lstrip("0"))
                if t:
                    self.times.add(t)
                    self.clocks.add(split_clock(t)[0])
                    self.moments.add((d, split_clock(t)[0]))
                    inst = instant(key)
                    if inst is not None:
                        self.instants.add(inst)
            elif kind == "time":
                self.times.add(key)
                self.clocks.add(split_clock(key)[0])
            elif kind in NUMERIC:
                num = number_of(key)
                if num is not None:
                    self.numbers.add(num)
                base = base_quantity(key) if kind == "quantity" else None
                if base is not None:
                    self.bases.add(base)

    def copy(self) -> _Index:
        out = _Index()
        for name in self.__slots__:
            setattr(out, name, set(getattr(self, name)))
        return out

    def covers(self, a: Atom) -> bool:
        """True if ``a`` is present here, or implied by a more specific atom."""
        return self.covers_key(a.kind, a.key)

    def covers_key(self, kind: str, key: str) -> bool:
        """:meth:`covers` for a (kind, key) pair."""
        if (kind, key) in self.keys:
            return True
        if kind == "date":
            return key in self.dates
        if kind == "time":
            clock, zone = split_clock(key)
            return key in self.times or (not zone and clock in self.clocks)
        if kind == "datetime":
            inst = instant(key)
            if inst is not None and inst in self.instants:
                return True
            d, t = split_dt(key)
            clock, zone = split_clock(t)
            return not zone and (d, clock) in self.moments
        if kind == "quantity":
            if " " not in key:  # a bare number
                return key in self.numbers or key in self.years
            base = base_quantity(key)
            return base is not None and base in self.bases
        return False


def _earliest(best: dict[Key, Atom], atoms: Iterable[Atom]) -> None:
    """Keep in ``best`` the earliest atom of each (kind, key): the least
    (start, end, text), as a sort by (start, end, kind, key, text) would pick."""
    _earliest_items(best, (((a.kind, a.key), a) for a in atoms))


def _earliest_items(best: dict[Key, Atom], items: Iterable[tuple[Key, Atom]]) -> None:
    """:func:`_earliest` for atoms whose (kind, key) is known."""
    get = best.get
    for k, a in items:
        b = get(k)
        if b is None or (
            a.start < b.start or (a.start == b.start and (a.end < b.end or (a.end == b.end and a.text < b.text)))
        ):
            best[k] = a


def _is_affirmation_key(k: Key) -> bool:
    return k[0] == "negation" and k[1].startswith(AFFIRMED)


class AtomSet:
    """The atoms of one side of a diff as the diff sees them: one atom per
    (kind, key) (the earliest), in (kind, key) order, split into facts and
    affirmations, with what they cover. Building one costs a pass over the
    atoms; a side that takes part in several diffs (the sources of a
    snapshot) is built once and extended with :meth:`plus`."""

    __slots__ = ("_aff_keys", "_affs", "_by_kind", "_index", "reps")

    def __init__(self, atoms: Iterable[Atom] = ()) -> None:
        self.reps: dict[Key, Atom] = {}
        _earliest(self.reps, atoms)
        self._by_kind: dict[str, list[Key]] | None = None  # fact keys by kind, kinds and keys in order
        self._affs: list[Atom] | None = None
        self._aff_keys: frozenset[str] | None = None
        self._index: _Index | None = None

    @classmethod
    def from_runs(cls, runs: Iterable[tuple[Sequence[Key], Sequence[Atom]]]) -> AtomSet:
        """The set of several runs of atoms, each given as (their (kind, key)s, the
        atoms) and ordered by offset as one extraction returns them, so that the
        first atom of a key in a run is the earliest of the run."""
        out = cls()
        best = out.reps
        for keys, atoms in runs:
            first = dict(zip(reversed(keys), reversed(atoms), strict=False))  # the first occurrence wins
            if best:
                _earliest_items(best, first.items())
            else:
                best.update(first)
        return out

    def plus(self, atoms: Iterable[Atom]) -> AtomSet:
        """This set and ``atoms`` together (this set is left unchanged; what it has
        computed, its index and key order, is extended rather than recomputed)."""
        extra = list(atoms)
        out = AtomSet()
        out.reps = reps = dict(self.reps)
        _earliest(reps, extra)
        new = reps.keys() - self.reps.keys()
        out._index = self.index.copy()
        out._index.add(new)
        self._order()
        by_kind = dict(self._by_kind)  # type: ignore[arg-type]
        grown: dict[str, list[Key]] = {}
        for k in new:
            if not _is_affirmation_key(k):
                grown.setdefault(k[0], []).append(k)
        for kind, keys in grown.items():
            keys += by_kind.get(kind, ())
            keys.sort(key=_KEY)  # one sorted run and a few new keys: a merge
            by_kind[kind] = keys
        if grown.keys() - self._by_kind.keys():  # type: ignore[union-attr]
            by_kind = dict(sorted(by_kind.items()))  # a new kind: keep the kinds in order
        out._by_kind = by_kind
        touched = {(a.kind, a.key) for a in extra}
        if any(_is_affirmation_key(k) and (k in new or reps[k] is not self.reps[k]) for k in touched):
            out._order()
        else:
            out._affs, out._aff_keys = self._affs, self._aff_keys
        return out

    def _order(self) -> None:
        if self._by_kind is not None and self._affs is not None:
            return
        by_kind: dict[str, list[Key]] = {}
        affs: list[Key] = []
        for k in self.reps:
            if k[0] == "negation" and k[1].startswith(AFFIRMED):
                affs.append(k)
            else:
                keys = by_kind.get(k[0])
                if keys is None:
                    by_kind[k[0]] = [k]
                else:
                    keys.append(k)
        for keys in by_kind.values():
            keys.sort(key=_KEY)
        if self._by_kind is None:
            self._by_kind = dict(sorted(by_kind.items()))
        affs.sort(key=_KEY)
        self._affs = [self.reps[k] for k in affs]
        self._aff_keys = frozenset(k[1] for k in affs)

    @property
    def facts(self) -> list[Atom]:
        """The atoms that are not affirmations, in (kind, key) order."""
        self._order()
        return [self.reps[k] for keys in self._by_kind.values() for k in keys]  # type: ignore[union-attr]

    @property
    def affirmations(self) -> list[Atom]:
        """The affirmation helper atoms, in key order."""
        self._order()
        return self._affs  # type: ignore[return-value]

    @property
    def affirmation_keys(self) -> frozenset[str]:
        self._order()
        return self._aff_keys  # type: ignore[return-value]

    @property
    def index(self) -> _Index:
        if self._index is None:
            self._index = _Index(self.reps)
        return self._index

    def uncovered(self, other: _Index, wanted: Collection[str] | None) -> list[Atom]:
        """The facts (in order) that ``other`` does not cover, of the ``wanted`` kinds."""
        self._order()
        okeys, reps = other.keys, self.reps
        out: list[Atom] = []
        for kind, keys in self._by_kind.items():  # type: ignore[union-attr]
            if wanted is not None and kind not in wanted:
                continue
            if kind not in _DERIVED:  # covered only by the same key
                out += [reps[k] for k in keys if k not in okeys]
            elif kind == "quantity":
                numbers, years, covers = other.numbers, other.years, other.covers_key
                for k in keys:
                    if k in okeys:
                        continue
                    key = k[1]
                    if " " not in key:  # a bare number (covers_key, inlined)
                        if key in numbers or key in years:
                            continue
                    elif covers(kind, key):
                        continue
                    out.append(reps[k])
            else:
                covers = other.covers_key
                out += [reps[k] for k in keys if not covers(kind, k[1])]
        return out

    def implied(self, other: _Index, wanted: Collection[str] | None) -> list[Atom]:
        """The facts (in order) that ``other`` does not state but covers, of the ``wanted`` kinds."""
        self._order()
        okeys, reps, covers = other.keys, self.reps, other.covers_key
        out: list[Atom] = []
        for kind, keys in self._by_kind.items():  # type: ignore[union-attr]
            if kind in _DERIVED and (wanted is None or kind in wanted):  # others: covered means stated
                out += [reps[k] for k in keys if k not in okeys and covers(kind, k[1])]
        return out


_KEY = itemgetter(1)


#: Kinds an atom of another key can cover (for the others, covering is equality).
_DERIVED = frozenset({"date", "time", "datetime", "quantity"})


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
    return diff_sets(AtomSet(source), AtomSet(summary), kinds=kinds)


def diff_sets(
    src: AtomSet, summ: AtomSet, *, kinds: Collection[AtomKind] | None = None, all_missing: bool = True
) -> AtomDiff:
    """:func:`diff_atoms` of two :class:`AtomSet` (the same result for the same atoms).

    ``all_missing=False`` looks for missing atoms only where they could pair with a
    summary atom: ``changed`` and ``added`` are the same, ``missing`` is incomplete."""
    wanted = frozenset(ATOM_KINDS if kinds is None else kinds)
    want = None if len(wanted) == len(ATOM_KINDS) else wanted
    src_idx, summ_idx = src.index, summ.index
    added = summ.uncovered(src_idx, want)
    # Summary atoms the source implies without stating them ("2400" for
    # "$2,400", a bare date for a datetime) are not inventions, but they can
    # still explain a loss: "$2,400" -> "2400" is a currency change.
    weak = summ.implied(src_idx, want)
    # Affirmations stated on one side only can explain a flip on the other.
    if "negation" in wanted:
        summ_aff_keys, src_aff_keys = summ.affirmation_keys, src.affirmation_keys
        src_aff = [a for a in src.affirmations if a.key not in summ_aff_keys]
        summ_aff = [a for a in summ.affirmations if a.key not in src_aff_keys]
    else:
        src_aff = summ_aff = []
    if all_missing:
        missing = src.uncovered(summ_idx, want)
    else:  # only kinds with a near-miss candidate in the summary can pair
        families = {FAMILY[t.kind] for t in (*added, *weak)} | ({"negation"} if summ_aff else set())
        missing = src.uncovered(summ_idx, [k for k in wanted if FAMILY[k] in families])

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
