"""A store outside lossgate runs the whole conformance suite by naming itself in
``LOSSGATE_TEST_STORE``, as docs/writing-a-store.md says, without editing lossgate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    """``pytest -q ARGS`` in a child process, in ``cwd``, with ``env`` on top of this process's
    environment and no PostgreSQL (the SQLite half of each test is enough here)."""
    child = {k: v for k, v in os.environ.items() if k not in ("LOSSGATE_TEST_PG_URL", "LOSSGATE_REQUIRE_PG")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=cwd,
        env={**child, **env},
        capture_output=True,
        text=True,
        timeout=240,
    )


def _on_store(tmp_path: Path, spec: str, *args: str) -> subprocess.CompletedProcess[str]:
    return _pytest(*args, LOSSGATE_TEST_STORE=spec, THIRD_STORE_OPENED=str(tmp_path / "opened.log"))


def test_the_conformance_suite_runs_on_the_store_the_environment_names(tmp_path: Path) -> None:
    done = _on_store(
        tmp_path, "tests.support.third_store:store_url", "tests/conformance/test_taint.py", "-k", "third_store"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = int(done.stdout.rsplit(" passed", 1)[0].rsplit(None, 1)[-1])
    assert ran >= 5  # every test of the module, on the third store alone (-k)
    opened = (tmp_path / "opened.log").read_text().split()
    assert len(set(opened)) >= ran and all(p.endswith("third.db") for p in opened)


def test_a_store_the_environment_cannot_name_stops_the_run_before_any_test(tmp_path: Path) -> None:
    for spec in (
        "tests.support.third_store",
        "tests.support.no_such_module:store_url",
        "tests.support.third_store:nope",
    ):
        done = _on_store(tmp_path, spec, "tests/conformance/test_taint.py")
        assert done.returncode == 4, (spec, done.stdout[-2000:], done.stderr[-2000:])  # pytest's usage error
        assert "LOSSGATE_TEST_STORE" in done.stdout + done.stderr
        assert " passed" not in done.stdout
        assert not (tmp_path / "opened.log").exists()


DRIFTING = """
import pytest
from lossgate.store.sqlite import SQLiteStore
from lossgate.testing.store_contract import LedgerContract


class Drifting(SQLiteStore):
    def migrate(self):
        return super().migrate() + 1  # says a version it is not at


class TestDrifting(LedgerContract):
    @pytest.fixture
    def store(self, tmp_path):
        store = Drifting(str(tmp_path / "drifting.db"))
        store.migrate()
        yield store
        store.close()
"""


def test_a_failing_contract_test_in_a_store_authors_run_shows_what_it_compared(tmp_path: Path) -> None:
    (tmp_path / "test_drifting.py").write_text(DRIFTING)
    done = _pytest("-k", "migrate_is_idempotent", cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    # the values, not a bare AssertionError: the contract's modules are rewritten as tests are
    failure = [line for line in done.stdout.splitlines() if line.startswith("E ")]
    assert any(" == " in line and any(c.isdigit() for c in line) for line in failure), failure
