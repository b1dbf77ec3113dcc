"""PostgreSQL read and write transactions over one connection inside an open transaction.

:class:`~lossgate.store.postgres.store.PostgresStore` opens the transaction, switches
to the application role and translates errors; these classes run SQL. The shared
primitives come from :mod:`lossgate.store.core`; what is PostgreSQL's own is here and
in :mod:`lossgate.store.postgres.derived`.

Scoping is structural (``locks_subjects``, :mod:`lossgate.store.core.base`): before
any primitive's body runs, the transaction sets the tenant that row-level security
checks (``set_config('lossgate.tenant', ...)``, only when it changes) and, in a write
transaction, locks the subject's clock row on first touch (:meth:`PostgresWriteTx._scope`).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any

import psycopg
from psycopg import pq

from lossgate.model.records import Clock, EventState, Fact, FactStatus, NewEvent
from lossgate.store import rows
from lossgate.store.core.base import Row, Select, by_tenant
from lossgate.store.core.dialect import Dialect
from lossgate.store.core.tx import CoreReadTx, CoreWriteTx
from lossgate.store.postgres.derived import PostgresDerivedReads, PostgresDerivedWrites

__all__ = ["POSTGRES", "PostgresReadTx", "PostgresWriteTx", "subject_lock_key"]

POSTGRES = Dialect(
    name="postgres",
    placeholder="%s",
    lists="any",
    times="native",
    creation_order={
        "artifacts": "created_no",
        "recalls": "recall_no",
        "guard_results": "guard_no",
        "responses": "response_no",
    },
    null_safe_eq="IS NOT DISTINCT FROM",
    json_text="{col}->>'{key}'",
    json_value="{col}->'{key}'",
    byte_length="octet_length",
    unindexed="{col}",
    fence=" OFFSET 0",
    # the body is jsonb (equal as JSON to the text read back), the manifest json (kept as written)
    same_json={"body": "{col} = ?::jsonb", "manifest": "{col}::text = ?"},
)

_FACT_SELECT = f"SELECT {','.join(rows.FACT_COLUMNS)} FROM facts"


def _by_ids(sel: Select, ids: Sequence[str]) -> tuple[str, list[Any]]:
    """A select of rows by their ids, each looked up alone through the (tenant_id, id) key (an
    equality on every column of a unique key: one row, whatever the table's statistics), the
    subject compared after; sorted by the caller. Matched with ``= ANY(ids)`` beside the
    subject, the planner took the (tenant_id, subject_id, seq) key when the table had no
    statistics yet (an import, then revocations in one transaction) and filtered the subject's
    rows for each look-up: one of 15,000 rows, and the versions its transaction had left, took
    29 ms."""
    columns, table = sel.head.rsplit(" FROM ", 1)
    assert sel.where[0] == "tenant_id=?", sel.where  # the select of one subject's rows
    lookup = (
        f"{columns} FROM unnest(?::text[]) AS wanted(id) CROSS JOIN LATERAL "
        f"(SELECT * FROM {table} t WHERE t.tenant_id=? AND t.{sel.id_column} = wanted.id) AS {table}"
    )
    # the subject compared as an expression, which the planner cannot move into the look-up
    where = [("subject_id || '' = ?" if w == "subject_id=?" else w) for w in sel.where[1:]]
    return f"{lookup} WHERE {' AND '.join(where)}", [list(dict.fromkeys(ids)), *sel.args]


def _in_seq_order(found: list[Row], sel: Select) -> list[Row]:
    """The rows :func:`_by_ids` read, in the select's order, limited."""
    at = sel.seq_index
    return sorted(found, key=lambda r: r[at], reverse=sel.newest_first)[: sel.limit]


# COPY FROM is refused on tables under row-level security, so a batch is copied
# into a session-private staging table and moved with one INSERT ... SELECT,
# which the policies do check. ON COMMIT DELETE ROWS empties it at the end of
# every transaction. Created once per connection: the connection is remembered
# only once the creating transaction has committed.
_EVENT_STAGING = (
    "CREATE TEMP TABLE IF NOT EXISTS lossgate_events_in (LIKE events INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
)


def subject_lock_key(tenant_id: str, subject_id: str) -> tuple[int, int]:
    """The two 32-bit keys of the subject's transaction-level advisory lock
    (``pg_advisory_xact_lock(int, int)``, a key space apart from the migration lock's one
    ``bigint``): a hash of (tenant, subject), the same in every process. Two subjects
    whose hashes collide only wait for each other."""
    digest = hashlib.blake2b(f"{tenant_id}\0{subject_id}".encode(), digest_size=8, person=b"lossgate-subj").digest()
    return int.from_bytes(digest[:4], "big", signed=True), int.from_bytes(digest[4:], "big", signed=True)


_staged: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
_EVENT_COLS = ",".join(rows.EVENT_COLUMNS)


class PostgresReadTx(PostgresDerivedReads, CoreReadTx):
    """Read primitives; the caller holds a REPEATABLE READ, READ ONLY transaction."""

    _d = POSTGRES
    locks_subjects = True

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._c = conn
        self._tenant: str | None = None

    def _use_tenant(self, tenant_id: str) -> None:
        # A transaction may touch several tenants (an ingest file may span
        # them); set_config is transaction-local, so only a change needs it.
        if tenant_id != self._tenant:
            self._c.execute("SELECT set_config('lossgate.tenant', %s, true)", (tenant_id,))
            self._tenant = tenant_id

    def _scope(self, tenant_id: str, subject_id: str) -> None:
        self._use_tenant(tenant_id)  # one snapshot: nothing to lock

    def _reveal_key(self, key_hash: str) -> None:
        # Authentication, before any tenant is known: row-level security shows a key's row
        # to a transaction that names its hash (migrations/0017_api_keys.sql), and no other.
        self._c.execute("SELECT set_config('lossgate.key_hash', %s, true)", (key_hash,))

    # -- running statements --------------------------------------------------------------
    def _one(self, sql: str, args: Sequence[Any] = ()) -> Row | None:
        return self._c.execute(self._d.sql(sql), args).fetchone()

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        return self._c.execute(self._d.sql(sql), args).fetchall()

    def _run(self, sql: str, args: Sequence[Any] = ()) -> int:
        return self._c.execute(self._d.sql(sql), args).rowcount

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._c.cursor() as cur:
            cur.executemany(self._d.sql(sql), rows)

    def _fetch(self, selects: Sequence[Select]) -> list[list[Row]]:
        queries = [sel.ordered() if sel.ids is None else _by_ids(sel, sel.ids) for sel in selects]
        with self._batch(len(queries)):
            cursors = [self._c.execute(self._d.sql(sql), args) for sql, args in queries]
            found = [cur.fetchall() for cur in cursors]
        return [got if sel.ids is None else _in_seq_order(got, sel) for got, sel in zip(found, selects, strict=True)]

    def _batch(self, statements: int) -> AbstractContextManager[Any]:
        # Several independent statements in one round trip: pipeline mode, unless the
        # transaction is pipelined already (a nested block would add a sync).
        if statements < 2 or self._c.info.pipeline_status != pq.PipelineStatus.OFF:
            return nullcontext()
        return self._c.pipeline()

    def facts_citing(
        self, tenant_id: str, subject_id: str, event_ids: Sequence[str], *, statuses: Sequence[FactStatus] | None = None
    ) -> list[Fact]:
        status_sql = "" if statuses is None else " AND status = ANY(%s)"
        sql = (
            f"{_FACT_SELECT} WHERE tenant_id=%s AND subject_id=%s{status_sql} AND fact_id IN ("
            "SELECT fact_id FROM fact_sources WHERE tenant_id=%s AND subject_id=%s AND event_id = ANY(%s)"
            ") ORDER BY seq"
        )
        args = [
            tenant_id,
            subject_id,
            *([list(statuses)] if statuses is not None else []),
            tenant_id,
            subject_id,
            list(event_ids),
        ]
        return [rows.fact_from_row(r) for r in self._c.execute(sql, args).fetchall()]


class PostgresWriteTx(PostgresDerivedWrites, PostgresReadTx, CoreWriteTx):
    """Write primitives in a READ COMMITTED transaction, serialised per subject.

    The first primitive that touches a subject takes the subject's lock (a
    transaction-level advisory lock keyed by tenant and subject,
    :func:`subject_lock_key`), which holds for a subject never written too (it has no
    clock row to lock). :meth:`lock_clock` takes the same lock before the clock row, so
    the lock order is always: the subject's advisory lock, its clock row, its alias row.
    Everything the ledger reads about that subject
    afterwards is current and cannot change before commit: per subject, a write
    transaction behaves like SQLite's ``BEGIN IMMEDIATE``. Without this, an
    operation that reads a source event before locking the clock could act on a
    state a concurrent transaction has just changed.
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        super().__init__(conn)
        self._locked: set[tuple[str, str]] = set()  # subjects whose advisory lock this transaction holds
        self._clocked: set[tuple[str, str]] = set()  # ... and whose clock row it has created and locked
        self._staging_created = self._staging_dirty = False

    def _scope(self, tenant_id: str, subject_id: str) -> None:
        # The subject's lock, whether or not it has a clock row yet: a transaction-level
        # advisory lock keyed by (tenant, subject), released at commit or rollback.
        self._use_tenant(tenant_id)
        key = (tenant_id, subject_id)
        if key not in self._locked:
            self._c.execute("SELECT pg_advisory_xact_lock(%s, %s)", subject_lock_key(tenant_id, subject_id))
            self._locked.add(key)

    def lock_clock(self, tenant_id: str, subject_id: str) -> Clock:
        self._use_tenant(tenant_id)
        key = (tenant_id, subject_id)
        with self._c.pipeline():
            if key not in self._locked:  # the subject's lock first, as any first touch takes it
                self._c.execute("SELECT pg_advisory_xact_lock(%s, %s)", subject_lock_key(tenant_id, subject_id))
            if key not in self._clocked:
                self._c.execute(
                    "INSERT INTO clocks (tenant_id, subject_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    key,
                )
            cur = self._c.execute(
                "SELECT high_water, input_epoch FROM clocks WHERE tenant_id=%s AND subject_id=%s FOR UPDATE",
                key,
            )
        hw, ep = cur.fetchone() or (0, 0)
        self._locked.add(key)
        self._clocked.add(key)
        return Clock(tenant_id=tenant_id, subject_id=subject_id, high_water=hw, input_epoch=ep)

    def insert_events(self, items: Sequence[tuple[NewEvent, int, str, str]], *, recorded_at: datetime) -> None:
        # COPY per tenant, then one INSERT ... SELECT: a few round trips for a
        # batch of any size. Measured at 1,000 rows against executemany in a
        # pipeline (~2x slower) and INSERT ... SELECT FROM unnest(arrays) (~1.6x).
        at = recorded_at.isoformat()
        if self._c not in _staged and not self._staging_created:
            self._c.execute(_EVENT_STAGING)
            self._staging_created = True
        for tenant_id, run in by_tenant(items, lambda item: item[0].tenant_id):
            self._use_tenant(tenant_id)
            with self._c.cursor() as cur:
                if self._staging_dirty:  # a second batch in this transaction
                    cur.execute("DELETE FROM lossgate_events_in")
                with cur.copy(f"COPY lossgate_events_in ({_EVENT_COLS}) FROM STDIN") as copy:
                    for ev, seq, h, iso in run:
                        copy.write_row(rows.new_event_row(ev, seq, h, iso, at))
                cur.execute(f"INSERT INTO events ({_EVENT_COLS}) SELECT {_EVENT_COLS} FROM lossgate_events_in")
                self._staging_dirty = True

    def committed(self) -> None:
        """Called by the store once this transaction has committed."""
        if self._staging_created:
            _staged.add(self._c)

    def set_event_state(
        self, tenant_id: str, subject_id: str, event_id: str, state: EventState, *, purge: bool
    ) -> None:
        if not purge:
            CoreWriteTx.set_event_state(self, tenant_id, subject_id, event_id, state, purge=False)
            return
        # A purge erases the actor's and the text's terms from the search index too (invariant 11).
        self._c.execute(
            "WITH e AS (UPDATE events SET state=%(st)s, actor=NULL, text=NULL, payload=NULL"
            "  WHERE tenant_id=%(t)s AND subject_id=%(s)s AND event_id=%(id)s RETURNING seq)"
            " UPDATE event_terms x SET terms='' FROM e"
            " WHERE x.tenant_id=%(t)s AND x.subject_id=%(s)s AND x.seq=e.seq",
            {"st": state, "t": tenant_id, "s": subject_id, "id": event_id},
        )
