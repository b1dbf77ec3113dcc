"""The inspection page under test: a real uvicorn server on each store (PostgreSQL when
``LOSSGATE_TEST_PG_URL`` is set), with the demo subject built in a tenant of its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import lossgate
from lossgate.api.memory import Memory
from lossgate.model.registry import load_registry

from .demo import MARKUP, REGISTRY_PATH, Demo, build_demo
from tests.conftest import store_database


@dataclass
class Page:
    """A served memory with the demo subject: the base URL, the memory behind it, the demo."""

    url: str
    store: str
    memory: Memory
    demo: Demo

    def key(self, tenant: str | None = None, *scopes: str) -> str:
        _, secret = self.memory.admin.create_api_key(tenant or self.demo.tenant, scopes=list(scopes or ("read",)))
        return secret


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def page(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    from lossgate.service import create_app
    from lossgate.testing.service import serving

    with store_database(request.param, tmp_path_factory, "ui") as db_url:
        memory = lossgate.open(db_url)
        try:
            memory.admin.load_predicates(load_registry(REGISTRY_PATH))
            demo = build_demo(memory, f"ui-{uuid.uuid4().hex[:10]}", marker=MARKUP)
            with serving(create_app(memory, close_memory=False)) as url:
                yield Page(url=url, store=request.param, memory=memory, demo=demo)
        finally:
            memory.close()
