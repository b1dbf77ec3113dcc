"""What only PostgreSQL has: row-level security, the worker's role, concurrent migration,
deadlock translation, the pipelined reads and the JSON/time encodings. (Per-subject
serialisation holds on every store: ``test_serialisation.py`` and the shipped store
contract, ``test_store_contract.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import lossgate
from lossgate import IdempotencyConflict, NewEvent
from lossgate.errors import StoreError
from lossgate.model.registry import load_registry
from tests.support.threads import AT, ev, fact, in_threads

pytestmark = pytest.mark.postgres

REGISTRY = load_registry(Path(__file__).resolve().parents[2] / "examples" / "predicates.toml")


@pytest.fixture
def server_url() -> str:
    url = os.environ.get("LOSSGATE_TEST_PG_URL")
    if not url:
        pytest.skip("PostgreSQL tests need LOSSGATE_TEST_PG_URL (set by .ci/run)")
    return url


@pytest.fixture
def pg_url(server_url: str, request: pytest.FixtureRequest) -> str:
    from lossgate.testing.postgres import fresh_database

    return fresh_database(server_url, request)


@pytest.fixture
def memory(pg_url: str):
    mem = lossgate.open(pg_url)
    mem.admin.load_predicates(REGISTRY)
    yield mem
    mem.close()


@pytest.fixture
def worker_store(memory: lossgate.Memory, pg_url: str):
    """The same database opened by a worker: the only role that may claim jobs and extend leases."""
    from lossgate.store.postgres import PostgresStore

    store = PostgresStore(pg_url, role="worker")
    yield store
    store.close()


# -- row-level security ------------------------------------------------------------------

TENANT_TABLES = ("clocks", "events", "facts", "fact_sources", "conflicts", "ledger_log")


def _tenant_tables(conn: Any) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND column_name = 'tenant_id' AND table_name NOT LIKE 'lossgate_%' ORDER BY 1"
        )
    ]


def test_a_tenant_connection_sees_only_its_tenant_without_any_where_clause(memory):
    memory.append([ev("a1"), ev("a2", subject="u2"), ev("a3"), ev("b1", tenant="globex"), ev("b2", tenant="globex")])
    memory.assert_facts([fact("fa", "a1"), fact("fa2", "a3", seats=6)])  # a conflict
    memory.assert_facts([fact("fb", "b1", tenant="globex"), fact("fb2", "b2", tenant="globex", seats=6)])
    store = memory.store
    with store.tenant_connection("acme") as conn:
        tables = _tenant_tables(conn)
        assert set(TENANT_TABLES) <= set(tables)
        for table in tables:
            tenants = {r[0] for r in conn.execute(f"SELECT tenant_id FROM {table}")}
            assert tenants == ({"acme"} if table in TENANT_TABLES else tenants & {"acme"}), table
        assert sorted(r[0] for r in conn.execute("SELECT fact_id FROM facts")) == ["fa", "fa2"]
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (3,)
        assert conn.execute("SELECT count(*) FROM conflicts").fetchone() == (1,)
        # Updates cannot reach another tenant's rows either.
        assert conn.execute("UPDATE events SET trust='tool' WHERE event_id='b1'").rowcount == 0
    with store.tenant_connection("globex") as conn:
        assert sorted(r[0] for r in conn.execute("SELECT fact_id FROM facts")) == ["fb", "fb2"]
        assert conn.execute("SELECT DISTINCT trust FROM events").fetchall() == [("authenticated_user",)]
    with store.tenant_connection("initech") as conn:
        assert all(conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,) for t in tables)


def test_writing_a_row_of_another_tenant_is_refused(memory):
    memory.append([ev("a1")])
    with pytest.raises(StoreError, match="row-level security"), memory.store.tenant_connection("acme") as conn:
        conn.execute("INSERT INTO clocks (tenant_id, subject_id) VALUES ('globex', 'u9')")
    with pytest.raises(StoreError, match="row-level security"), memory.store.tenant_connection("acme") as conn:
        conn.execute("UPDATE clocks SET tenant_id='globex'")
    assert memory.admin.subjects("globex") == []


def test_the_application_role_cannot_delete_or_skip_the_tenant(memory, pg_url):
    import psycopg

    memory.append([ev("a1")])
    with pytest.raises(StoreError, match="permission denied"), memory.store.tenant_connection("acme") as conn:
        conn.execute("DELETE FROM events")
    # No tenant set: the policy compares with NULL and nothing is visible.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("BEGIN; SET LOCAL ROLE lossgate_app")
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
        conn.execute("ROLLBACK")
    assert len(memory.events("acme", "u1")) == 1


def test_only_the_queue_functions_see_every_tenants_jobs(memory, worker_store):
    now = datetime.now(UTC)
    with memory.store.write() as tx:
        tx.enqueue_job("acme", "u1", reason="new events", run_after=now - timedelta(seconds=5), at=now)
        tx.enqueue_job("globex", "u9", reason="new events", run_after=now - timedelta(seconds=9), at=now)
        tx.enqueue_job("globex", "u8", reason="retry after error", run_after=now + timedelta(hours=2), at=now)
    with memory.store.tenant_connection("acme") as conn:
        # The flag that used to widen the view of the queue widens nothing now.
        conn.execute("SELECT set_config('lossgate.scope', 'queue', true)")
        assert conn.execute("SELECT tenant_id FROM jobs").fetchall() == [("acme",)]
        assert conn.execute("SELECT count(*) FROM jobs WHERE tenant_id='globex'").fetchone() == (0,)
        assert conn.execute("UPDATE jobs SET lease_owner='thief' WHERE tenant_id='globex'").rowcount == 0
    with worker_store.tenant_connection("acme") as conn:  # nor does the worker see across tenants itself
        assert conn.execute("SELECT tenant_id FROM jobs").fetchall() == [("acme",)]
    with worker_store.write() as tx:  # the worker's claim, through its function, reaches any tenant: oldest first
        job = tx.claim_job(owner="w1", lease_seconds=30, now=now)
        assert job is not None and (job.tenant_id, job.subject_id, job.lease_owner) == ("globex", "u9", "w1")
        assert tx.heartbeat_job(job.job_id, owner="w1", lease_expires_at=now + timedelta(minutes=1))
        assert not tx.heartbeat_job(job.job_id, owner="w2", lease_expires_at=now + timedelta(minutes=1))
        assert tx.claim_job(owner="w2", lease_seconds=30, now=now).subject_id == "u1"
        # The caller's clock is clamped to the server's: "tomorrow" takes no live lease and no
        # job in backoff, and no lease outlasts an hour.
        assert tx.claim_job(owner="thief", lease_seconds=30, now=now + timedelta(days=1)) is None
        assert tx.heartbeat_job(job.job_id, owner="w1", lease_expires_at=now + timedelta(days=365))
    (running,) = memory.admin.jobs("globex", "u9")
    assert running.lease_owner == "w1" and running.lease_expires_at <= datetime.now(UTC) + timedelta(hours=1)
    with memory.store.tenant_connection("globex") as conn:
        assert conn.execute("SELECT subject_id, status, lease_owner FROM jobs ORDER BY job_id").fetchall() == [
            ("u9", "running", "w1"),
            ("u8", "pending", None),
        ]


def _queue_two_tenants(memory: lossgate.Memory) -> datetime:
    now = datetime.now(UTC)
    with memory.store.write() as tx:
        tx.enqueue_job("acme", "u1", reason="new events", run_after=now - timedelta(seconds=5), at=now)
        tx.enqueue_job("globex", "u9", reason="new events", run_after=now - timedelta(seconds=9), at=now)
    return now


def _untouched(memory: lossgate.Memory) -> list[tuple[str, str, str, Any]]:
    return [
        (j.tenant_id, j.subject_id, j.status, j.lease_owner)
        for t in ("acme", "globex")
        for j in memory.admin.jobs(t, None)
    ]


def test_an_application_connection_can_neither_claim_nor_extend_a_lease(memory, worker_store):
    """An application with tenant A set used to claim tenant B's job and hold it an hour."""
    now = _queue_two_tenants(memory)
    claim = "SELECT * FROM lossgate_claim_job('thief', %s, %s)"
    beat = "SELECT lossgate_heartbeat_job(%s, 'thief', %s)"
    with pytest.raises(StoreError, match="permission denied for function lossgate_claim_job.*lossgate_app"):
        with memory.store.tenant_connection("acme") as conn:
            conn.execute(claim, (now + timedelta(hours=1), now))
    with pytest.raises(StoreError, match="permission denied for function lossgate_claim_job"):
        with memory.store.write() as tx:  # the protocol's primitive, on an application's store
            tx.claim_job(owner="thief", lease_seconds=3600, now=now)
    before = _untouched(memory)
    assert before == [("acme", "u1", "pending", None), ("globex", "u9", "pending", None)]
    with worker_store.write() as tx:
        job = tx.claim_job(owner="w1", lease_seconds=30, now=now)
    assert job is not None and (job.tenant_id, job.subject_id) == ("globex", "u9")
    with pytest.raises(StoreError, match="permission denied for function lossgate_heartbeat_job"):
        with memory.store.tenant_connection("globex") as conn:  # even with the job's own tenant set
            conn.execute(beat, (job.job_id, now + timedelta(hours=1)))
    with pytest.raises(StoreError, match="permission denied for function lossgate_heartbeat_job"):
        with memory.store.write() as tx:
            tx.heartbeat_job(job.job_id, owner="w1", lease_expires_at=now + timedelta(hours=1))
    with worker_store.write() as tx:
        assert tx.heartbeat_job(job.job_id, owner="w1", lease_expires_at=now + timedelta(minutes=1))
        assert tx.finish_job("globex", "u9", job.job_id, owner="w1", status="done", at=now)
    assert _untouched(memory) == [("acme", "u1", "pending", None), ("globex", "u9", "done", None)]


