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


def test_sqlite_ranks_by_the_bm25_formula_postgresql_computes(tmp_path):
    # Each term's bm25() read back into its frequency, then weighed by the subject's
    # statistics (its event count, the term's matches, the mean length of the events
    # matched): the scores are lossgate.store.core.bm25's, from counts made here.
    import random

    import lossgate
    from lossgate import NewEvent
    from lossgate.store.core.bm25 import idf, term_weight

    words = ["refund", "budget", "lisbon", "parcel", "invoice", "morning", "window", "seat", "zebra", "quartz"]
    rng = random.Random(7)
    texts = {f"e{i}": " ".join(rng.choice(words) for _ in range(rng.randint(2, 14))) for i in range(400)}
    memory = lossgate.open(f"sqlite:///{tmp_path / 'one.db'}")
    memory.append([NewEvent(tenant_id="t", subject_id="s", event_id=i, text=text) for i, text in texts.items()])
    with memory.store.write() as tx:
        tx.refresh_search_index()
    for query in ["refund lisbon", "zebra quartz window", "budget", "seat parcel invoice morning"]:
        with memory.store.read() as tx:
            found = tx.search_events("t", "s", query, limit=50)
        terms = query.split()
        matched = {i: t.split() for i, t in texts.items() if set(t.split()) & set(terms)}
        length = {i: len(said) + 1 for i, said in matched.items()}  # and the actor, "user"
        mean = sum(length.values()) / len(length)
        score = {
            i: sum(
                idf(len(texts), sum(term in s for s in matched.values()))
                * term_weight(said.count(term), length[i], mean)
                for term in terms
                if term in said
            )
            for i, said in matched.items()
        }
        assert len(found) == min(50, len(score))
        assert all(score[a] >= score[b] - 1e-9 for a, b in zip(found, found[1:], strict=False)), query
        assert [score[i] for i in found] == pytest.approx(sorted(score.values(), reverse=True)[:50], rel=1e-9)
    memory.close()
