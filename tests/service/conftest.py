"""The memory service under test: a real uvicorn server per store, reached over real HTTP.

``service`` is parametrized over SQLite and PostgreSQL like the conformance suite (the
PostgreSQL half runs when ``LOSSGATE_TEST_PG_URL`` is set, and fails instead of skipping
with ``LOSSGATE_REQUIRE_PG=1``). One server per store serves the whole session: each test
works in tenants of its own (:meth:`Service.tenant`), so tests cannot see each other's
data; that separation is itself what the service promises.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import lossgate
from lossgate.model.registry import load_registry
from tests.support import REGISTRY_PATH
from tests.support.service import Service
from tests.support.stores import store_database


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
