"""The snapshot side of the prose fact diff: source atoms, rendered values, stale values.

:func:`prose_inputs` extracts, once per snapshot, the atoms of every valid event
(relative dates resolved against the event's ``occurred_at``), the atoms of the
active facts' values, the memory's own names, the *stale* values (those only a
retired fact states) and what each relative date the sources used meant.
:func:`render_value` writes a typed value the ways a summary might, so a value
becomes atoms the diff can match.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import cached_property
from typing import Any, Iterable, Iterator

from lossgate.gate.atoms import Atom, extract_atoms, is_affirmation
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.typed import typed_value
from lossgate.records import ArtifactBody, Event, Snapshot
from lossgate.values import coerce_value

__all__ = ["ProseInputs", "prose_inputs", "render_value", "value_atoms", "claim_atoms", "anchor_dates",
           "key_of", "label_of", "token_of", "Key"]

Key = tuple[str, str]


def _dur(td: timedelta) -> str:
    """A duration as a person writes it: ``30 minutes``, ``2 hours``, ``7 days``."""
    secs = int(td.total_seconds())
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if secs and secs % size == 0:
            return f"{secs // size} {unit}"
    return f"{secs} seconds"


def render_value(value_type: str, value: Any) -> list[str]:
    """Texts a summary might use for a typed value (canonicalised first), for atom matching."""
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
    return extract_atoms(joined, affirmations=False) if joined else []


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

    source: list[Atom]                 # atoms of valid events (with affirmation helpers)
    source_keys: frozenset[Key]
    active: list[Atom]                 # atoms of active facts' values
    names: tuple[str, ...]             # tenant, subject, actors, fact/event/conflict ids
    stale: dict[Key, tuple[str, ...]]  # value token -> retired fact ids stating it, unsupported otherwise
    relative: dict[Key, tuple[str, ...]]  # a relative date as written ("tomorrow") -> the dates it meant

    def context(self, summary: str) -> list[Atom]:
        """Atoms of the memory's own names that the summary mentions (a substring test
        first: a snapshot has thousands of ids, a summary mentions a few)."""
        return value_atoms(n for n in self.names if n in summary)

    @cached_property
    def vocabulary(self) -> frozenset[str]:
        """Content stems of every statement of the sources (computed on first use)."""
        words: set[str] = set()
        for a in self.source:
            if a.kind == "negation":
                words |= content_stems(a.key[3:]) if is_affirmation(a) else set(a.key.split("|")[1:])
        return frozenset(words)

    @cached_property
    def full_dates(self) -> dict[str, str]:
        """``-MM-DD`` -> the first full date key with that day, among source and fact atoms."""
        out: dict[str, str] = {}
        for a in sorted(self.source + self.active, key=lambda a: a.key):
            if a.kind in ("date", "datetime") and a.key[:4].isdigit():
                out.setdefault(a.key[4:10], a.key[:10])
        return out


def _extract_events(events: Iterable[Event]) -> Iterator[tuple[list[str], list[Atom]]]:
    """Atoms of the valid events, each with the id of the event that states it.

    The extractor reads only the *date* of its reference time, so the events of one
    day (in their own UTC offset) are extracted in one call on their joined text:
    one call per event would cost several times the extraction itself.
    """
    by_day: dict[tuple[date, object], list[Event]] = {}
    for ev in events:
        if ev.state == "valid" and ev.text:
            by_day.setdefault((ev.occurred_at.date(), ev.occurred_at.utcoffset()), []).append(ev)
    for group in by_day.values():
        starts, pos = [], 0
        for ev in group:
            starts.append(pos)
            pos += len(ev.text or "") + len(_JOIN)
        found = extract_atoms(_JOIN.join(ev.text or "" for ev in group), reference_time=group[0].occurred_at)
        yield [group[bisect_right(starts, a.start) - 1].event_id for a in found], found


def prose_inputs(snapshot: Snapshot) -> ProseInputs:
    """Extract the snapshot side of the prose diff (pure; reusable across artifacts)."""
    source: list[Atom] = []
    said_by: dict[Key, set[str]] = {}
    relative: dict[Key, set[str]] = {}
    for ids, found in _extract_events(snapshot.events):
        source.extend(found)
        for event_id, a in zip(ids, found):
            said_by.setdefault(token_of(a), set()).add(event_id)
            if a.kind in ("date", "datetime") and not a.text[:1].isdigit():
                for literal in extract_atoms(a.text, affirmations=False):  # "tomorrow" -> rel:+1d
                    if literal.key.startswith("rel:") and literal.kind == a.kind:
                        relative.setdefault(key_of(literal), set()).add(a.key)
    active = value_atoms(text for f in snapshot.facts if f.status == "active" and f.value is not None
                         for text in render_value(f.value_type, f.value))
    retired = [(f.fact_id, frozenset(f.source_event_ids), value_atoms(render_value(f.value_type, f.value)))
               for f in snapshot.facts if f.status != "active" and f.value is not None]
    active_tokens = {token_of(a) for a in active}
    stale: dict[Key, set[str]] = {}
    for fid, own_sources, atoms in retired:
        for a in atoms:
            tok = token_of(a)
            # Still supported by a current fact, or by an event that is not this fact's own source.
            if tok in active_tokens or (said_by.get(tok, set()) - own_sources):
                continue
            stale.setdefault(tok, set()).add(fid)
    # The memory's own names: a summary may mention its subject, the actors, and the ids
    # of facts, events and conflicts (lineage, not content).
    names = {snapshot.tenant_id, snapshot.subject_id, *(e.actor for e in snapshot.events),
             *(e.event_id for e in snapshot.events), *(f.fact_id for f in snapshot.facts),
             *(c.conflict_id for c in snapshot.conflicts)}

    return ProseInputs(
        source=source, source_keys=frozenset(key_of(a) for a in source), active=active, names=tuple(sorted(names)),
        stale={k: tuple(sorted(v)) for k, v in stale.items()},
        relative={k: tuple(sorted(v)) for k, v in relative.items()},
    )


def claim_atoms(artifact: ArtifactBody) -> tuple[list[Atom], list[Atom]]:
    """The atoms of the artifact's claim values and qualifier values: what it states structurally.

    Returns ``(carried, variants)``: the primary rendering of each value (enough to carry a
    source atom) and the other spellings a summary may use ("99.9%" for 99.9)."""
    primary: list[str] = []
    others: list[str] = []
    for c in artifact.claims:
        rendered = render_value(c.value_type, c.value)
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