def test_a_login_that_is_only_an_application_cannot_claim_even_by_switching_roles(memory, server_url, pg_url):
    """How a deployment separates credentials (docs/roles.md): the application's login is a
    member of lossgate_app only, the worker's of lossgate_worker."""
    import psycopg

    from lossgate.ops.worker import Worker, open_worker_memory
    from lossgate.store.postgres import PostgresStore
    from lossgate.testing.postgres import login_role, user_url

    now = _queue_two_tenants(memory)
    with login_role(server_url, "lossgate_app") as app_login, login_role(server_url, "lossgate_worker") as worker_login:
        app = lossgate.open(user_url(pg_url, app_login))  # migrate=True only reads the version: nothing to do
        try:
            app.append([ev("a1")])  # its ordinary work
            assert app.request_consolidation("acme", "u1") is False  # already pending
            with pytest.raises(StoreError, match="permission denied for function lossgate_claim_job"):
                with app.store.write() as tx:
                    tx.claim_job(owner="thief", lease_seconds=3600, now=now)
        finally:
            app.close()
        as_worker = PostgresStore(user_url(pg_url, app_login), role="worker")
        try:
            with pytest.raises(StoreError, match='permission denied to set role "lossgate_worker"'):
                with as_worker.write() as tx:
                    tx.claim_job(owner="thief", lease_seconds=3600, now=now)
        finally:
            as_worker.close()
        with psycopg.connect(user_url(pg_url, app_login), autocommit=True) as conn:
            for role in ("lossgate_worker", "lossgate_queue", "lossgate_search"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(f"SET ROLE {role}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # as the login itself: not PUBLIC's either
                conn.execute("SELECT * FROM lossgate_claim_job('thief', now(), now())")
        assert _untouched(memory) == [("acme", "u1", "pending", None), ("globex", "u9", "pending", None)]

        worker = Worker(open_worker_memory(user_url(pg_url, worker_login), migrate=False), owner="w1")
        try:
            assert [worker.claim().subject_id, worker.claim().subject_id] == ["u9", "u1"]
        finally:
            worker.memory.close()
    assert _untouched(memory) == [("acme", "u1", "running", "w1"), ("globex", "u9", "running", "w1")]


def test_a_migration_by_an_owner_that_is_not_a_superuser_leaves_claiming_to_the_worker(pg_url, server_url):
    """The hand-over to lossgate_queue works without superuser rights, and so do the grants:
    PUBLIC and lossgate_app keep no EXECUTE on the queue functions. (``pg_url``: the session's
    database, migrated by the superuser, has made the cluster-wide roles already.)"""
    import psycopg

    from lossgate.store.postgres import PostgresStore
    from lossgate.testing.postgres import login_role, scratch_database, user_url

    functions = (
        "lossgate_claim_job(text, timestamptz, timestamptz)",
        "lossgate_heartbeat_job(bigint, text, timestamptz)",
    )
    with login_role(server_url, createrole=True) as owner, scratch_database(server_url, owner=owner) as url:
        store = PostgresStore(user_url(url, owner))
        try:
            assert store.migrate() >= 6
        finally:
            store.close()
        with psycopg.connect(url) as conn:
            may = conn.execute(
                "SELECT r, has_function_privilege(r, f, 'EXECUTE') FROM unnest(%s::text[]) r, unnest(%s::text[]) f",
                (["lossgate_app", "lossgate_worker", owner], list(functions)),
            ).fetchall()
            assert set(may) == {("lossgate_app", False), ("lossgate_worker", True), (owner, False)}
            assert conn.execute("SELECT pg_has_role(%s, 'lossgate_queue', 'MEMBER')", (owner,)).fetchone() == (False,)
            # the search functions (0018): the application and the worker may search, PUBLIC may not,
            # and the owner keeps no membership in the role that reads past the tenant policy
            search = ("lossgate_event_hits(text, text)", "lossgate_fact_hits(text, text)")
            may = conn.execute(
                "SELECT r, has_function_privilege(r, f, 'EXECUTE') FROM unnest(%s::text[]) r, unnest(%s::text[]) f",
                (["lossgate_app", "lossgate_worker", owner], list(search)),
            ).fetchall()
            assert set(may) == {("lossgate_app", True), ("lossgate_worker", True), (owner, False)}
            assert conn.execute("SELECT pg_has_role(%s, 'lossgate_search', 'MEMBER')", (owner,)).fetchone() == (False,)
            assert conn.execute(
                "SELECT proowner::regrole::text FROM pg_proc WHERE proname = 'lossgate_event_hits'"
            ).fetchone() == ("lossgate_search",)


def test_the_search_functions_find_only_the_tenant_the_transaction_has_set(memory):
    """lossgate_event_hits and lossgate_fact_hits (migrations/0018) read past the tenant
    policy to use their GIN indexes, so they keep the tenant themselves: the one the
    transaction has set, none when none is set; and they hand back positions, not text."""
    memory.append([ev("a1", text="refund the seats"), ev("b1", tenant="globex", text="refund the seats")])
    memory.assert_facts([fact("fa", "a1"), fact("fb", "b1", tenant="globex")])
    for tenant in ("acme", "globex"):
        with memory.store.write() as tx:
            tx.lock_clock(tenant, "u1")
            tx.refresh_search_index()
    with memory.store.tenant_connection("acme") as conn:
        assert conn.execute("SELECT seq FROM lossgate_event_hits('u1', 'refund')").fetchall() == [(1,)]
        assert conn.execute("SELECT fact_id FROM lossgate_fact_hits('u1', 'seats')").fetchall() == [("fa",)]
        assert conn.execute("SELECT count(*) FROM lossgate_event_hits('u2', 'refund')").fetchone() == (0,)
        conn.execute("SELECT set_config('lossgate.tenant', '', true)")
        assert conn.execute("SELECT count(*) FROM lossgate_event_hits('u1', 'refund')").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM lossgate_fact_hits('u1', 'seats')").fetchone() == (0,)
    with memory.store.tenant_connection("globex") as conn:
        assert conn.execute("SELECT fact_id FROM lossgate_fact_hits('u1', 'seats')").fetchall() == [("fb",)]
        # the function's role reads past the policy; the application's does not
        assert conn.execute("SELECT count(*) FROM event_terms").fetchone() == (1,)
    with memory.store.read() as tx:
        assert tx.search_events("acme", "u1", "refund", limit=5) == ["a1"]
        assert tx.search_facts("globex", "u1", "seats", limit=5) == ["fb"]


def test_one_transaction_may_span_tenants(memory):
    with memory.transaction() as led:
        led.append([ev("a1"), ev("b1", tenant="globex"), ev("a2")])
        led.assert_fact(fact("fa", "a1"))
        led.assert_fact(fact("fb", "b1", tenant="globex"))
    assert [e.event_id for e in memory.events("acme", "u1")] == ["a1", "a2"]
    assert [f.fact_id for f in memory.facts("globex", "u1")] == ["fb"]
    assert memory.admin.subjects("acme") == ["u1"] and memory.admin.subjects("globex") == ["u1"]


# -- migrations ----------------------------------------------------------------------------


def _schema(url: str) -> tuple[list[str], list[tuple[str, str]], list[int]]:
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname='public' ORDER BY 1")]
        policies = conn.execute("SELECT tablename, policyname FROM pg_policies ORDER BY 1, 2").fetchall()
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    return tables, policies, versions


def test_migrations_are_idempotent_on_postgres(server_url):
    from lossgate.store.core.migrations import migrations
    from lossgate.store.postgres import PostgresStore
    from lossgate.testing.postgres import scratch_database

    with scratch_database(server_url) as url:
        store = PostgresStore(url)
        try:
            assert store.schema_version() == 0
            version = store.migrate()
            first = _schema(url)
            assert store.migrate() == version == store.schema_version() >= 1
            assert _schema(url) == first
            tables, policies, versions = first
            # every shipped migration, once (numbers may be reserved by work not merged yet)
            assert versions == [v for v, _ in migrations("postgres")] and versions[-1] == version
            assert {"events", "facts", "clocks"} <= set(tables)
            assert {t for t, _ in policies} >= set(TENANT_TABLES)
        finally:
            store.close()


def test_two_processes_migrating_at_once_apply_each_migration_once(server_url):
    from lossgate.store.core.migrations import migrations
    from lossgate.testing.postgres import scratch_database

    script = (
        "import sys, time; from lossgate.store.postgres import PostgresStore\n"
        "s = PostgresStore(sys.argv[1]); s._pool()\n"
        "time.sleep(max(0, float(sys.argv[2]) - time.time()))\n"  # start together
        "print(s.migrate()); s.close()\n"
    )
    with scratch_database(server_url) as url:
        start = str(time.time() + 1.5)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, url, start], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=60) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
        assert outs[0][0] == outs[1][0] and int(outs[0][0]) >= 1
        _, _, versions = _schema(url)
        assert versions == [v for v, _ in migrations("postgres")] and versions[-1] == int(outs[0][0])


