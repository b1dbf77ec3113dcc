"""The PostgreSQL store: many processes on many hosts share one database.

Connections come from a :class:`psycopg_pool.ConnectionPool`, opened on first
use. Each public method opens one transaction; the primitives live in
:mod:`lossgate.store.postgres.tx` and :mod:`lossgate.store.postgres.derived`, beside
the shared ones of :mod:`lossgate.store.core`.

Connections fail fast. Connecting may take the URL's ``connect_timeout`` (libpq's
parameter, ``postgresql://host/db?connect_timeout=N``), :data:`CONNECT_TIMEOUT` seconds
when it has none (the store reads no environment, so not ``PGCONNECT_TIMEOUT`` either),
and a transaction waits as long for a connection, new or pooled: then
:class:`~lossgate.errors.StoreError`. Opening the pool connects once first, so a wrong
or unreachable database fails with the driver's reason. The pool checks a connection
before handing it out, at no cost while its socket is quiet: a server that went away
has closed it, and the pool then drops every idle connection that went with it. A
failed attempt to connect is not retried in the background: a transaction waiting for a
connection asks for one again every :data:`ASK_AGAIN_S` seconds, each ask a fresh attempt,
so the store answers again within that time of the database's return, for the
transactions already waiting as for the next one.

Isolation. A read is ``REPEATABLE READ, READ ONLY``: one snapshot. A write is
``READ COMMITTED`` plus row locks: ``lock_clock`` does ``INSERT ... ON CONFLICT
DO NOTHING`` then ``SELECT ... FOR UPDATE`` on the subject's clock row, and the
first primitive touching a subject locks that row too (structurally: every
primitive is scoped before its body runs), so writers of one subject
queue behind each other while writers of different subjects run in parallel.
The database still enforces the invariants on its own: ``(tenant, subject,
seq)`` and ``(tenant, event_id)`` are keys.

Deadlocks. A transaction that locks several clocks can deadlock with one
locking them in the other order (``Ledger.append`` sorts its subjects, but a
multi-operation transaction such as an ingest file locks them as it meets
them). PostgreSQL detects the cycle after ``deadlock_timeout`` (1 s by
default) and aborts one side, which raises :class:`~lossgate.errors.StoreError`
saying that nothing was written and the operation is safe to retry;
:func:`retry_transient` re-runs a whole operation on such errors.

Row-level security. Every table with ``tenant_id`` has a forced policy
``tenant_id = current_setting('lossgate.tenant', true)``; each transaction
calls ``set_config('lossgate.tenant', tenant, true)`` before touching a
tenant's rows (again only when the tenant changes). Superusers and
``BYPASSRLS`` roles ignore policies, even forced ones, so every transaction
except a migration starts with ``SET LOCAL ROLE`` to a ``NOLOGIN`` role: the
store's ``role`` picks which (docs/roles.md says what a deployment grants to
which login).

* ``"app"`` (the default): ``lossgate_app``, which the first migration creates,
  with ``SELECT, INSERT, UPDATE`` on the tenant tables and no ``DELETE``.
* ``"worker"``: ``lossgate_worker`` (``migrations/0006_worker_role.sql``), a
  member of ``lossgate_app`` that alone may also claim jobs and extend leases.
* ``None``: no switch; the login role must hold the privileges itself (for
  example a non-superuser login after ``GRANT lossgate_app TO app_user``).

The login role must be allowed to assume the role (superusers can; otherwise
``GRANT lossgate_app TO <application login>``, ``GRANT lossgate_worker TO
<worker login>``). Migrations run as the login role, which therefore needs to
own (or be able to create) the tables and, the first time, ``CREATEROLE``.

The rebuild queue is the one table whose rows of every tenant something must
see: workers claim any tenant's job. Only the ``NOLOGIN`` role ``lossgate_queue``
can, and only ``lossgate_worker`` reaches it, through two ``SECURITY DEFINER``
functions, ``lossgate_claim_job`` and ``lossgate_heartbeat_job``, which claim one
due job or extend one lease (``migrations/0005_queue_role.sql``); an
application connection calling them is refused. Finishing a job is a plain
update of one row of the tenant the transaction has set. The migrating role
becomes a member of ``lossgate_queue`` only while it hands it the functions.

Migrations. ``migrations/NNNN_*.sql``, applied in order inside one
transaction under ``pg_advisory_xact_lock``, recorded in ``schema_migrations``;
two processes migrating at once apply each file once. The column encodings
(ISO text for offset-carrying times, ``json`` versus ``jsonb``, ``COLLATE "C"``
ids) are explained at the top of ``0001_ledger.sql``.
"""

from __future__ import annotations

import random
import re
import select
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import PipelineStatus, TransactionStatus
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool, PoolTimeout

