"""The snapshot side of the prose fact diff: source atoms, rendered values, stale values.

:func:`prose_inputs` extracts, once per snapshot, the atoms of every valid event
(relative dates resolved against the event's ``occurred_at``), the atoms of the
active facts' values, the memory's own names, the *stale* values (those only a
retired fact states) and what each relative date the sources used meant.
:func:`value_forms` writes a typed value the ways a summary might, so a value
becomes atoms the diff can match. It is not a rendering (:mod:`lossgate.model.wording` is
the one way memory is written as text): it lists forms to match against, and the
gate's verdicts rest on exactly these.

Extraction results are cached process-wide (bounded, see ``CACHE_SIZE``): the
atoms of an event text for its day, and the atoms of rendered values. They are
pure functions of their text, so a cache only saves time; it never changes a
result. :func:`clear_atom_cache` empties both.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from functools import cached_property, lru_cache
from itertools import accumulate, chain
from threading import Lock
from typing import Any

from lossgate.gate.atoms import Atom, extract_atoms, is_affirmation
from lossgate.gate.atoms.diff import AtomSet
from lossgate.gate.atoms.extract import _atom as new_atom
from lossgate.gate.atoms.statements import content_words, stem
from lossgate.gate.typed import typed_value
from lossgate.model.records import ArtifactBody, Event, Snapshot
from lossgate.model.values import coerce_value
from lossgate.runtime.caches import holds_text

__all__ = [
    "ProseInputs",
    "Extractions",
    "prose_inputs",
    "value_forms",
    "value_atoms",
    "claim_atoms",
    "anchor_dates",
    "key_of",
    "label_of",
    "token_of",
    "Key",
    "clear_atom_cache",
    "events_holding",
    "event_tokens",
]

Key = tuple[str, str]


def _dur(td: timedelta) -> str:
    """A duration as a person writes it: ``30 minutes``, ``2 hours``, ``7 days``."""
    secs = int(td.total_seconds())
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if secs and secs % size == 0:
            return f"{secs // size} {unit}"
    return f"{secs} seconds"


def value_forms(value_type: str, value: Any) -> list[str]:
    """Texts a summary might use for a typed value (canonicalised first), for atom matching:
    ``["12", "12%"]`` for an int 12, ``["30 minutes", "PT30M"]`` for a duration; none for a
    bool (its claim says it)."""
    tv = typed_value(value_type, value)
    canon = tv.canonical
    if tv.key is None or value_type == "bool":
        return [] if value_type == "bool" else [str(value)]
    if value_type == "money":
        return [f"{canon['currency']} {canon['amount']}"]
    if value_type in ("int", "decimal"):
        return [str(canon), f"{canon}%"]
    if value_type == "duration":
        return [_dur(coerce_value("duration", value)), str(canon)]
    return [str(canon)]


# Rendered values are extracted in one call, joined by a clause break that no atom
# spans (one call per value would cost more than the extraction of the sources).
_JOIN = "\n;\n"


def value_atoms(texts: Iterable[str]) -> list[Atom]:
    """The atoms of rendered values (no affirmation helpers: a value is not a statement).
    Offsets refer to the joined text; only kinds and keys are meaningful."""
    joined = _JOIN.join(t for t in texts if t)
    return list(_value_atoms(joined)) if joined else []


@lru_cache(maxsize=1024)
def _value_atoms(joined: str) -> tuple[Atom, ...]:
    # The same facts and claims come back at every consolidation of a subject.
    return tuple(extract_atoms(joined, affirmations=False))


def key_of(a: Atom) -> Key:
    """``(kind, key)``: what the diff compares."""
    return (a.kind, a.key)


def label_of(a: Atom) -> str:
    """``kind:key``, the subject of a prose violation."""
    return f"{a.kind}:{a.key}"


def token_of(a: Atom) -> Key:
    """What a value atom *says*, ignoring units and formatting: the number of a money,
    quantity or percent atom (with its currency), else the key. Used to track stale
    values, which a summary may restate in another form ("10 seats" for a value 10)."""
    if a.kind == "money":
        return ("num", a.key)
    if a.kind in ("quantity", "percent"):
        return ("num", a.key.split(" ")[0].rstrip("%"))
    return key_of(a)


@dataclass(frozen=True)
class ProseInputs:
    """Atoms of one snapshot's sources, computed once (they do not depend on the artifact)."""

    source: list[Atom]  # atoms of valid events (with affirmation helpers)
    source_keys: frozenset[Key]
    active: list[Atom]  # atoms of active facts' values
    names: tuple[str, ...]  # tenant, subject, actors, fact/event/conflict ids
    moments: tuple[datetime, ...]  # when each valid event was said: a summary may say so ("on 14 March")
    stale: dict[Key, tuple[str, ...]]  # value token -> retired fact ids stating it, unsupported otherwise
    relative: dict[Key, tuple[str, ...]]  # a relative date as written ("tomorrow") -> the dates it meant

    def context(self, summary: str) -> list[Atom]:
        """Atoms of the memory's own names that the summary mentions (a substring test
        first: a snapshot has thousands of ids, a summary mentions a few; a name the
        summary contains has its first and last four characters among the summary's)."""
        grams = {summary[i : i + 4] for i in range(len(summary) - 3)}
        return value_atoms(
            n for n in self.names if (len(n) < 4 or (n[:4] in grams and n[-4:] in grams)) and n in summary
        )

    @cached_property
    def atom_set(self) -> AtomSet:
        """The source atoms as the diff indexes them (computed once)."""
        return AtomSet(self.source)

    @cached_property
    def vocabulary(self) -> frozenset[str]:
        """Content stems of every statement of the sources (computed on first use). The
        affirmations of a long history repeat their words: each distinct word is stemmed once."""
        words: set[str] = set()
        affirmed: set[str] = set()
        for a in self.source:
            if a.kind == "negation":
                if is_affirmation(a):
                    affirmed.update(content_words(a.key[3:]))
                else:
                    words.update(a.key.split("|")[1:])
        return frozenset(words | {stem(w) for w in affirmed})

    @cached_property
    def time_keys(self) -> frozenset[tuple[str, str]]:
        """The date, date-time and UTC time of each event, as the extractor keys them
        (``("date", "2026-03-14")``, ``("datetime", "2026-03-14T09:05+02:00")``, ``("time",
        "07:05+00:00")``); computed once, only when a summary names a time."""
        keys: set[tuple[str, str]] = set()
        for moment in self.moments:
            iso = moment.isoformat()
            offset = iso[-6:] if moment.utcoffset() is not None else "+00:00"
            keys.add(("date", iso[:10]))
            keys.add(("datetime", iso[:16] + offset))
            try:
                utc = moment.astimezone(UTC)
            except OverflowError:  # no UTC form (a row stored before lossgate refused such times)
                continue
            keys.add(("time", f"{utc.hour:02d}:{utc.minute:02d}+00:00"))
        return frozenset(keys)

    def times_in(self, summary: Iterable[Atom]) -> list[Atom]:
        """The summary's dates and times that say when an event was said (support, never a loss)."""
        return [a for a in summary if a.kind in ("date", "datetime", "time") and (a.kind, a.key) in self.time_keys]

    @cached_property
    def negated_words(self) -> frozenset[str]:
        """The words the sources' negated statements use ("call", "phone" of "do not call me by phone")."""
        return frozenset(
            w for a in self.source if a.kind == "negation" and a.key.startswith("not|") for w in a.key.split("|")[1:]
        )

    @cached_property
    def full_dates(self) -> dict[str, str]:
        """``-MM-DD`` -> the first full date key with that day, among source and fact atoms."""
        out: dict[str, str] = {}
        for a in sorted(self.source + self.active, key=lambda a: a.key):
            if a.kind in ("date", "datetime") and a.key[:4].isdigit():
                out.setdefault(a.key[4:10], a.key[:10])
        for day in sorted({moment.date().isoformat() for moment in self.moments}):
            out.setdefault(day[4:10], day)
        return out


