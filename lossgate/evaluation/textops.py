"""Small, deterministic text and value edits shared by mutation operators and rewrites.

Each edit works on one span of a summary found by the atom extractor, so a
mutation changes exactly the surface form of one atom and nothing else.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any

from lossgate.gate.atoms import Atom, extract_atoms

__all__ = [
    "close_number",
    "close_digits",
    "sentences",
    "join_sentences",
    "replace_span",
    "shift_date_text",
    "money_forms",
    "iso_to_named",
    "named_to_iso",
    "atoms_of",
    "MONTHS",
    "shift_value_date",
]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$€£])")
_ISO = re.compile(r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9T])")  # a date, not a datetime
_NAMED = re.compile(r"\b(" + "|".join(MONTHS) + r") ([0-9]{1,2})(?:, ([0-9]{4}))?\b")


def atoms_of(text: str) -> list[Atom]:
    """Atoms of ``text`` without the affirmation helpers."""
    return extract_atoms(text, affirmations=False)


def close_digits(text: str) -> str | None:
    """Swap the last two adjacent, different digits of ``text`` (``$14,250`` -> ``$14,205``).

    Falls back to bumping the last digit when every digit is the same; separators and
    symbols stay where they are. ``None`` if ``text`` has no digit.
    """
    pos = [i for i, ch in enumerate(text) if ch.isdigit()]
    if not pos:
        return None
    chars = list(text)
    for a, b in reversed(list(zip(pos, pos[1:], strict=False))):
        if chars[a] != chars[b] and not (a == pos[0] and chars[b] == "0"):
            chars[a], chars[b] = chars[b], chars[a]
            return "".join(chars)
    last = pos[-1]
    chars[last] = str((int(chars[last]) + 1) % 10)
    return "".join(chars)


def close_number(canonical: str) -> str:
    """A close, different number in canonical decimal form (14250 -> 14205, 5 -> 6)."""
    out = close_digits(canonical) or canonical
    return out if out != canonical else str(int(canonical) + 1)


def sentences(text: str) -> list[str]:
    """Split a summary into sentences (at ``. ! ?`` followed by a capital or digit)."""
    return [s for s in _SENTENCE.split(text.strip()) if s]


def join_sentences(parts: list[str]) -> str:
    return " ".join(parts)


def replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _named(d: date, with_year: bool = True) -> str:
    return f"{MONTHS[d.month - 1]} {d.day}, {d.year}" if with_year else f"{MONTHS[d.month - 1]} {d.day}"


def shift_date_text(text: str, days: int = 1) -> str | None:
    """Move the first ISO or named date in ``text`` by ``days``, keeping its format."""
    m = _ISO.search(text)
    if m:
        d = date(int(m[1]), int(m[2]), int(m[3])) + timedelta(days=days)
        return replace_span(text, m.start(), m.end(), d.isoformat())
    m = _NAMED.search(text)
    if m:
        year = int(m[3]) if m[3] else 2000
        d = date(year, MONTHS.index(m[1]) + 1, int(m[2])) + timedelta(days=days)
        return replace_span(text, m.start(), m.end(), _named(d, bool(m[3])))
    return None


def iso_to_named(text: str) -> str:
    """``2026-03-25`` -> ``March 25, 2026`` everywhere in ``text``."""
    return _ISO.sub(lambda m: _named(date(int(m[1]), int(m[2]), int(m[3]))), text)


def named_to_iso(text: str) -> str:
    """``March 25, 2026`` -> ``2026-03-25`` (dates with a year only)."""

    def sub(m: re.Match[str]) -> str:
        if not m[3]:
            return m[0]
        return date(int(m[3]), MONTHS.index(m[1]) + 1, int(m[2])).isoformat()

    return _NAMED.sub(sub, text)


_SYMBOL = {"USD": "$", "EUR": "€", "GBP": "£"}


def _grouped(amount: str) -> str:
    whole, _, frac = amount.lstrip("-").partition(".")
    sign = "-" if amount.startswith("-") else ""
    return sign + f"{int(whole):,}" + (f".{frac}" if frac else "")


def money_forms(key: str) -> list[str]:
    """Equivalent spellings of a money atom key ``"USD 14250"``:
    ``$14,250``, ``14,250 USD``, ``USD 14,250.00``."""
    code, _, amount = key.partition(" ")
    whole, _, frac = amount.partition(".")
    two = f"{_grouped(whole)}.{(frac + '00')[:2]}" if len(frac) <= 2 else _grouped(amount)
    forms = [f"{_grouped(amount)} {code}", f"{code} {two}"]
    if code in _SYMBOL and not amount.startswith("-"):
        forms.insert(0, f"{_SYMBOL[code]}{_grouped(amount)}")
    return forms


def shift_value_date(value_type: str, canonical: Any, days: int = 1) -> Any:
    """A date or datetime canonical value moved by ``days``."""
    if value_type == "date":
        return (date.fromisoformat(canonical) + timedelta(days=days)).isoformat()
    return (datetime.fromisoformat(canonical) + timedelta(days=days)).isoformat()
