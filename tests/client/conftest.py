"""The client under test against a real ``lossgate serve`` process per store.

``served`` starts ``python -m lossgate --db URL serve`` on a free port, on SQLite and on
PostgreSQL (when ``LOSSGATE_TEST_PG_URL`` is set), with the example registry loaded, for the
whole session; each test works in tenants of its own. ``connect`` makes clients of the
flavour under test, the blocking :class:`~lossgate.client.Client` or the
:class:`~lossgate.client.AsyncClient` driven through :class:`Awaited`, so one test body
checks both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from lossgate.client import AsyncClient, Client
from tests.support.client import BARE_MAX_BODY_BYTES, Awaited, Connect, Served, serving_database
from tests.support.stores import store_database


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with (
        store_database(request.param, tmp_path_factory, "client") as db_url,
        serving_database(db_url, request.param, tmp_path_factory.mktemp("logs") / "serve.log") as served,
    ):
        yield served


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def bare(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A served database without a predicate registry, whose bodies are at most 8 KiB."""
    with (
        store_database(request.param, tmp_path_factory, "client_bare") as db_url,
        serving_database(
            db_url,
            request.param,
            tmp_path_factory.mktemp("logs") / "bare.log",
            "--max-body-bytes",
            str(BARE_MAX_BODY_BYTES),
            registry=False,
        ) as served,
    ):
        yield served


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(flavour: str) -> Iterator[Connect]:
    """``connect(url, api_key, **options)``: a client of the flavour under test, closed after."""
    loop = asyncio.new_event_loop()
    made: list[Any] = []

    def make(url: str, api_key: str | None = None, **options: Any) -> Any:
        if flavour == "sync":
            client: Any = Client(url, api_key, **options)
        else:
            client = Awaited(AsyncClient(url, api_key, **options), loop)
        made.append(client)
        return client

    yield make
    for client in made:
        if isinstance(client, Awaited):
            loop.run_until_complete(client.client.aclose())
        else:
            client.close()
    loop.close()
