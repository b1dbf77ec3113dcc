"""The memory service under test: a real uvicorn server per store, reached over real HTTP.

``service`` is parametrized over SQLite and PostgreSQL like the conformance suite (the
PostgreSQL half runs when ``LOSSGATE_TEST_PG_URL`` is set, and fails instead of skipping
with ``LOSSGATE_REQUIRE_PG=1``). One server per store serves the whole session: each test
works in tenants of its own (:meth:`Service.tenant`), so tests cannot see each other's
data; that separation is itself what the service promises.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

import lossgate
from lossgate.api.memory import Memory
from lossgate.model.registry import load_registry
from tests.conftest import store_database

REGISTRY_PATH = Path(__file__).resolve().parents[2] / "examples" / "predicates.toml"


@dataclass
class Service:
    """A served memory: its base URL, its database and a memory on that database for the test
    to look behind the API with."""

    url: str
    db_url: str
    store: str
    memory: Memory
    clients: list[httpx.Client] = field(default_factory=list)

    def tenant(self, prefix: str = "t") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    def key(self, tenant: str, *scopes: str) -> str:
        """A new key's secret for ``tenant`` (scopes default to read and write)."""
        _, secret = self.memory.admin.create_api_key(tenant, scopes=list(scopes or ("read", "write")))
        return secret

    def client(self, secret: str | None = None, **headers: str) -> httpx.Client:
        """An HTTP client of the server, sending ``secret`` as its bearer key."""
        if secret is not None:
            headers["Authorization"] = f"Bearer {secret}"
        client = httpx.Client(base_url=self.url, headers=headers, timeout=30)
        self.clients.append(client)
        return client


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    from lossgate.service import create_app
    from lossgate.testing.service import serving

    with store_database(request.param, tmp_path_factory, "service") as db_url:
        served = lossgate.open(db_url)
        served.admin.load_predicates(load_registry(REGISTRY_PATH))
        behind = lossgate.open(db_url, migrate=False)
        service = Service(url="", db_url=db_url, store=request.param, memory=behind)
        try:
            with serving(create_app(served, close_memory=True)) as url:
                service.url = url
                yield service
        finally:
            for client in service.clients:
                client.close()
            behind.close()


def error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The error body of ``response``, checked to be ``status`` and ``code``, its message one line."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"code", "message", "details"} and body["code"] == code, body
    assert body["message"] and "\n" not in body["message"]
    return dict(body)