def test_ids_sort_bytewise_like_sqlite_whatever_the_database_collation(server_url, tmp_path):
    from lossgate.testing.postgres import scratch_database

    subjects = ["b", "B", "a", "_z", "Ä", "a-1", "a1"]
    with scratch_database(server_url, icu_locale="en-US") as url:
        listings = []
        for store_url in (f"sqlite:///{tmp_path / 'ref.db'}", url):
            mem = lossgate.open(store_url)
            try:
                mem.append([ev(f"e-{i}", subject=s) for i, s in enumerate(subjects)])
                listings.append(mem.admin.subjects("acme"))
            finally:
                mem.close()
    assert listings[0] == listings[1] == sorted(subjects)


# -- concurrency ---------------------------------------------------------------------------


def test_a_deadlock_becomes_a_retryable_store_error(memory):
    from lossgate.store.postgres import is_transient, retry_transient

    store = memory.store
    barrier = threading.Barrier(2, timeout=30)
    failures: list[BaseException] = []

    def cross(i: int) -> None:
        first, second = ("a", "b") if i == 0 else ("b", "a")
        try:
            with store.write() as tx:
                tx.lock_clock("acme", first)
                barrier.wait()
                tx.lock_clock("acme", second)
        except StoreError as exc:
            failures.append(exc)

    assert in_threads(2, cross) == []
    assert len(failures) == 1, "PostgreSQL aborts exactly one side of the cycle"
    assert "safe to retry" in str(failures[0]) and is_transient(failures[0])

    attempts = []

    def flaky() -> int:
        attempts.append(1)
        if len(attempts) < 3:
            raise failures[0]
        return 7

    assert retry_transient(flaky, backoff=0) == 7 and len(attempts) == 3


