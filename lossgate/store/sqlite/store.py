"""The embedded SQLite store: one file, WAL, no server.

Write transactions start with ``BEGIN IMMEDIATE``, which takes SQLite's single
writer lock up front, so the clock read at the start of a transaction cannot
change before it commits (SQLite's equivalent of ``SELECT ... FOR UPDATE``).
Each thread gets its own connection; any number of processes may share the
file, serialised by that lock.

Errors. Every statement runs through :class:`_Connection`, which remembers a database
error raised by any statement of the open transaction: a write transaction whose body
caught such an error rolls back at exit and raises :class:`~lossgate.errors.StoreError`
(as PostgreSQL's aborted transactions do), never commits around it. SQLite's busy and
locked errors (another connection holds the writer lock past ``busy_timeout``) leave as
:class:`~lossgate.errors.StoreBusy`, wherever they happen: at ``BEGIN IMMEDIATE``, in a
statement, or at ``COMMIT``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lossgate.errors import IdempotencyConflict, LossgateError, StoreBusy, StoreError
from lossgate.model.derived_records import RecallRecord
from lossgate.store.core.migrations import pending
from lossgate.store.core.store import CoreStore
from lossgate.store.protocol import CompactReport
from lossgate.store.sqlite.tx import SQLiteReadTx, SQLiteWriteTx

__all__ = ["SQLiteStore"]


def _statements(script: str) -> Iterator[str]:
    """Split a migration into statements (trigger bodies contain semicolons)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                yield buf
            buf = ""
    if buf.strip() and not all(line.strip().startswith("--") or not line.strip() for line in buf.splitlines()):
        raise StoreError(f"incomplete SQL statement in migration: {buf[:80]!r}")


# SQLite's primary result codes for "another connection holds the lock".
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _translate(exc: sqlite3.Error, doing: str = "SQLite") -> LossgateError:
    """The one place where driver errors become lossgate errors."""
    code = getattr(exc, "sqlite_errorcode", None)
    if (code is not None and code & 0xFF in _BUSY_CODES) or (
        code is None and "locked" in str(exc)
    ):  # errors raised before a statement carry no code
        return StoreBusy(
            f"{doing}: {exc} (another connection holds the database's writer lock; "
            "nothing was written and the operation is safe to retry)"
        )
    if isinstance(exc, sqlite3.IntegrityError):
        return IdempotencyConflict(f"integrity violation: {exc}")
    return StoreError(f"{doing}: {exc}")


class _Cursor(sqlite3.Cursor):
    """A cursor whose fetches report a database error to its connection (a statement's
    error may surface at the row that meets it)."""

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            _failed(self.connection, exc)
            raise

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            _failed(self.connection, exc)
            raise


def _failed(conn: sqlite3.Connection, exc: sqlite3.Error) -> None:
    if isinstance(conn, _Connection) and conn.failed is None:
        conn.failed = exc


class _Connection(sqlite3.Connection):
    """A connection that remembers the first database error of its open transaction
    (``failed``), whether or not the caller catches it."""

    failed: sqlite3.Error | None = None

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def _cursor(self) -> _Cursor:
        cur: _Cursor = super().cursor(_Cursor)
        return cur

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return self._cursor().execute(sql, parameters)
        except sqlite3.Error as exc:
            _failed(self, exc)
            raise

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        try:
            return self._cursor().executemany(sql, parameters)
        except sqlite3.Error as exc:
            _failed(self, exc)
            raise


class SQLiteStore(CoreStore):
    """A lossgate database in one SQLite file (``sqlite:///path.db``)."""

    engine = "sqlite"

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self._busy = busy_timeout_ms
        self._local = threading.local()

    # -- connections -------------------------------------------------------------------
    def _conn(self) -> _Connection:
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy / 1000, factory=_Connection)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"PRAGMA busy_timeout={self._busy}")
            except sqlite3.Error as exc:
                raise _translate(exc, f"cannot open SQLite database {self.path}") from exc
            self._local.conn = conn
        return conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.failed = None
        try:
            conn.execute(begin)
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        try:
            yield conn
            # A database error the body caught: never commit around it.
            if conn.failed is not None:
                raise StoreError(f"the transaction failed earlier ({conn.failed}) and was rolled back")
            conn.execute("COMMIT")
        except BaseException as exc:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite rolled back already
            if isinstance(exc, sqlite3.Error):  # the commit's own failure
                raise _translate(exc, "SQLite commit failed") from exc
            raise
        finally:
            conn.failed = None

    @contextmanager
    def _translated(self) -> Iterator[None]:
        # The one choke point where driver errors raised in a body become lossgate errors.
        try:
            yield
        except sqlite3.Error as exc:
            raise _translate(exc) from exc

    @contextmanager
    def read(self) -> Iterator[SQLiteReadTx]:
        with self._transaction("BEGIN"), self._translated():
            yield SQLiteReadTx(self._conn())

    @contextmanager
    def write(self) -> Iterator[SQLiteWriteTx]:
        with self._transaction("BEGIN IMMEDIATE"), self._translated():
            yield SQLiteWriteTx(self._conn())

    def record_recall(self, record: RecallRecord) -> None:
        with self.write() as tx:
            tx.insert_recall(record)

    # -- schema ------------------------------------------------------------------------
    def schema_version(self) -> int:
        return max(self.applied_migrations(), default=0)

    def applied_migrations(self) -> frozenset[int]:
        conn = self._conn()
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name='schema_migrations'").fetchone()
        if not has:
            return frozenset()
        return frozenset(int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations"))

    def _apply_migrations(self) -> None:
        with self._transaction("BEGIN IMMEDIATE") as conn, self._translated():
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            for version, script in pending(
                self.engine, (r[0] for r in conn.execute("SELECT version FROM schema_migrations"))
            ):
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, datetime('now'))", (version,)
                )

    # -- maintenance ---------------------------------------------------------------------
    def _file_bytes(self) -> int:
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))

    def compact(self) -> CompactReport:
        # Measured (bench/bench_compact.py): 0.26 s for 10,000 events (9 MB), 0.75 s for 50,000
        # (47 MB), 1.16x a plain VACUUM of the same file: the cost is the rewrite, linear in size.
        t0, before = time.perf_counter(), self._file_bytes()
        conn = self._conn()
        with self._transaction("BEGIN IMMEDIATE"), self._translated():
            # An FTS5 'delete' only adds a tombstone; the purged text's tokens stay in the
            # index's segments until they merge. 'optimize' merges them all, dropping both.
            for table in ("events_fts", "facts_fts"):
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        with self._translated():
            # VACUUM writes a fresh copy of the live rows over the whole file (free pages and
            # the free space inside pages, where purged cells linger, are not copied) ...
            conn.execute("VACUUM")
            # ... through the WAL, which the checkpoint copies into the file and truncates.
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise StoreBusy("compact: another connection kept the WAL from being truncated; run it again")
        return CompactReport(
            steps=("fts optimize", "vacuum", "wal checkpoint (truncate)"),
            seconds=time.perf_counter() - t0,
            bytes_before=before,
            bytes_after=self._file_bytes(),
        )

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
