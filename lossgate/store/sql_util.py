"""Small helpers shared by the SQL backends' statement builders."""

from __future__ import annotations

from typing import Iterator, Sequence

CHUNK = 500  # ids per IN (...) list: well under every backend's parameter limit


def chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    """``ids`` in slices of at most :data:`CHUNK`."""
    for i in range(0, len(ids), CHUNK):
        yield ids[i : i + CHUNK]


def marks(n: int) -> str:
    """``n`` SQLite placeholders: ``?,?,?``."""
    return ",".join("?" * n)
