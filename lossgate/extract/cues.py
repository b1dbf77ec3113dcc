"""The deterministic extractor: loss-intolerant values next to a predicate's cue words.

A sentence proposes a fact of predicate P when it contains one of P's registry ``cues``
(whole words, any case) and exactly one atom of the kind P's type takes: ``money`` for
a money predicate (amount and currency), ``date`` for a date, ``identifier`` for an
entity id, a count (``quantity``) for an int. Two candidate values in one sentence
propose nothing: the extractor never guesses which one the cue names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from lossgate.gate.atoms import Atom, extract_atoms
from lossgate.model.records import Event
from lossgate.model.registry import Registry

__all__ = ["AtomExtractor", "Candidate", "Extractor"]

_KINDS = {"money": "money", "date": "date", "entity_id": "identifier", "int": "quantity", "decimal": "quantity"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Candidate:
    """A fact an extractor proposes: a predicate, a value (in the registry type's JSON form)
    and the events it was read from."""

    predicate: str
    value: Any
    source_event_ids: tuple[str, ...]
    qualifiers: tuple[tuple[str, str], ...] = ()


class Extractor(Protocol):
    """Proposes facts from a subject's valid events."""

    name: str

    def propose(self, events: Sequence[Event], registry: Registry) -> list[Candidate]: ...


def _value(value_type: str, atom: Atom) -> Any:
    if value_type == "money":
        currency, _, amount = atom.key.partition(" ")
        return {"amount": amount, "currency": currency} if amount else None
    if value_type in ("date", "entity_id"):
        return atom.key
    number = atom.key.partition(" ")[0]
    try:
        parsed = Decimal(number)
    except InvalidOperation:
        return None
    if value_type == "int":
        return int(parsed) if parsed == parsed.to_integral_value() else None
    return str(parsed)


class AtomExtractor:
    """Amounts, dates, identifiers and counts named by a predicate's cues (no model)."""

    name = "atoms-v1"

    def propose(self, events: Sequence[Event], registry: Registry) -> list[Candidate]:
        cued = [
            (p, [re.compile(rf"\b{re.escape(c.lower())}\b") for c in p.cues])
            for p in registry.predicates.values()
            if p.cues and p.value_type in _KINDS
        ]
        out: list[Candidate] = []
        if not cued:
            return out
        for e in events:
            for sentence in _SENTENCE.split(e.text or ""):
                low = sentence.lower()
                named = [p for p, cues in cued if any(rx.search(low) for rx in cues)]
                if not named:
                    continue
                atoms = extract_atoms(sentence)
                for p in named:
                    found = [a for a in atoms if a.kind == _KINDS[p.value_type]]
                    if len(found) == 1 and (value := _value(p.value_type, found[0])) is not None:
                        out.append(Candidate(p.name, value, (e.event_id,)))
        return out