# Atoms of event texts, process-wide: (text, reference date) -> (offset, atoms, their keys).
# The atoms of an event depend only on its text and the date of its reference time (the
# extractor reads nothing else of it, and no atom spans the clause break between two joined
# events), so a consolidation that meets an event again (a retry, another worker, the next
# run over the same subject) skips its extraction. ``offset`` is where the text started in
# the joined text the atoms' offsets refer to; an event met at another offset gets shifted
# copies. Bounded, least recently used out first.
CACHE_SIZE = 20_000
_Entry = tuple[int, tuple[Atom, ...], tuple[Key, ...]]
_cache: OrderedDict[tuple[str, date], _Entry] = OrderedDict()
_cache_lock = Lock()
# The extractions of one job (:func:`prose_inputs`' ``seen``): entries as the cache keeps
# them, in a dict the job owns and drops when it ends.
Extractions = dict[tuple[str, date], _Entry]


@holds_text
def clear_atom_cache() -> None:
    """Forget every cached extraction (e.g. after content was purged)."""
    with _cache_lock:
        _cache.clear()
    _value_atoms.cache_clear()


def _shifted(atoms: tuple[Atom, ...], delta: int) -> tuple[Atom, ...]:
    return tuple(new_atom(a.kind, a.key, a.text, a.start + delta, a.end + delta) for a in atoms)


