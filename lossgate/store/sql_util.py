"""Small helpers shared by the SQL backends' statement builders."""

from __future__ import annotations

from typing import Iterator, Sequence

# What a vector embeds, per kind: (table, id column, text to embed, what makes an item
# embeddable). Both backends' SQL reads the same rows as ``x``.
EMBEDDABLE = {
    "event": ("events", "event_id", "x.actor || ': ' || x.text", "x.state='valid' AND x.text IS NOT NULL"),
    "fact": ("facts", "fact_id", "x.search_text", "x.status='active' AND x.search_text IS NOT NULL"),
}

CHUNK = 500  # ids per IN (...) list: well under every backend's parameter limit


def chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    """``ids`` in slices of at most :data:`CHUNK`."""
    for i in range(0, len(ids), CHUNK):
        yield ids[i : i + CHUNK]


def marks(n: int) -> str:
    """``n`` SQLite placeholders: ``?,?,?``."""
    return ",".join("?" * n)
