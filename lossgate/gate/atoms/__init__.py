"""Prose fact diff: a deterministic extractor of loss-intolerant atoms
(money, quantities, dates and times, identifiers, contacts, negated
statements, named parties) and a diff of the atoms of a source text against
those of its summary. No model, no network, no clock: only ``re`` and the
tables in :mod:`.tables`.

>>> src = extract_atoms("Refund $14,250 by 2026-03-25. Do not contact the customer.")
>>> diff_atoms(src, extract_atoms("Do not contact the customer. Refund 14,250 USD by March 25, 2026.")).empty
True
"""

from __future__ import annotations

from .diff import diff_atoms
from .extract import extract_atoms
from .model import (
    AFFIRMED,
    ATOM_KINDS,
    CHANGE_REASONS,
    NEGATED,
    Atom,
    AtomChange,
    AtomDiff,
    AtomKind,
    ChangeReason,
    is_affirmation,
)

__all__ = [
    "AFFIRMED",
    "ATOM_KINDS",
    "CHANGE_REASONS",
    "NEGATED",
    "Atom",
    "AtomChange",
    "AtomDiff",
    "AtomKind",
    "ChangeReason",
    "diff_atoms",
    "extract_atoms",
    "is_affirmation",
]
