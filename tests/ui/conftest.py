"""The inspection page under test: a real uvicorn server on each store (PostgreSQL when
``LOSSGATE_TEST_PG_URL`` is set), with the demo subject built in a tenant of its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import lossgate
from lossgate.model.registry import load_registry
from tests.support import REGISTRY_PATH
from tests.support.inspection import MARKUP, Page, build_demo
from tests.support.stores import store_database


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