def test_integrity_violations_become_idempotency_conflicts(memory):
    memory.append([ev("e1")])
    with pytest.raises(IdempotencyConflict, match="events_pkey.*seq is already taken"), memory.store.write() as tx:
        tx.lock_clock("acme", "u1")
        tx.insert_events([(ev("e2"), 1, "sha256:" + "0" * 64, AT.isoformat())], recorded_at=AT)  # seq 1 is taken
    assert [e.event_id for e in memory.events("acme", "u1")] == ["e1"]


def test_a_failure_inside_a_pipelined_read_is_typed_and_leaves_the_pool_usable(memory):
    # Reads are pipelined: an error may surface at the fetch or only at the closing sync.
    memory.append([ev("e1")])
    with pytest.raises(StoreError, match="division by zero"), memory.store.read() as tx:
        tx._c.execute("SELECT 1/0").fetchall()
    with pytest.raises(StoreError, match="division by zero"), memory.store.read() as tx:
        tx._c.execute("SELECT 1/0")  # never fetched: raised when the transaction closes
        tx.clock("acme", "u1")
    with pytest.raises(StoreError, match="failed earlier and was rolled back"), memory.store.read() as tx:
        try:
            tx._c.execute("SELECT 1/0").fetchall()
        except Exception:  # noqa: BLE001 - swallowed on purpose
            pass  # a body that swallows a database error still cannot commit
    for _ in range(12):  # more than the pool holds: every connection came back clean
        assert [e.event_id for e in memory.events("acme", "u1")] == ["e1"]


