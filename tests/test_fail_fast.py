"""The command line fails fast and says it once: an unreachable PostgreSQL in seconds and one
line, every usage error in one line, a mistyped SQLite path an error rather than a new database."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import lossgate
from lossgate.cli import app
from lossgate.errors import ConfigError
from lossgate.testing.service import free_port

ROOT = Path(__file__).resolve().parents[1]
PREDICATES = ROOT / "examples" / "predicates.toml"
WHO = ["-t", "acme", "-s", "user-17"]

runner = CliRunner(env={"FORCE_COLOR": None, "COLUMNS": None, "LOSSGATE_DB": None, "NO_COLOR": "1"})


def lossgate_cli(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """``lossgate ARGS...`` in a process of its own, as a terminal runs it; and how long it took."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOSSGATE_DB", "FORCE_COLOR")}
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "lossgate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**env, "COLUMNS": "80"},
    )
    return done, time.monotonic() - t0


def one_line(stderr: str, stdout: str = "") -> str:
    """The one line a failed command printed (stderr), with nothing on stdout."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert stdout == "", stdout
    return lines[0]


def one_line_error(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return one_line(result.stderr, result.stdout)


# -- an unreachable PostgreSQL ------------------------------------------------------------

needs_psycopg = pytest.mark.skipif(importlib.util.find_spec("psycopg") is None, reason="needs lossgate[postgres]")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts TCP connections and never answers (nobody accepts them)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


@needs_psycopg
def test_a_closed_port_fails_at_once_in_one_line_without_the_password(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    done, took = lossgate_cli(
        "--db", f"postgresql://postgres:s3cret@127.0.0.1:{port}/nope", "facts", *WHO, cwd=tmp_path
    )
    line = one_line(done.stderr, done.stdout)
    assert done.returncode == 1 and took < 10, (done.returncode, took)
    assert f"cannot connect to PostgreSQL at postgresql://postgres:***@127.0.0.1:{port}/nope" in line
    assert "refused" in line and "s3cret" not in done.stderr


@pytest.mark.slow
@needs_psycopg
def test_a_server_that_never_answers_fails_after_the_default_connect_timeout(silent_port: int, tmp_path: Path) -> None:
    done, took = lossgate_cli("--db", f"postgresql://postgres@127.0.0.1:{silent_port}/x", "events", *WHO, cwd=tmp_path)
    line = one_line(done.stderr, done.stdout)
    assert done.returncode == 1 and 4 < took < 10, (done.returncode, took)
    assert f"postgresql://postgres@127.0.0.1:{silent_port}/x" in line and "timeout" in line


@pytest.mark.slow
@needs_psycopg
def test_the_url_sets_the_connect_timeout(silent_port: int, tmp_path: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:{silent_port}/x?connect_timeout=2&password=s3cret"
    done, took = lossgate_cli("--db", url, "recall", *WHO, "--query", "peanuts", cwd=tmp_path)
    line = one_line(done.stderr, done.stdout)
    # against the default timeout (5 s), measured in the same test: a loaded machine slows both
    default, took_default = lossgate_cli(
        "--db", f"postgresql://postgres@127.0.0.1:{silent_port}/x", "recall", *WHO, "--query", "peanuts", cwd=tmp_path
    )
    assert done.returncode == 1 and default.returncode == 1
    assert took + 1.5 < took_default, (took, took_default)
    assert "password=***" in line and "s3cret" not in done.stderr


@needs_psycopg
@pytest.mark.parametrize("wait", ["soon", "0", "-1", "0.5", "1e3"])
def test_a_bad_connect_timeout_is_a_config_error(wait: str) -> None:
    """0, a negative or a fraction would be read by libpq as "wait for ever"."""
    url = f"postgresql://postgres@127.0.0.1:1/x?connect_timeout={wait}"
    t0 = time.monotonic()
    result = runner.invoke(app, ["--db", url, "facts", *WHO])
    assert "connect_timeout" in one_line_error(result, 2) and time.monotonic() - t0 < 5


@pytest.mark.parametrize(
    "url", ["postgresql://u@127.0.0.1:notaport/db", "postgresql://[::1", "postgresql://u@127.0.0.1:70000/db"]
)
def test_a_url_no_connection_could_follow_is_a_config_error(url: str) -> None:
    one_line_error(runner.invoke(app, ["--db", url, "facts", *WHO]), 2)


# -- usage errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["consolidate", "--budget", "-5", *WHO],  # a value out of range
        ["consolidate", "--budget", "lots", *WHO],  # not a number
        ["consolidate", "--timeout", "0", *WHO],  # below the option's minimum
        ["eval", "daily", "-t", "acme", "--max-prose-drift-rate", "1.5"],  # not a share (checked by the command)
        ["eval", "daily", "-t", "acme", "--max-prose-drift-rate", "nan"],
        ["facts", "-t", "acme"],  # a missing option
        ["ingest"],  # a missing argument
        ["facts", *WHO, "--bogus"],  # an unknown option
        ["--bogus", "facts", *WHO],  # an unknown option of the root
        ["--db"],  # an option without its value
        ["no-such-command"],
        ["rollout", "nope"],  # an unknown command of a group
        ["keys", "create"],  # a group's command without its option
        ["events", *WHO, "--state", "bogus"],  # not one of the choices
        ["facts", "-t", "a b", "-s", "x"],  # refused by the option's own check
        ["init", "--predicates", "/no/such/file.toml"],  # a file that does not exist
        ["recall", *WHO, "extra"],  # an extra argument
    ],
    ids=lambda args: " ".join(args),
)
def test_every_usage_error_is_one_line_and_exit_2(args: list[str], tmp_path: Path) -> None:
    result = runner.invoke(app, ["--db", f"sqlite:///{tmp_path / 'x.db'}", *args] if args[0] != "--db" else args)
    line = one_line_error(result, 2)
    assert "--help" in line and "╭" not in line and "Usage:" not in result.stderr


def test_a_usage_error_in_a_terminal_is_one_line(tmp_path: Path) -> None:
    done, _ = lossgate_cli("consolidate", "--budget", "-5", *WHO, cwd=tmp_path)
    line = one_line(done.stderr, done.stdout)
    assert done.returncode == 2 and "--budget" in line and "consolidate --help" in line
    assert not (tmp_path / "lossgate.db").exists()


def test_no_arguments_still_prints_the_help() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 2 and "Usage:" in result.output and "Commands" in result.output


# -- a SQLite file that does not exist ----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["facts", *WHO],
        ["events", *WHO],
        ["recall", *WHO, "--query", "peanuts"],
        ["clock", *WHO],
        ["predicates", "show"],
        ["keys", "list", "-t", "acme"],
        ["jobs", "-t", "acme"],
        ["mcp", "--key", "lg_x"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_a_read_command_names_the_missing_file_and_creates_nothing(args: list[str], tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    line = one_line_error(runner.invoke(app, ["--db", f"sqlite:///{path}", *args]), 2)
    assert f"no SQLite database at {path}" in line
    assert not path.exists()


EVENT = {
    "type": "event",
    "tenant_id": "acme",
    "subject_id": "user-17",
    "event_id": "e1",
    "text": "hello",
    "occurred_at": "2026-03-14T14:32:00-05:00",
}


@pytest.mark.parametrize(
    "args",
    [
        ["init"],
        ["ingest", "--quiet", "EVENTS"],
        ["predicates", "load", str(PREDICATES)],
        ["keys", "create", "-t", "acme"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_the_commands_that_set_up_a_database_create_it(args: list[str], tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(EVENT) + "\n", encoding="utf-8")
    path = tmp_path / "new.db"
    result = runner.invoke(app, ["--db", f"sqlite:///{path}", *[str(events) if a == "EVENTS" else a for a in args]])
    assert result.exit_code == 0 and path.exists(), (result.stdout, result.stderr)


def test_the_worker_and_the_service_create_it(tmp_path: Path) -> None:
    from lossgate.ops.worker import open_worker_memory
    from lossgate.service import create_app

    for name, opener in (
        ("worker", lambda url: open_worker_memory(url)),
        ("service", lambda url: create_app(url).state.memory),
    ):
        path = tmp_path / f"{name}.db"
        opener(f"sqlite:///{path}").close()
        assert path.exists(), name


def test_the_python_api_creates_unless_told_not_to(tmp_path: Path) -> None:
    path = tmp_path / "api.db"
    with pytest.raises(ConfigError, match="no SQLite database at"):
        lossgate.open(f"sqlite:///{path}", create=False)
    assert not path.exists()
    lossgate.open(f"sqlite:///{path}").close()
    assert path.exists()
    lossgate.open(f"sqlite:///{path}", create=False).close()  # there now


def test_a_sqlite_url_with_a_query_is_refused_not_read_as_a_file_name(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    line = one_line_error(runner.invoke(app, ["--db", f"sqlite:///{path}?mode=ro", "init"]), 2)
    assert "?mode=ro" in line and not list(tmp_path.iterdir())
