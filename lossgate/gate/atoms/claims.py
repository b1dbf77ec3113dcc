"""Which characters of a text already belong to an atom.

The extractor runs its passes in priority order; a pass may only take
characters no earlier pass has claimed, which is what keeps atom spans from
overlapping (the digits of a date are never read again as a bare number).
"""

from __future__ import annotations

from collections.abc import Iterator

from .atom import AtomKind
from .numbers import is_negative_before

#: (kind, key, start, end) of an atom before it becomes an ``Atom``.
Found = tuple[AtomKind, str, int, int]


class Claims:
    """Which characters of the text already belong to an atom."""

    __slots__ = ("found", "mask", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.mask = bytearray(len(text))
        self.found: list[Found] = []

    def free(self, start: int, end: int) -> bool:
        return self.mask.find(1, start, end) < 0

    def take(self, kind: AtomKind, key: str | None, start: int, end: int) -> bool:
        """Claim ``start:end`` for an atom with ``key`` (an empty key claims
        the span without recording an atom; None claims nothing)."""
        if key is None or start >= end or self.mask.find(1, start, end) >= 0:
            return False
        self.mask[start:end] = b"\x01" * (end - start)
        if key:
            self.found.append((kind, key, start, end))
        return True

    def word_start(self, start: int) -> bool:
        """True if ``start`` is not inside a word."""
        return start == 0 or not (self.text[start - 1].isalnum() or self.text[start - 1] == "_")

    def free_runs(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """Maximal unclaimed sub-ranges of ``start:end``."""
        mask = self.mask
        while start < end:
            hit = mask.find(1, start, end)
            if hit < 0:
                yield start, end
                return
            if hit > start:
                yield start, hit
            nxt = mask.find(0, hit, end)
            if nxt < 0:
                return
            start = nxt

    def signed(self, start: int) -> tuple[bool, int]:
        """(negative?, start including the sign) for a number at ``start``."""
        if is_negative_before(self.text, start) and self.mask[start - 1] == 0:
            return True, start - 1
        return False, start


def masked(text: str, mask: bytearray) -> str:
    """``text`` with every claimed character replaced by NUL (same length)."""
    if mask.find(1) < 0:
        return text
    pieces: list[str] = []
    pos, n = 0, len(text)
    while pos < n:
        hit = mask.find(1, pos)
        if hit < 0:
            pieces.append(text[pos:])
            break
        end = mask.find(0, hit)
        end = n if end < 0 else end
        pieces.append(text[pos:hit])
        pieces.append("\x00" * (end - hit))
        pos = end
    return "".join(pieces)