def test_registry_loaded_by_two_writers_at_once(pg_url):
    mems = [lossgate.open(pg_url) for _ in range(4)]
    try:
        assert in_threads(4, lambda i: mems[i].admin.load_predicates(REGISTRY)) == []
        assert mems[0].admin.registry == REGISTRY
    finally:
        for m in mems:
            m.close()


# -- encodings -----------------------------------------------------------------------------


def test_payload_numbers_and_offsets_survive_exactly(memory):
    payload = {
        "big_float": 1e20,
        "tiny": 1e-7,
        "big_int": 2**53 - 1,
        "neg_zero": -0.0,
        "flag": False,
        "nested": {"b": [1, 2.5, "3"], "a": None},
        "nul": "a\u0000b",
    }
    memory.append([NewEvent(tenant_id="acme", subject_id="u1", event_id="e1", payload=payload, occurred_at=AT)])
    (stored,) = memory.events("acme", "u1")
    assert stored.payload == payload
    assert [type(stored.payload[k]) for k in ("big_float", "tiny", "big_int")] == [float, float, int]
    assert stored.occurred_at.utcoffset() == timedelta(hours=-5)
    assert stored.recorded_at.utcoffset() == timedelta(0)


def test_each_test_starts_from_an_empty_database_with_fresh_identities(memory):
    memory.append([ev("e1")])
    memory.assert_fact(fact("f1", "e1"))
    with memory.store.read() as tx:
        assert [line.entry_id for line in tx.log("acme", "u1")] == [1]


