"""503s are retried, a bounded number of times, after the ``Retry-After`` the service names or
a doubling backoff; an append is retried with its ``Idempotency-Key`` and lands once.

Against a real ``lossgate serve``: on PostgreSQL, a row lock held past the served database's
``lock_timeout`` (the service's 503 ``store_busy``, with ``Retry-After: 1``) and a database
cut off behind a TCP proxy (``store_unavailable``). On both stores, a stand-in in front of
the service (:mod:`.standin`) scripts what no correct service answers on demand: a 503 once,
an answer lost after the append was carried out, a bug's 500, a proxy's page.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

import psycopg
import pytest

from lossgate import errors as lg
from lossgate.client import NO_RETRY, Client, EventIn, Retry
from lossgate.client.retry import retry_after
from lossgate.testing.faults import TcpProxy
from tests.support.client import Connect, Served, answered, serving_database
from tests.support.stores import store_database

from .standin import Answer, LoseAnswer, StandIn, error_body

S = "u1"
APPEND = "/v1/subjects/{subject_id}/append"
QUICK = Retry(attempts=4, backoff_s=0.05, max_wait_s=2)


# -- a stand-in in front of the service ------------------------------------------------------------


def test_a_503_is_tried_again_after_the_retry_after_it_names(served: Served, connect: Connect) -> None:
    tenant = served.tenant()
    busy = Answer(503, error_body("store_busy"), {"Retry-After": "1"})
    with StandIn(served.url, [busy]) as standin:
        memory = connect(standin.url, served.key(tenant))
        t0 = time.monotonic()
        recalled = memory.recall(S, "peanuts")
        took = time.monotonic() - t0
    assert recalled.mode == "raw_fallback" and recalled.subject_id == S
    assert [(s.method, s.path, s.service_status) for s in standin.seen] == [
        ("POST", f"/v1/subjects/{S}/recall", None),
        ("POST", f"/v1/subjects/{S}/recall", 200),
    ]
    assert took >= 1.0, took


def test_an_append_whose_answer_was_lost_is_sent_again_with_its_key_and_lands_once(
    served: Served, connect: Connect
) -> None:
    tenant = served.tenant()
    lost = LoseAnswer(503, error_body("store_unavailable"))  # the service appended; the client hears a 503
    with StandIn(served.url, [lost]) as standin:
        memory = connect(standin.url, served.key(tenant), retry=QUICK)
        out = memory.append(S, [EventIn(text="no event id: only the key tells the retry from a new append")])
    first, again = standin.seen
    assert first.headers["Idempotency-Key"] == again.headers["Idempotency-Key"]
    assert first.headers["Idempotency-Key"].startswith("lossgate-client-")
    assert (first.service_status, again.service_status) == (200, 200)
    assert "idempotent-replayed" not in first.service_headers and again.service_headers["idempotent-replayed"] == "true"
    assert [e.seq for e in out.appended] == [1]  # the first try's answer
    assert [e.text for e in served.memory.events(tenant, S)] == [
        "no event id: only the key tells the retry from a new append"
    ]


def test_retries_stop_after_their_attempts(served: Served, connect: Connect) -> None:
    tenant = served.tenant()
    down = Answer(503, error_body("store_unavailable"))
    with StandIn(served.url, [down] * 10) as standin:
        memory = connect(standin.url, served.key(tenant), retry=Retry(attempts=3, backoff_s=0.2, max_wait_s=2))
        t0 = time.monotonic()
        with pytest.raises(lg.StoreError) as caught:
            memory.clock(S)
        took = time.monotonic() - t0
        assert type(caught.value) is lg.StoreError and caught.value.code == "store_unavailable"
        assert len(standin.seen) == 3
        assert 0.1 + 0.2 <= took < 5, took  # waited half to all of 0.2 s, then of 0.4 s
        with pytest.raises(lg.StoreError):
            connect(standin.url, served.key(tenant), retry=NO_RETRY).clock(S)
        assert len(standin.seen) == 4


def test_a_retry_after_longer_than_the_longest_wait_is_raised_at_once(served: Served, connect: Connect) -> None:
    busy = Answer(503, error_body("store_busy"), {"Retry-After": "120"})
    with StandIn(served.url, [busy]) as standin:
        memory = connect(standin.url, served.key(served.tenant()), retry=Retry(max_wait_s=5))
        t0 = time.monotonic()
        with pytest.raises(lg.StoreBusy):
            memory.clock(S)
        assert time.monotonic() - t0 < 2 and len(standin.seen) == 1


def test_a_bugs_answer_is_a_lossgate_error_and_is_not_retried(served: Served, connect: Connect) -> None:
    bug = Answer(500, error_body("internal_error", "internal error"))
    with StandIn(served.url, [bug]) as standin:
        memory = connect(standin.url, served.key(served.tenant()))
        with pytest.raises(lg.LossgateError) as caught:
            memory.facts(S)
        assert type(caught.value) is lg.LossgateError and caught.value.code == "internal_error"
        assert str(caught.value) == "internal error" and len(standin.seen) == 1
        assert memory.facts(S) == []  # the next request is forwarded


def test_an_answer_without_the_services_error_body_is_a_lossgate_error(served: Served, connect: Connect) -> None:
    page = Answer(502, b"<html>bad gateway</html>", {"Content-Type": "text/html"})
    unavailable = Answer(503, b"<html>try later</html>", {"Content-Type": "text/html"})
    with StandIn(served.url, [page, unavailable]) as standin:
        memory = connect(standin.url, served.key(served.tenant()), retry=QUICK)
        with pytest.raises(lg.LossgateError) as caught:
            memory.clock(S)
        assert type(caught.value) is lg.LossgateError and caught.value.code is None
        assert f"GET /v1/subjects/{S}/clock: the service answered 502 Bad Gateway" in str(caught.value)
        assert memory.clock(S).clock.high_water == 0  # a proxy's 503 is tried again too
        assert len(standin.seen) == 3


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2015, 10, 21, 7, 27, 30, tzinfo=UTC)
    assert retry_after("3") == 3.0 and retry_after(" 0 ") == 0.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == 30.0
    assert retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now=now) == 0.0  # passed: at once
    assert retry_after(None) is None and retry_after("soon") is None and retry_after("-1") is None


# -- the database busy or unreachable (PostgreSQL) -------------------------------------------------


def wait_for(condition: object, *, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def locking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``lossgate serve`` on PostgreSQL whose transactions wait at most 300 ms for a row lock."""
    with store_database("postgres", tmp_path_factory, "client_lock") as db_url:
        options = quote("-c lock_timeout=300")
        with serving_database(
            f"{db_url}?options={options}", "postgres", tmp_path_factory.mktemp("logs") / "locking.log"
        ) as served:
            yield served