from lossgate.errors import ConfigError, IdempotencyConflict, LossgateError, StoreBusy, StoreError
from lossgate.model.derived_records import RecallRecord
from lossgate.store.core.migrations import pending
from lossgate.store.core.store import CoreStore
from lossgate.store.postgres.tx import PostgresReadTx, PostgresWriteTx
from lossgate.store.protocol import CompactReport

__all__ = ["APP_ROLE", "CONNECT_TIMEOUT", "WORKER_ROLE", "PostgresStore", "is_transient", "retry_transient"]

#: Seconds to connect, and to wait for a connection, unless the URL's ``connect_timeout`` says.
CONNECT_TIMEOUT = 5
#: Seconds between the asks of a transaction waiting for a connection (each may connect anew).
ASK_AGAIN_S = 0.25
APP_ROLE = "lossgate_app"
WORKER_ROLE = "lossgate_worker"
_ROLES = {"app": APP_ROLE, "worker": WORKER_ROLE}
# Any constant works; it only has to be the same in every lossgate process.
_MIGRATION_LOCK = 0x105_5647_A7E
_TRANSIENT = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure, pg_errors.LockNotAvailable)
_CONSTRAINT_HINTS = {
    "events_pkey": "the subject's seq is already taken",
    "events_tenant_id_event_id_key": "the event id is already used in this tenant",
    "facts_pkey": "the fact id is already used in this tenant",
    "registries_pkey": "the registry version is already stored",
}
T = TypeVar("T")


def _configure(conn: psycopg.Connection[Any]) -> None:
    # Server instants come back in UTC whatever the server's TimeZone is.
    conn.execute("SET TIME ZONE 'UTC'")
    # JSON arrives as text and lossgate.store.rows decodes it (with orjson):
    # psycopg's own decoding would hand a JSON string back as a bare str,
    # which rows cannot tell from undecoded text.
    conn.adapters.register_loader("json", TextLoader)
    conn.adapters.register_loader("jsonb", TextLoader)


