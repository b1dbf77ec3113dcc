"""Each engine's schema migrations: ``lossgate/store/<engine>/migrations/NNNN_*.sql``,
applied in order and recorded in ``schema_migrations``."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from importlib import resources

__all__ = ["migrations", "latest_version", "pending"]


@cache
def migrations(engine: str) -> tuple[tuple[int, str], ...]:
    """``(version, script)`` of every migration of ``engine`` (``sqlite``, ``postgres``), in order."""
    folder = resources.files(f"lossgate.store.{engine}") / "migrations"
    found = [
        (int(entry.name.split("_", 1)[0]), entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    ]
    return tuple(sorted(found))


def latest_version(engine: str) -> int:
    return migrations(engine)[-1][0]


def pending(engine: str, applied: Iterable[int]) -> list[tuple[int, str]]:
    """The migrations of ``engine`` not among ``applied``, in order."""
    done = set(applied)
    return [(version, script) for version, script in migrations(engine) if version not in done]
