"""Prose fact diff: a deterministic extractor of loss-intolerant *atoms* and
a diff of the atoms of a source text against those of its summary.

No model, no network, no clock: compiled ``re`` patterns and the tables in
:mod:`.tables`. The extractor is not the compressor.

>>> src = extract_atoms("Refund $14,250 by 2026-03-25. Do not contact the customer.")
>>> diff_atoms(src, extract_atoms("Never contact the customer. Refund 14,250 USD by March 25, 2026.")).empty
True

Keys (equal meaning gives an equal key):

======================  =====================================================
money                   ``USD 14250``, ``EUR -2400``, ``USD 0.5`` ("50 cents");
                        ``$``=USD, ``¥``=JPY; scale words apply ("$14.25k")
quantity                ``7 business_day``, ``200 word``, ``5 kg``; a bare
                        number is a unit-less quantity: ``3``, ``-2400``
percent                 ``15%``
date                    ``2026-03-25`` (``3/4/2026`` is US m/d/y; dotted
                        ``4.3.2026`` is d.m.y); ``--03-06`` without a year (or the
                        year of ``reference_time``); ``2026-03`` for a month;
                        ``rel:+1d`` / ``rel:next-mon`` when relative and no
                        ``reference_time`` is given
time                    ``14:32``, ``14:32-05:00`` (zone abbreviations become
                        offsets), ``14:32 ET`` (generic zones), ``eod``
datetime                ``<date>T<time>``: ``2026-03-14T14:32-05:00``,
                        ``2026-03-15Teod``
identifier              as written (``INV-9182``, ``cust_482``); UUIDs and
                        hex digests lower-cased; URLs
email                   lower-cased address
phone                   ``+`` and digits; ten-digit North American numbers
                        without a country code get ``+1``
negation                ``not|<head>|<sorted content stems>``; affirmative
                        clauses are helper atoms ``is|<words>`` (see
                        :func:`is_affirmation`), only used to spot flips
party                   ``Marcus Chen``, ``Acme Corp`` (suffix canonical)
======================  =====================================================

Not atoms: plain words, hyphenated English ("follow-up"), snake-case
phrases ("disputed_line_item_3"), numbers glued to words ("3rd", "Q3"),
title-case headings, sentence-initial capitalised words.
"""

from __future__ import annotations

from .atom import (
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
from .diff import diff_atoms
from .extract import extract_atoms

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