def hold_clock(served: Served, tenant: str) -> psycopg.Connection:
    """A connection holding the lock on the subject's clock row: every write of it waits."""
    url = served.db_url.split("?")[0]
    conn = psycopg.connect(url)
    conn.execute("SELECT 1 FROM clocks WHERE tenant_id = %s AND subject_id = %s FOR UPDATE", (tenant, S))
    return conn


@pytest.mark.postgres
def test_store_busy_is_tried_again_after_its_retry_after_and_the_append_lands_once(
    locking: Served, connect: Connect
) -> None:
    tenant = locking.tenant()
    memory = connect(locking.url, locking.key(tenant))
    memory.append(S, [EventIn(event_id="e0", text="the clock row exists")])
    holder = hold_clock(locking, tenant)
    probe = Client(locking.url)  # its own, blocking: it asks from another thread while the call waits
    busy_before = answered(probe.metrics(), "POST", APPEND, "503")

    def release_after_the_first_503() -> None:
        wait_for(lambda: answered(probe.metrics(), "POST", APPEND, "503") > busy_before)
        holder.rollback()

    releaser = threading.Thread(target=release_after_the_first_503)
    releaser.start()
    try:
        t0 = time.monotonic()
        out = memory.append(S, [EventIn(text="waited for the lock")])
        took = time.monotonic() - t0
    finally:
        releaser.join(60)
        holder.close()
        probe.close()
    assert [e.seq for e in out.appended] == [2]
    assert answered(memory.metrics(), "POST", APPEND, "503") == busy_before + 1
    assert took >= 1.0, took  # the service's Retry-After: 1
    assert [e.text for e in locking.memory.events(tenant, S)] == ["the clock row exists", "waited for the lock"]