def _split(found: list[Atom], starts: list[int]) -> list[tuple[Atom, ...]]:
    """Cut atoms ordered by offset into the runs that start in each text (``starts``)."""
    offsets = [a.start for a in found]
    cuts = [bisect_left(offsets, s) for s in starts[1:]]
    return [tuple(found[lo:hi]) for lo, hi in zip([0, *cuts], [*cuts, len(found)], strict=False)]


@dataclass
class _Day:
    """The valid events of one day (in one UTC offset), with the atoms of each (offsets
    as in the day's joined text) and their (kind, key)s."""

    events: list[Event]
    atoms: list[tuple[Atom, ...]]
    keys: list[tuple[Key, ...]]


def _known(ids: list[tuple[str, date]], seen: Extractions | None) -> list[_Entry | None]:
    """The entries of ``ids`` extracted before: by this job (``seen``), else in the cache."""
    hits: list[_Entry | None] = [seen.get(k) for k in ids] if seen else [None] * len(ids)
    if any(hit is None for hit in hits):
        with _cache_lock:
            hits = [_cache.get(k) if hit is None else hit for k, hit in zip(ids, hits, strict=False)]
    return hits


def _extract_days(events: Iterable[Event], seen: Extractions | None = None) -> list[_Day]:
    """The atoms of the valid events, by day.

    The extractor reads only the *date* of its reference time, so the events of one
    day (in their own UTC offset) are extracted in one call on their joined text:
    one call per event would cost several times the extraction itself. Events met
    before (by this job: ``seen``, which this fills; or in the cache) are not extracted
    again; the others are extracted together, in one call.
    """
    by_day: dict[tuple[date, object], list[Event]] = {}
    offsets: dict[tzinfo, timedelta | None] = {}  # a fixed-offset zone has one offset
    for ev in events:
        if ev.state == "valid" and ev.text:
            at = ev.occurred_at
            tz = at.tzinfo
            if type(tz) is timezone:
                off = offsets.get(tz)
                if off is None:
                    off = offsets[tz] = at.utcoffset()
            else:
                off = at.utcoffset()
            group = by_day.get((at.date(), off))
            if group is None:
                by_day[(at.date(), off)] = [ev]
            else:
                group.append(ev)
    days: list[_Day] = []
    step = len(_JOIN)
    for (day, _), group in by_day.items():
        texts = [ev.text or "" for ev in group]
        ids = [(text, day) for text in texts]
        bases = [0, *accumulate(len(text) + step for text in texts[:-1])]
        hits = _known(ids, seen)
        atoms: list[tuple[Atom, ...]] = []
        keys: list[tuple[Key, ...]] = []
        missed: list[int] = []
        moved: list[int] = []  # cached at another offset
        for i, hit in enumerate(hits):
            if hit is None:
                missed.append(i)
                atoms.append(())
                keys.append(())
                continue
            base, found, found_keys = hit
            if base != bases[i]:
                found = _shifted(found, bases[i] - base)
                moved.append(i)
            atoms.append(found)
            keys.append(found_keys)
        if moved and len(moved) < len(hits):  # a text said twice that day: keep the entry that fits one
            fits = {ids[i] for i, hit in enumerate(hits) if hit is not None and hit[0] == bases[i]}
            moved = [i for i in moved if ids[i] not in fits]
        if missed:
            starts = [0, *accumulate(len(texts[i]) + step for i in missed[:-1])]
            found_all = extract_atoms(_JOIN.join(texts[i] for i in missed), reference_time=group[0].occurred_at)
            for i, start, run in zip(missed, starts, _split(found_all, starts), strict=False):
                atoms[i] = run if start == bases[i] else _shifted(run, bases[i] - start)
                keys[i] = tuple([(a.kind, a.key) for a in run])
        with _cache_lock:
            touch = _cache.move_to_end
            for k, hit in zip(ids, hits, strict=False):
                if hit is not None:
                    try:
                        touch(k)
                    except KeyError:  # evicted meanwhile by another thread
                        pass
            for i in (*missed, *moved):
                _cache[ids[i]] = (bases[i], atoms[i], keys[i])
                _cache.move_to_end(ids[i])
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
        if seen is not None:
            seen.update(zip(ids, zip(bases, atoms, keys, strict=False), strict=False))
        days.append(_Day(group, atoms, keys))
    return days


