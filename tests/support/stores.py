"""A database of either engine, for the fixtures that serve one database to a module or a
session (the service, the client, the inspection page, the LangGraph store)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def store_database(engine: str, tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[str]:
    """A database URL of ``engine`` (``sqlite``: a file under a fresh temporary directory;
    ``postgres``: a database created on ``LOSSGATE_TEST_PG_URL`` and dropped after, or a
    skip saying why when that is unset), for fixtures that serve one database to a module."""
    if engine == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp(name) / f'{name}.db'}"
        return
    server_url = os.environ.get("LOSSGATE_TEST_PG_URL")
    if not server_url:
        pytest.skip(f"PostgreSQL {name} tests need LOSSGATE_TEST_PG_URL (set by .ci/run)")
    from lossgate.testing.postgres import create_database, drop_database

    db_url = create_database(server_url, prefix=f"lossgate_{name}")
    try:
        yield db_url
    finally:
        drop_database(db_url)