def test_search_reads_the_lazy_index_and_the_fresh_tail_and_forgets_purged_text(memory):
    def refresh() -> int:
        with memory.store.write() as tx:
            tx.clock("acme", "u1")  # the subject is locked, so its events can be indexed
            return tx.refresh_search_index()

    def search(q: str) -> list[str]:
        with memory.store.read() as tx:
            return tx.search_events("acme", "u1", q, limit=10)

    memory.append([ev("e1", text="refund of 50 dollars"), ev("e2", text="aisle seat please")])
    assert refresh() == 2 and refresh() == 0
    memory.append([ev("e3", text="another refund request")])  # not indexed yet
    assert set(search("refund")) == {"e1", "e3"} and search("aisle") == ["e2"]
    memory.delete_event("acme", "u1", "e1")
    assert search("refund") == ["e3"]
    with memory.store.tenant_connection("acme") as conn:
        assert conn.execute("SELECT terms::text FROM event_terms ORDER BY seq").fetchall() == [
            ("",),
            ("'aisl':2 'pleas':4 'seat':3 'user':1",),
        ]
    assert refresh() == 1 and set(search("refund request")) == {"e3"}


def test_schema_19_rewrites_every_tenants_search_text_when_its_owner_is_not_a_superuser(pg_url, server_url):
    """The tenant policies are forced, so they bind a migrating owner that is not a superuser:
    schema 19 lifts them for its own rewrite, and every tenant's facts and marks change
    (run again here, as that owner, over rows written the way schema 18 wrote them)."""
    import psycopg

    from lossgate.store.core.migrations import migrations
    from lossgate.testing.postgres import login_role, scratch_database, user_url

    script = dict(migrations("postgres"))[19]
    with login_role(server_url, createrole=True) as owner, scratch_database(server_url, owner=owner) as url:
        memory = lossgate.open(user_url(url, owner))  # the owner migrates
        memory.close()
        memory = lossgate.open(url)  # the application's work, through the superuser's login
        try:
            memory.admin.load_predicates(load_registry(Path(__file__).parents[2] / "examples" / "predicates.toml"))
            for tenant in ("acme", "globex"):
                memory.append([ev(f"{tenant}-1", tenant=tenant, text="write to bob@example.com")])
                memory.assert_facts([fact(f"{tenant}-f", f"{tenant}-1", tenant=tenant)])
                with memory.store.write() as tx:
                    tx.lock_clock(tenant, "u1")
                    tx.refresh_search_index()
        finally:
            memory.close()
        with psycopg.connect(url, autocommit=True) as admin:  # as schema 18 left them
            admin.execute("UPDATE facts SET search_text = search_text || ' bob@example.com'")
        with psycopg.connect(user_url(url, owner)) as conn:
            conn.execute(script)
        with psycopg.connect(url) as admin:
            texts = [r[0] for r in admin.execute("SELECT search_text FROM facts ORDER BY tenant_id")]
            assert len(texts) == 2 and all("bob example com" in t and "@" not in t for t in texts)
            assert admin.execute("SELECT array_agg(DISTINCT search_indexed_through) FROM clocks").fetchone() == ([0],)
            assert admin.execute("SELECT count(*) FROM event_terms").fetchone() == (0,)
            forced = admin.execute(
                "SELECT bool_and(relforcerowsecurity) FROM pg_class WHERE relname IN ('facts', 'clocks')"
            ).fetchone()
            assert forced == (True,)
        memory = lossgate.open(url)
        try:  # and a search finds the part of the address again, on the text, then through the index
            assert [e.event_id for e in memory.recall("globex", "u1", query="bob", context=False).events] == [
                "globex-1"
            ]
        finally:
            memory.close()