def events_holding(events: Iterable[Event], labels: Iterable[str], *, seen: Extractions | None = None) -> list[str]:
    """Ids of the valid events among ``events`` whose own atoms include one named by
    ``labels`` (``kind:key``, :func:`label_of`: the subjects of the gate's ``atom_*``
    findings), sorted. The atoms are those :func:`prose_inputs` extracted for the gate: from
    the job's ``seen``, else the cache, so this extracts nothing the gate did not."""
    wanted = {(kind, key) for kind, _, key in (label.partition(":") for label in labels)}
    if not wanted:
        return []
    found = {
        ev.event_id
        for d in _extract_days(events, seen)
        for ev, keys in zip(d.events, d.keys, strict=False)
        if not wanted.isdisjoint(keys)
    }
    return sorted(found)


def event_tokens(events: Iterable[Event], *, seen: Extractions | None = None) -> set[Key]:
    """The value tokens (:func:`token_of`) of the valid events' own atoms, as the gate's prose
    diff extracts them: what the job's gate then reads from ``seen`` or the cache."""
    return {token_of(a) for d in _extract_days(events, seen) for run in d.atoms for a in run}


def prose_inputs(snapshot: Snapshot, *, seen: Extractions | None = None) -> ProseInputs:
    """Extract the snapshot side of the prose diff (pure; reusable across artifacts).

    ``seen``: the extractions of the job's earlier snapshots, which this adds to (a dict
    the caller keeps for one job): a hierarchy gates each part against its own events and
    then its root against them all, a history the bounded cache cannot hold at once, so
    without it the root would extract every event again. The result is the same either way.
    """
    days = _extract_days(snapshot.events, seen)
    source: list[Atom] = []
    runs: list[tuple[list[Key], list[Atom]]] = []
    for d in days:
        run = list(chain.from_iterable(d.atoms))
        runs.append((list(chain.from_iterable(d.keys)), run))
        source.extend(run)
    relative: dict[Key, set[str]] = {}
    literals: dict[str, list[Atom]] = {}
    for a in source:
        # Every date's words, read again without a reference: those that are relative ("tomorrow",
        # "2 weeks ago": a relative phrase may start with a digit) key what a summary may quote.
        if a.kind == "date" or a.kind == "datetime":
            found = literals.get(a.text)
            if found is None:
                found = literals[a.text] = extract_atoms(a.text, affirmations=False)
            for literal in found:  # "tomorrow" -> rel:+1d
                if literal.key.startswith("rel:") and literal.kind == a.kind:
                    relative.setdefault(key_of(literal), set()).add(a.key)
    active = value_atoms(
        text
        for f in snapshot.facts
        if f.status == "active" and f.value is not None
        for text in value_forms(f.value_type, f.value)
    )
    retired = [
        (f.fact_id, frozenset(f.source_event_ids), value_atoms(value_forms(f.value_type, f.value)))
        for f in snapshot.facts
        if f.status != "active" and f.value is not None
    ]
    active_tokens = {token_of(a) for a in active}
    # Which valid events state each value token a retired fact states (and no active one).
    said_by: dict[Key, set[str]] = {}
    wanted = {token_of(a) for _, _, atoms in retired for a in atoms} - active_tokens
    if wanted:
        for d in days:
            for ev, in_event in zip(d.events, d.atoms, strict=False):
                for a in in_event:
                    tok = token_of(a)
                    if tok in wanted:
                        said_by.setdefault(tok, set()).add(ev.event_id)
    stale: dict[Key, set[str]] = {}
    for fid, own_sources, atoms in retired:
        for a in atoms:
            tok = token_of(a)
            # Still supported by a current fact, or by an event that is not this fact's own source.
            if tok in active_tokens or (said_by.get(tok, set()) - own_sources):
                continue
            stale.setdefault(tok, set()).add(fid)
    # The memory's own names: a summary may mention its subject, the actors, and the ids
    # of facts, events and conflicts (lineage, not content); a deleted event's actor is erased.
    names = {
        snapshot.tenant_id,
        snapshot.subject_id,
        *(e.actor for e in snapshot.events if e.actor is not None),
        *(e.event_id for e in snapshot.events),
        *(f.fact_id for f in snapshot.facts),
        *(c.conflict_id for c in snapshot.conflicts),
    }

    # When each event was said: "in their message of 14 March", "at 09:05 UTC" (support only:
    # a summary that leaves the times out loses nothing).
    moments = tuple(sorted({e.occurred_at for e in snapshot.events if e.state == "valid"}))

    atom_set = AtomSet.from_runs(runs)
    inputs = ProseInputs(
        source=source,
        source_keys=frozenset(atom_set.reps),
        active=active,
        names=tuple(sorted(names)),
        moments=moments,
        stale={k: tuple(sorted(v)) for k, v in stale.items()},
        relative={k: tuple(sorted(v)) for k, v in relative.items()},
    )
    inputs.__dict__["atom_set"] = atom_set  # the cached property, already computed
    return inputs


