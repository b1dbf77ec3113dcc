"""The conformance suite: every test here runs unchanged against every store.

``memory`` is parametrized over the backends. PostgreSQL runs when
``LOSSGATE_TEST_PG_URL`` is set (CI always sets it) and is skipped with a
reason otherwise. A third store joins with ``LOSSGATE_TEST_STORE=module:function``:
importing ``module`` registers the store's URL scheme, and ``function(tmp_path)`` returns a
URL of a new, empty database of it (docs/writing-a-store.md).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import lossgate
from lossgate.cli import app
from lossgate.model.registry import load_registry
from tests.support import REGISTRY_PATH


def _pg_url() -> str | None:
    return os.environ.get("LOSSGATE_TEST_PG_URL")


def _third_store() -> tuple[str, Callable[[Path], str]] | None:
    """The store ``LOSSGATE_TEST_STORE`` names (``module:function``), or ``None``."""
    spec = os.environ.get("LOSSGATE_TEST_STORE", "").strip()
    if not spec:
        return None
    module, _, name = spec.partition(":")
    if not module or not name:
        raise pytest.UsageError(f"LOSSGATE_TEST_STORE={spec!r}: expected module:function")
    try:
        url_of = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise pytest.UsageError(f"LOSSGATE_TEST_STORE={spec!r}: {exc}") from exc
    return module.rpartition(".")[2], url_of


THIRD = _third_store()


@pytest.fixture(params=["sqlite", "postgres", *([THIRD[0]] if THIRD else [])])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if THIRD is not None and request.param == THIRD[0]:
        return str(THIRD[1](tmp_path))
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'conformance.db'}"
    url = _pg_url()
    if not url:
        pytest.skip("PostgreSQL conformance needs LOSSGATE_TEST_PG_URL (set by .ci/run)")
    from lossgate.testing.postgres import fresh_database

    return fresh_database(url, request)


@pytest.fixture
def memory(store_url: str):
    mem = lossgate.open(store_url)
    mem.admin.load_predicates(load_registry(REGISTRY_PATH))
    yield mem
    mem.close()


# The CLI as a user runs it: no colours, no terminal width, no database from the environment.
runner = CliRunner(env={"FORCE_COLOR": None, "COLUMNS": None, "LOSSGATE_DB": None, "NO_COLOR": "1"})


@pytest.fixture
def cli(store_url: str):
    """``lossgate --db <this store> ARGS...`` on a database with the example registry."""

    def run(*args: str) -> Result:
        return runner.invoke(app, ["--db", store_url, *args])

    assert run("init", "--predicates", str(REGISTRY_PATH)).exit_code == 0
    return run