@pytest.mark.postgres
def test_store_busy_past_the_retries_is_raised_as_store_busy(locking: Served, connect: Connect) -> None:
    tenant = locking.tenant()
    memory = connect(locking.url, locking.key(tenant), retry=Retry(attempts=2))
    memory.append(S, [EventIn(event_id="e0", text="the clock row exists")])
    holder = hold_clock(locking, tenant)
    try:
        with pytest.raises(lg.StoreBusy) as caught:
            memory.append(S, [EventIn(event_id="e1", text="never")])
    finally:
        holder.close()
    assert caught.value.code == "store_busy" and "safe to retry" in str(caught.value)
    assert [e.event_id for e in locking.memory.events(tenant, S)] == ["e0"]


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, TcpProxy]]:
    """``lossgate serve`` reaching PostgreSQL through a TCP proxy the test stops and starts
    (``connect_timeout=1``: a request waits 2 s for a connection, psycopg's least)."""
    with store_database("postgres", tmp_path_factory, "client_outage") as db_url:
        server = urlsplit(db_url)
        with (
            TcpProxy(server.hostname or "127.0.0.1", server.port or 5432) as proxy,
            serving_database(
                f"{proxy.url(db_url)}?connect_timeout=1", "postgres", tmp_path_factory.mktemp("logs") / "outage.log"
            ) as served,
        ):
            yield served, proxy


@pytest.mark.slow
@pytest.mark.postgres
def test_store_unavailable_is_tried_again_until_the_database_is_back(
    outage: tuple[Served, TcpProxy], connect: Connect
) -> None:
    served, proxy = outage
    tenant = served.tenant()
    memory = connect(served.url, served.key(tenant), retry=Retry(attempts=6, backoff_s=0.2, max_wait_s=1))
    assert memory.clock(S).clock.high_water == 0
    probe = Client(served.url)  # its own, blocking: it asks from another thread while the call waits
    down_before = answered(probe.metrics(), "POST", APPEND, "503")

    back = threading.Event()

    def back_after_the_first_503() -> None:
        wait_for(lambda: answered(probe.metrics(), "POST", APPEND, "503") > down_before)
        proxy.start()
        back.set()

    proxy.stop()
    restarter = threading.Thread(target=back_after_the_first_503)
    restarter.start()
    try:
        out = memory.append(S, [EventIn(text="written once the database is back")])
    finally:
        restarter.join(60)
        if not back.is_set():  # the test failed before the restart: the next one needs the database
            proxy.start()
        probe.close()
    assert [e.seq for e in out.appended] == [1]
    assert answered(memory.metrics(), "POST", APPEND, "503") >= down_before + 1
    assert [e.text for e in served.memory.events(tenant, S)] == ["written once the database is back"]


@pytest.mark.slow
@pytest.mark.postgres
def test_store_unavailable_past_the_retries_is_raised_as_store_error(
    outage: tuple[Served, TcpProxy], connect: Connect
) -> None:
    served, proxy = outage
    tenant = served.tenant()
    memory = connect(served.url, served.key(tenant), retry=Retry(attempts=2, backoff_s=0.1))
    assert memory.health().status == "ok"
    proxy.stop()
    try:
        with pytest.raises(lg.StoreError) as caught:
            memory.append(S, [EventIn(event_id="e1", text="never")])
        with pytest.raises(lg.StoreError):
            connect(served.url, retry=NO_RETRY).health()  # /healthz: 503 while the database is away
    finally:
        proxy.start()
    assert type(caught.value) is lg.StoreError and caught.value.code == "store_unavailable"
    assert served.memory.events(tenant, S) == []
    assert memory.health().status == "ok"
