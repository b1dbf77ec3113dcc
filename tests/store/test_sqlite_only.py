"""SQLite's own rules: a held writer lock is StoreBusy, wherever it is met; search ranks as FTS5 does in a file of one subject."""

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


def test_a_file_of_one_subject_ranks_as_fts5s_own_bm25(tmp_path):
    # Each term's bm25() divided by the weight FTS5 gave it, then weighed by the subject's
    # statistics: in a file holding one subject, every event valid, those are the file's, so
    # the order is FTS5's own (to rounding).
    import random

    import lossgate
    from lossgate import NewEvent

    words = ["refund", "budget", "lisbon", "parcel", "invoice", "morning", "window", "seat", "zebra", "quartz"]
    rng = random.Random(7)
    path = tmp_path / "one.db"
    memory = lossgate.open(f"sqlite:///{path}")
    memory.append(
        [
            NewEvent(
                tenant_id="t",
                subject_id="s",
                event_id=f"e{i}",
                text=" ".join(rng.choice(words) for _ in range(rng.randint(2, 14))),
            )
            for i in range(400)
        ]
    )
    with memory.store.write() as tx:
        tx.refresh_search_index()
    conn = sqlite3.connect(path)
    for query in ["refund lisbon", "zebra quartz window", "budget", "seat parcel invoice morning"]:
        with memory.store.read() as tx:
            found = tx.search_events("t", "s", query, limit=50)
        match = " OR ".join(f'"{w}"' for w in query.split())
        scored = dict(
            conn.execute(
                "SELECT e.event_id, -bm25(events_fts) FROM events_fts f JOIN events e ON e.rowid = f.rowid "
                "WHERE events_fts MATCH ?",
                (match,),
            ).fetchall()
        )
        assert len(found) == min(50, len(scored))
        assert all(scored[a] >= scored[b] - 1e-9 for a, b in zip(found, found[1:], strict=False)), query
        best = sorted(scored.values(), reverse=True)[: len(found)]
        assert [scored[i] for i in found] == pytest.approx(best, rel=1e-9)
    conn.close()
    memory.close()