def _readable(fd: int) -> bool:
    """Whether the socket ``fd`` has something to read now (its peer closed it, or sent something)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover - Windows


def _translate(exc: psycopg.Error, acting_as: str | None = None) -> LossgateError:
    """The one place where driver errors become lossgate errors. ``acting_as`` is the
    database role the failed transaction ran as, named when a privilege was missing."""
    if isinstance(exc, _TRANSIENT):
        return StoreBusy(
            f"PostgreSQL aborted the transaction because of a concurrent one ({type(exc).__name__}: "
            f"{exc.diag.message_primary}); nothing was written and the operation is safe to retry"
        )
    if isinstance(exc, psycopg.IntegrityError):
        # Under row-level security PostgreSQL withholds the key values (DETAIL),
        # so name what the constraint protects instead.
        hint = _CONSTRAINT_HINTS.get(exc.diag.constraint_name or "", exc.diag.message_detail or "")
        return IdempotencyConflict(f"integrity violation: {exc.diag.message_primary}; {hint}".rstrip("; "))
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return StoreError(
            f"PostgreSQL: {exc.diag.message_primary} (the store acts as {acting_as or 'the login role'}; "
            "docs/roles.md says which login may act as which role, and what each may do)"
        )
    if isinstance(exc, PoolTimeout):
        return StoreError(f"no PostgreSQL connection available: {exc}")
    return StoreError(f"PostgreSQL: {exc}")


def is_transient(exc: BaseException) -> bool:
    """Whether re-running the whole operation may succeed: a deadlock, a serialization
    failure, or a unique violation caused by a concurrent commit of the same id (the
    re-run sees that id and reports a duplicate or a precise conflict)."""
    cause = exc.__cause__
    if isinstance(exc, IdempotencyConflict):
        return isinstance(cause, pg_errors.UniqueViolation)
    return isinstance(exc, StoreBusy)


def retry_transient(operation: Callable[[], T], *, attempts: int = 5, backoff: float = 0.05) -> T:
    """Run ``operation`` (which opens its own transaction), re-running it with jittered
    backoff while it fails with a transient error; the last error is raised as is."""
    for attempt in range(1, attempts + 1):
        try:
            return operation()
        except (StoreError, IdempotencyConflict) as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            time.sleep(backoff * attempt * (0.5 + random.random()))
    raise AssertionError("unreachable")  # pragma: no cover


# Every table that can hold content (compact vacuums them).
_TABLES = (
    "events",
    "event_terms",
    "facts",
    "fact_sources",
    "conflicts",
    "ledger_log",
    "artifacts",
    "attempts",
    "recalls",
    "guard_results",
    "responses",
    "lineage",
    "aliases",
    "shadow_aliases",
    "clocks",
    "jobs",
)


class PostgresStore(CoreStore):
    """A lossgate database on PostgreSQL (``postgresql://user@host:port/db``).

    ``role`` is who the store acts for: ``"app"`` (an application), ``"worker"`` (a
    consolidation worker, the only one that may claim jobs and extend leases) or
    ``None`` (the login role itself); see the module's notes on row-level security.
    ``timeout`` is how long a transaction waits for a connection (default: the connect
    timeout; see the module's notes on failing fast)."""

    engine = "postgres"

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float | None = None,
        role: str | None = "app",
    ) -> None:
        if role is not None and role not in _ROLES:
            raise ConfigError(f"unknown store role {role!r} (expected one of {', '.join(_ROLES)}, or None)")
        self.url = url
        self.db_role = _ROLES[role] if role else None
        self._sizes = (min_size, max_size)
        self._connect_kwargs: dict[str, Any] = {"autocommit": True}
        params = self._params()
        if "connect_timeout" not in params:
            self._connect_kwargs["connect_timeout"] = CONNECT_TIMEOUT
        seconds = int(params.get("connect_timeout", CONNECT_TIMEOUT))
        # Read as libpq and psycopg do: at least 2 s.
        self._timeout = float(max(seconds, 2)) if timeout is None else timeout
        self._pool_obj: ConnectionPool | None = None
        self._pool_lock = threading.Lock()
        switch = [sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(self.db_role))] if self.db_role else []
        self._begin_read: list[sql.SQL | sql.Composed] = [
            sql.SQL("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
            *switch,
        ]
        self._begin_write: list[sql.SQL | sql.Composed] = [sql.SQL("BEGIN ISOLATION LEVEL READ COMMITTED"), *switch]
        self._begin_login: list[sql.SQL | sql.Composed] = [sql.SQL("BEGIN")]  # schema work, as the login role

    def _params(self) -> dict[str, Any]:
        """The URL's parameters, or :class:`ConfigError` for a URL no connection could follow:
        one libpq cannot parse, a port that is no number, or a ``connect_timeout`` that is not
        a whole number of seconds from 1 (libpq reads 0, a negative or a fraction as "wait for
        ever")."""
        try:
            params = conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise ConfigError(
                f"PostgreSQL URL {self._safe_url()} cannot be read: {' '.join(str(exc).split())}"
            ) from None
        for port in str(params.get("port") or "5432").split(","):
            if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
                raise ConfigError(
                    f"PostgreSQL URL {self._safe_url()}: the port {port!r} is not a number from 1 to 65535"
                )
        wait = str(params.get("connect_timeout", CONNECT_TIMEOUT))
        if not (wait.isascii() and wait.isdigit() and int(wait) >= 1):
            raise ConfigError(
                f"PostgreSQL URL {self._safe_url()}: connect_timeout is whole seconds from 1, not {wait!r}"
            )
        return params

    # -- connections -------------------------------------------------------------------
    def _pool(self) -> ConnectionPool:
        with self._pool_lock:
            if self._pool_obj is None:
                try:  # once, in this thread: a wrong or unreachable database fails now, with the reason
                    psycopg.connect(self.url, **self._connect_kwargs).close()
                except psycopg.Error as exc:
                    why = " ".join(str(exc).split())
                    raise StoreError(f"cannot connect to PostgreSQL at {self._safe_url()}: {why}") from exc
                # reconnect_timeout=0: a failed attempt is not retried on psycopg_pool's growing
                # backoff (1, 2, 4, 8 s...), which kept the pool away from a database back up.
                pool = ConnectionPool(
                    self.url,
                    min_size=self._sizes[0],
                    max_size=self._sizes[1],
                    timeout=self._timeout,
                    kwargs=self._connect_kwargs,
                    configure=_configure,
                    check=self._check,
                    reconnect_timeout=0.0,
                    open=False,
                    name="lossgate",
                )
                try:
                    pool.open(wait=True, timeout=self._timeout)
                except PoolTimeout as exc:
                    pool.close()
                    raise StoreError(f"cannot connect to PostgreSQL at {self._safe_url()}: {exc}") from exc
                self._pool_obj = pool
            return self._pool_obj

    @contextmanager
    def _lend(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, waited for at most the store's ``timeout``: asked for in slices
        of :data:`ASK_AGAIN_S`, because the pool tries to connect only when asked (a request
        that waited through an outage would else wait out its whole timeout after the
        database is back). Raises ``PoolTimeout`` at the deadline."""
        pool = self._pool()
        deadline = time.monotonic() + self._timeout
        while True:
            left = deadline - time.monotonic()
            try:
                conn = pool.getconn(timeout=max(0.001, min(ASK_AGAIN_S, left)))
                break
            except PoolTimeout:
                if time.monotonic() >= deadline:
                    raise PoolTimeout(f"couldn't get a connection after {self._timeout:g} s") from None
        try:
            yield conn
        finally:
            pool.putconn(conn)

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        # The pool's check of a connection it hands out: none for a quiet socket; else a
        # round trip, and if that fails, one for every idle connection too.
        try:
            if not conn.closed and not _readable(conn.pgconn.socket):
                return
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            if self._pool_obj is not None:
                self._pool_obj.check()
            raise

    def _safe_url(self) -> str:
        """The URL without its password (in the user part or a ``password=`` parameter)."""
        url = re.sub(r"://([^:@/]*):[^@/]*@", r"://\1:***@", self.url)
        return re.sub(r"([?&]password=)[^&]*", r"\1***", url)

    @contextmanager
    def _transaction(
        self, begin: Sequence[sql.SQL | sql.Composed], *, pipeline: bool = False
    ) -> Iterator[psycopg.Connection[Any]]:
        # The choke point: whatever the body or the commit raises from the
        # driver leaves as a lossgate error; lossgate errors pass untouched.
        # ``pipeline`` sends statements without waiting for their results until a
        # result is fetched: BEGIN, set_config and the first query share one round
        # trip, and COMMIT rides with the closing sync. COPY cannot be pipelined, so
        # only reads and small writes use it.
        try:
            with self._lend() as conn:
                try:
                    with conn.pipeline() if pipeline else nullcontext():
                        if pipeline:  # the extended protocol takes one statement per query
                            for statement in begin:
                                conn.execute(statement)
                        else:
                            conn.execute(sql.SQL("; ").join(begin))
                        yield conn
                        # A database error the body caught: never commit around it. (In
                        # pipeline mode the transaction status lags; the pipeline's does not.)
                        if (
                            conn.info.transaction_status == TransactionStatus.INERROR
                            or conn.info.pipeline_status == PipelineStatus.ABORTED
                        ):
                            raise StoreError("the transaction failed earlier and was rolled back")
                        conn.execute("COMMIT")
                except BaseException:
                    self._rollback(conn)
                    raise
        except psycopg.Error as exc:
            raise _translate(exc, None if begin is self._begin_login else self.db_role) from exc

    @staticmethod
    def _rollback(conn: psycopg.Connection[Any]) -> None:
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            pass  # a broken connection: the pool discards it, the server rolled back

    @contextmanager
    def read(self) -> Iterator[PostgresReadTx]:
        with self._transaction(self._begin_read, pipeline=True) as conn:
            yield PostgresReadTx(conn)

    @contextmanager
    def write(self) -> Iterator[PostgresWriteTx]:
        with self._transaction(self._begin_write) as conn:
            tx = PostgresWriteTx(conn)
            yield tx
        tx.committed()

    def record_recall(self, record: RecallRecord) -> None:
        with self._transaction(self._begin_write, pipeline=True) as conn:
            PostgresWriteTx(conn).insert_recall(record)

    @contextmanager
    def tenant_connection(self, tenant_id: str) -> Iterator[psycopg.Connection[Any]]:
        """A raw connection in a write transaction as the store's role with ``tenant_id``
        set, for tests and operators who want to see what row-level security lets through.
        Commits on normal exit; errors are translated like any other transaction's."""
        with self._transaction(self._begin_write) as conn:
            conn.execute("SELECT set_config('lossgate.tenant', %s, true)", (tenant_id,))
            yield conn

    # -- schema ------------------------------------------------------------------------
    def schema_version(self) -> int:
        return max(self.applied_migrations(), default=0)

    def applied_migrations(self) -> frozenset[int]:
        with self._transaction(self._begin_login) as conn:
            if conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,):
                return frozenset()
            return frozenset(int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations"))

    def _apply_migrations(self) -> None:
        # As the login role (it owns the tables), never as the application role.
        with self._transaction(self._begin_login) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
            for version, script in pending(self.engine, applied):
                conn.execute(script.encode())  # no parameters: one multi-statement script
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))

    # -- maintenance ---------------------------------------------------------------------
    def compact(self) -> CompactReport:
        # VACUUM cannot run in a transaction block: the pool's connections are in autocommit
        # mode, and it runs as the login role, which owns the tables.
        t0 = time.perf_counter()
        try:
            with self._lend() as conn:
                size = (
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relname = ANY(%s) "
                    "AND c.relnamespace = current_schema()::regnamespace"
                )
                before = conn.execute(size, (list(_TABLES),)).fetchone()
                for table in _TABLES:
                    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
                after = conn.execute(size, (list(_TABLES),)).fetchone()
        except psycopg.Error as exc:
            raise _translate(exc, None) from exc
        return CompactReport(
            steps=(f"vacuum {len(_TABLES)} tables",),
            seconds=time.perf_counter() - t0,
            bytes_before=int(before[0] or 0) if before else 0,
            bytes_after=int(after[0] or 0) if after else 0,
        )

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool_obj = self._pool_obj, None
        if pool is not None:
            pool.close()
