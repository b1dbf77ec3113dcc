"""Reading text for the fence: sentences, their negations, conditions and hedges, the source
sentences of events (read once per text), and the coarse roots words are compared by."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from lossgate.gate.atoms import extract_atoms
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence.lexicon import (
    CLAUSE,
    CONDITIONS,
    HEDGES,
    KINDS,
    MARKER_WORDS,
    MAY_HEDGE,
    MOVING,
    NEGATION_CUE,
    ONLY_SHARPENS,
    QUESTION,
    SENTENCE,
    UNDOING,
    WORDY,
)
from lossgate.model.records import Event
from lossgate.runtime.caches import holds_text


@dataclass(frozen=True)
class Source:
    text: str  # lower case
    stems: frozenset[str]
    core: frozenset[str]  # the stems outside its condition clauses: what it is about
    negations: frozenset[str]  # keys of the negated statements (``not|head|word...``)
    conditions: tuple[tuple[str, frozenset[str]], ...]  # (kind of condition, the stems of its clause)
    hedged: bool
    moves: bool  # it tells of a new value ("moved to", "correction:")
    undoes: bool  # it says something no longer holds


def atom_keys(text: str) -> frozenset[str]:
    return frozenset(f"{a.kind}:{a.key}" for a in extract_atoms(text) if a.kind not in WORDY)


def stated(raw: str) -> frozenset[str]:
    """What a sentence states a value with: its atoms, words and numbers."""
    return atom_keys(raw) | content_stems(raw) | numbers_in(raw)


def sentences(text: str) -> list[tuple[str, str]]:
    """``text``'s sentences, each as written and with its atoms' spans (amounts, dates,
    times, identifiers) blanked: the prose fact diff compares those exactly, and their words
    ("USD", "April", the "May" of a date) say nothing about meaning here."""
    out = []
    for raw in SENTENCE.split(text):
        raw = raw.strip(" -*\t") if raw else ""
        if not raw:
            continue
        plain = raw
        for a in extract_atoms(raw):
            if a.kind not in WORDY and a.text:
                plain = plain.replace(a.text, " ")
        out.append((raw, plain))
    return out


def negations(text: str) -> frozenset[str]:
    return frozenset(a.key for a in extract_atoms(text) if a.kind == "negation" and a.key.startswith("not|"))


def conditions(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each condition ``text`` sets, by kind, with the content stems of its clause ("after
    supervisor review": ``("after", {"supervisor", "review"})``)."""
    low = text.lower()
    sharpened = bool(ONLY_SHARPENS.search(low)) and low.count("only") == 1
    return tuple(
        (
            KINDS[name],
            content_stems(" ".join(m.group(0) for m in CLAUSE.finditer(low) if rx.match(m.group(0)))) - MARKER_WORDS,
        )
        for name, rx in CONDITIONS.items()
        if rx.search(low) and not (name == "only" and sharpened)
    )


def hedged(low: str) -> bool:
    """Whether ``low`` hedges, outside a question ("a rule about when emails may be sent")."""
    return any(not QUESTION.search(low[: m.start()]) for rx in (HEDGES, MAY_HEDGE) for m in rx.finditer(low))


def source_sentences(events: tuple[Event, ...]) -> dict[str, tuple[Source, ...]]:
    return {e.event_id: read_source(e.text or "") for e in events}


@lru_cache(maxsize=16_384)
def read_source(text: str) -> tuple[Source, ...]:
    # A subject's events are read again at every consolidation with a narrative: each text
    # is read once (clear_sentence_cache drops deleted text, as the gate's atom cache does).
    return tuple(
        Source(
            text=x.lower(),
            stems=content_stems(x),
            core=content_stems(CLAUSE.sub(" ", x.lower())),
            negations=negations(x),
            conditions=conditions(x),
            hedged=hedged(x.lower()),
            moves=bool(MOVING.search(x.lower())),
            undoes=bool(UNDOING.search(x.lower())),
        )
        for _, x in sentences(text)
    )


@holds_text
def clear_sentence_cache() -> None:
    """Forget every source text read (after a deletion: no deleted text lingers in memory)."""
    read_source.cache_clear()


_SUFFIXES = ("ing", "ed", "es", "er", "ly", "s", "e")


def root(stem: str) -> str:
    """A coarser stem, so that inflections the stemmer keeps apart ("using", "use") meet."""
    for suffix in _SUFFIXES:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= 2:
            return stem[: -len(suffix)]
    return stem


def numbers_in(text: str) -> frozenset[str]:
    """The numbers in ``text``, written one way: "14,250.00" and "14250" are both "14250"."""
    out = set()
    for n in re.findall(r"[0-9][0-9:.,/-]*[0-9]|[0-9]", text):
        n = n.replace(",", "")
        if re.fullmatch(r"[0-9]+\.[0-9]+", n):
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return frozenset(out)


def roots(words: Iterable[str]) -> set[str]:
    return {root(w) for w in words}


def said(rx: re.Pattern[str], low: str) -> bool:
    """Whether ``rx`` matches ``low`` outside a negation ("neither replaced the other" says no change)."""
    return any(not NEGATION_CUE.search(low[max(0, m.start() - 24) : m.start()]) for m in rx.finditer(low))