def claim_atoms(artifact: ArtifactBody) -> tuple[list[Atom], list[Atom]]:
    """The atoms of the artifact's claim values and qualifier values: what it states structurally.

    Returns ``(carried, variants)``: the primary rendering of each value (enough to carry a
    source atom) and the other spellings a summary may use ("99.9%" for 99.9)."""
    primary: list[str] = []
    others: list[str] = []
    for c in artifact.claims:
        rendered = value_forms(c.value_type, c.value)
        primary.extend(rendered[:1])
        others.extend(rendered[1:])
        primary.extend(v for _, v in c.qualifiers)
    return value_atoms(primary), value_atoms(others)


def anchor_dates(summary: list[Atom], inp: ProseInputs) -> list[Atom]:
    """Give summary dates the anchor their wording lacks.

    A date without a year ("March 6", key ``--03-06``) takes the year of the source or
    fact date with the same day. A relative date ("tomorrow") has no anchor once the
    summary is read back; it is supported only as a quote of a source that used the
    same words, and then means the date that source meant. If sources used the words
    for different dates, the summary's use matches none of them and is not judged.
    """
    out = []
    for a in summary:
        if a.kind == "date" and a.key.startswith("--"):
            full = inp.full_dates.get(a.key[1:])
            out.append(a if full is None else replace(a, key=full))
        elif a.key.startswith("rel:") and key_of(a) in inp.relative:
            meant = inp.relative[key_of(a)]
            if len(meant) == 1:
                out.append(replace(a, key=meant[0]))
        else:
            out.append(a)
    return out
