"""A database outage: the service answers 503 ``store_unavailable`` within its deadline while
PostgreSQL cannot be reached, and answers again on the first request once it is back.

The outage is a real PostgreSQL behind a loopback TCP proxy (:class:`~lossgate.testing.faults.TcpProxy`)
that the test stops (connecting is refused, every connection is cut) and starts again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
import pytest

import lossgate
from lossgate.api.memory import Memory
from lossgate.testing.faults import TcpProxy
from tests.support.stores import store_database

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(120)]  # outages waited through

DEADLINE = 2  # seconds: the URL's connect_timeout, so also how long a request waits for a connection
SLACK = 1.5  # the request's own work, a loaded machine


@dataclass
class Outage:
    proxy: TcpProxy
    memory: Memory
    client: httpx.Client

    def get(self, path: str = "/v1/key") -> tuple[httpx.Response, float]:
        t0 = time.monotonic()
        response = self.client.get(path)
        return response, time.monotonic() - t0

    def hold_connections(self, n: int) -> None:
        """Leave ``n`` idle connections in the served memory's pool (each read holds one)."""

        def nest(depth: int) -> None:
            if depth:
                with self.memory.store.read():
                    nest(depth - 1)

        nest(n)


@pytest.fixture
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outage]:
    from lossgate.service import create_app
    from lossgate.testing.service import serving

    with store_database("postgres", tmp_path_factory, "outage") as db_url:
        server = urlsplit(db_url)
        with TcpProxy(server.hostname or "127.0.0.1", server.port or 5432) as proxy:
            memory = lossgate.open(f"{proxy.url(db_url)}?connect_timeout={DEADLINE}")
            try:
                _, secret = memory.admin.create_api_key("acme", scopes=["read", "write"])
                with (
                    serving(create_app(memory)) as url,
                    httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as client,
                ):
                    yield Outage(proxy, memory, client)
            finally:
                memory.close()


def assert_unavailable(response: httpx.Response, took: float) -> None:
    assert response.status_code == 503 and response.json()["code"] == "store_unavailable", response.text
    assert took < DEADLINE + SLACK, took


def test_503_within_the_deadline_while_down_and_200_on_the_first_request_back(outage: Outage) -> None:
    response, _ = outage.get()
    assert response.status_code == 200
    outage.hold_connections(3)
    outage.proxy.stop()

    for path in ("/v1/key", "/v1/key", "/healthz"):
        assert_unavailable(*outage.get(path))
    with ThreadPoolExecutor(8) as pool:  # at once: none waits behind another's deadline
        for response, took in pool.map(lambda _: outage.get(), range(8)):
            assert_unavailable(response, took)

    outage.proxy.start()
    response, took = outage.get()
    assert response.status_code == 200 and took < 1.5, (response.text, took)
    assert outage.get("/healthz")[0].status_code == 200


def test_connections_cut_while_idle_are_replaced_on_the_first_request(outage: Outage) -> None:
    assert outage.get()[0].status_code == 200
    outage.hold_connections(4)
    outage.proxy.stop()  # every pooled connection is cut, and no request comes meanwhile
    outage.proxy.start()
    response, took = outage.get()
    assert response.status_code == 200 and took < 1.5, (response.text, took)


def test_requests_waiting_through_an_outage_are_served_when_the_database_returns(outage: Outage) -> None:
    assert outage.get()[0].status_code == 200
    outage.hold_connections(2)
    outage.proxy.stop()
    with ThreadPoolExecutor(4) as pool:
        waiting = [pool.submit(outage.get) for _ in range(4)]
        time.sleep(DEADLINE / 2)  # each is waiting for a connection now
        outage.proxy.start()
        back = time.monotonic()
        answers = [w.result() for w in waiting]
    for response, _ in answers:
        assert response.status_code == 200, response.text
    # served soon after the return, not at the end of their wait
    assert time.monotonic() - back < DEADLINE / 2 + SLACK
