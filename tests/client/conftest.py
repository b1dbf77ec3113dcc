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
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import lossgate
from lossgate.client import AsyncClient, Client
from lossgate.api.memory import Memory
from lossgate.model.registry import load_registry
from lossgate.testing.service import free_port, stop_process, wait_healthy
from tests.conftest import store_database

ROOT = Path(__file__).resolve().parents[2]
REGISTRY_PATH = ROOT / "examples" / "predicates.toml"
OCCURRED = "2026-01-05T09:12:02-05:00"
BARE_MAX_BODY_BYTES = 8192


@contextmanager
def lossgate_serve(db_url: str, log: Path, *options: str) -> Iterator[str]:
    """``lossgate serve [OPTIONS]`` on ``db_url`` in a process of its own, on a free port, for
    the block; yields its base URL. Its output goes to ``log`` (named if it fails to start)."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lossgate", "--db", db_url, "serve", "--port", str(port), "--log-level", "warning",
             *options],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, proc)
        except RuntimeError as exc:
            raise AssertionError(f"{exc}: {log.read_text(errors='replace')}") from None
        yield url
    finally:
        stop_process(proc)


@dataclass
class Served:
    """A ``lossgate serve`` process: its URL, its database, and a memory on that database
    for the test to look behind the API with."""

    url: str
    db_url: str
    store: str
    memory: Memory

    def tenant(self, prefix: str = "t") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    def key(self, tenant: str, *scopes: str) -> str:
        """A new key's secret for ``tenant`` (scopes default to read and write)."""
        _, secret = self.memory.admin.create_api_key(tenant, scopes=list(scopes or ("read", "write")))
        return secret


@contextmanager
def serving_database(db_url: str, store: str, log: Path, *options: str, registry: bool = True) -> Iterator[Served]:
    memory = lossgate.open(db_url)
    try:
        if registry:
            memory.admin.load_predicates(load_registry(REGISTRY_PATH))
        with lossgate_serve(db_url, log, *options) as url:
            yield Served(url=url, db_url=db_url, store=store, memory=memory)
    finally:
        memory.close()


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with store_database(request.param, tmp_path_factory, "client") as db_url, \
            serving_database(db_url, request.param, tmp_path_factory.mktemp("logs") / "serve.log") as served:
        yield served


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def bare(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A served database without a predicate registry, whose bodies are at most 8 KiB."""
    with store_database(request.param, tmp_path_factory, "client_bare") as db_url, \
            serving_database(db_url, request.param, tmp_path_factory.mktemp("logs") / "bare.log",
                             "--max-body-bytes", str(BARE_MAX_BODY_BYTES), registry=False) as served:
        yield served


class Awaited:
    """An :class:`~lossgate.client.AsyncClient` driven from a test's plain code: each method
    call runs its coroutine to the end on ``loop``."""

    def __init__(self, client: AsyncClient, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.loop = loop

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            return self.loop.run_until_complete(method(*args, **kwargs))

        return run


Connect = Callable[..., Any]


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


def answered(metrics: str, method: str, route: str, status: str = r"\d{3}") -> float:
    """How many requests the served process answered on ``route`` (its template) with a status
    matching ``status``, by its own metrics (``Client.metrics``)."""
    pattern = (rf'lossgate_http_requests_total\{{method="{method}",route="{re.escape(route)}",status="{status}"\}} '
               r"(\S+)")
    return sum(float(n) for n in re.findall(pattern, metrics))


def work_off_the_queue(served: Served) -> int:
    """Run the queued rebuild jobs to the end, as ``lossgate worker --exit-when-idle`` does."""
    from lossgate.ops.worker import drain, open_worker_memory

    worker = open_worker_memory(served.db_url, migrate=False)
    try:
        return drain(worker)
    finally:
        worker.close()
