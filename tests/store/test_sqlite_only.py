"""SQLite's own error rules: a held writer lock is StoreBusy, wherever it is met."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lossgate.errors import StoreBusy
from lossgate.store.sqlite import SQLiteStore


@contextmanager
def _writer_lock_held(path: Path) -> Iterator[None]:
    """Another connection holds the database's writer lock for the block."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_writer_lock_held_elsewhere_is_store_busy(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path, busy_timeout_ms=100)
    store.migrate()
    with _writer_lock_held(path):
        with pytest.raises(StoreBusy, match="locked"), store.write() as tx:
            tx.lock_clock("t", "s")
        with store.read() as rtx:  # readers are not blocked (WAL)
            assert rtx.clock("t", "s").high_water == 0
    with store.write() as tx:  # and the store works once the lock is free
        tx.lock_clock("t", "s")
    store.close()


def test_a_lock_met_by_a_statement_is_store_busy(tmp_path: Path) -> None:
    """A read transaction that starts writing meets the writer lock at its statement, not at BEGIN."""
    path = tmp_path / "m.db"
    store = SQLiteStore(path, busy_timeout_ms=100)
    store.migrate()
    with _writer_lock_held(path), pytest.raises(StoreBusy), store.read() as rtx:
        rtx._run("INSERT INTO clocks (tenant_id, subject_id) VALUES ('t', 's')")  # type: ignore[attr-defined]
    store.close()


def test_a_migration_numbered_below_the_newest_applied_is_still_applied(tmp_path):
    """Numbers are reserved per change, so a lower-numbered migration can ship after a
    higher one: opening the store applies it even though the newest is already applied."""
    import sqlite3

    import lossgate

    path = tmp_path / "gap.db"
    lossgate.open(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX events_by_tier")
    conn.execute("DELETE FROM schema_migrations WHERE version = 9")  # as if 9 shipped after the newest
    conn.commit()
    conn.close()

    memory = lossgate.open(f"sqlite:///{path}")
    try:
        assert 9 in memory.store.applied_migrations()
    finally:
        memory.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'events_by_tier'").fetchone()
    conn.close()