def test_an_event_looked_up_by_id_reads_its_row_through_the_key_before_any_analyze(memory):
    # A fresh table has no statistics: the planner then took the (tenant, subject, seq) key for
    # a look-up by ids and filtered every row of the subject (and, in one transaction, every
    # version it had written), so revoking an import's events one by one grew quadratic.
    memory.append([ev(f"e{i}", text=f"event {i}") for i in range(2000)])
    seen: list[str] = []
    with memory.transaction() as led:
        conn = led.tx._c
        execute = conn.execute

        def explained(query, *args, **kwargs):
            if str(query).startswith("SELECT") and "FROM events t" in str(query) and not seen:
                plan = execute("EXPLAIN (ANALYZE, FORMAT JSON) " + str(query), *args, **kwargs).fetchone()[0]
                seen.append(str(plan))
            return execute(query, *args, **kwargs)

        conn.execute = explained
        try:
            for i in range(5):
                led.revoke_event("acme", "u1", f"e{i}")
        finally:
            conn.execute = execute
    assert seen, "no look-up by ids was made"
    assert '"Rows Removed by Filter": 1999' not in seen[0]
    assert "events_tenant_id_event_id_key" in seen[0]


def test_what_descends_from_an_input_is_looked_up_through_the_lineage_index_before_any_analyze(memory):
    # Without statistics, the recursive join of the lineage was planned as a walk of the
    # subject's whole lineage at every level: 115 ms a revocation at 30,000 events.
    memory.append([ev(f"e{i}", text=f"event {i} about topic {i % 7}") for i in range(2000)])
    assert memory.consolidate("acme", "u1").status == "published"
    plans: list[object] = []
    with memory.transaction() as led:
        conn = led.tx._c
        execute = conn.execute

        def explained(query, *args, **kwargs):
            if "FROM lineage WHERE" in str(query) and "wanted" in str(query):
                plans.append(execute("EXPLAIN (ANALYZE, FORMAT JSON) " + str(query), *args, **kwargs).fetchone()[0])
            return execute(query, *args, **kwargs)

        conn.execute = explained
        try:
            led.revoke_event("acme", "u1", "e5")
        finally:
            conn.execute = execute

    def nodes(plan: object) -> list[dict]:
        if isinstance(plan, list):
            return [n for p in plan for n in nodes(p)]
        if isinstance(plan, dict):
            return [plan, *nodes(plan.get("Plan")), *nodes(plan.get("Plans"))]
        return []

    assert plans, "no look-up of the lineage was made"
    for plan in [json.loads(p) if isinstance(p, str) else p for p in plans]:
        scans = [n for n in nodes(plan) if n.get("Relation Name") == "lineage"]
        assert scans and all("input_id = wanted.id" in n.get("Index Cond", "") for n in scans), scans
        assert all(n.get("Rows Removed by Filter", 0) < 10 for n in nodes(plan))
