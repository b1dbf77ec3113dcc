"""The client tests' server and tools: a ``lossgate serve`` process on a database
(:func:`serving_database`), the :class:`~lossgate.client.AsyncClient` driven from plain
code (:class:`Awaited`), the served process's own request counts (:func:`answered`), and
the worker run to the end of its queue."""

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

import lossgate
from lossgate.api.memory import Memory
from lossgate.client import AsyncClient
from lossgate.model.registry import load_registry
from lossgate.testing.service import free_port, stop_process, wait_healthy
from tests.support import REGISTRY_PATH, ROOT
from tests.support.service import OCCURRED as OCCURRED  # the instant the client tests' events carry

# The body limit of the ``bare`` server (tests/client/conftest.py).
BARE_MAX_BODY_BYTES = 8192


@contextmanager
def lossgate_serve(db_url: str, log: Path, *options: str) -> Iterator[str]:
    """``lossgate serve [OPTIONS]`` on ``db_url`` in a process of its own, on a free port, for
    the block; yields its base URL. Its output goes to ``log`` (named if it fails to start)."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lossgate",
                "--db",
                db_url,
                "serve",
                "--port",
                str(port),
                "--log-level",
                "warning",
                *options,
            ],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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


# ``connect(url, api_key, **options)``: the fixture of tests/client/conftest.py.
Connect = Callable[..., Any]


def answered(metrics: str, method: str, route: str, status: str = r"\d{3}") -> float:
    """How many requests the served process answered on ``route`` (its template) with a status
    matching ``status``, by its own metrics (``Client.metrics``)."""
    pattern = (
        rf'lossgate_http_requests_total\{{method="{method}",route="{re.escape(route)}",status="{status}"\}} '
        r"(\S+)"
    )
    return sum(float(n) for n in re.findall(pattern, metrics))


def work_off_the_queue(served: Served) -> int:
    """Run the queued rebuild jobs to the end, as ``lossgate worker --exit-when-idle`` does."""
    from lossgate.ops.worker import drain, open_worker_memory

    worker = open_worker_memory(served.db_url, migrate=False)
    try:
        return drain(worker)
    finally:
        worker.close()
