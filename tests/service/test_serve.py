"""The command line of the service: ``lossgate keys`` and ``lossgate serve --workers N``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from lossgate.cli import app
from lossgate.testing.service import free_port, stop_process, wait_healthy
from tests.support.service import Service

pytestmark = pytest.mark.slow  # `lossgate serve` processes, several workers each

ROOT = Path(__file__).resolve().parents[2]


def test_keys_are_created_listed_and_revoked_from_the_command_line(tmp_path: Path) -> None:
    runner = CliRunner(env={"LOSSGATE_DB": None, "COLUMNS": None, "NO_COLOR": "1"})
    db = f"sqlite:///{tmp_path / 'keys.db'}"

    def run(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(app, ["--db", db, *args])
        return result.exit_code, result.stdout, result.stderr

    code, secret, note = run("keys", "create", "-t", "acme", "--scopes", "read", "--name", "support bot")
    assert code == 0 and secret.startswith("lg_") and "not shown again" in note
    key_id = secret.split("_")[1]
    code, out, _ = run("keys", "create", "-t", "acme", "--scopes", "read,write,admin", "--json")
    second = json.loads(out)
    assert code == 0 and second["scopes"] == ["read", "write", "admin"] and second["secret"].startswith("lg_")
    code, out, _ = run("keys", "list", "-t", "acme", "--json")
    listed = [json.loads(line) for line in out.splitlines()]
    assert [(k["key_id"], k["name"], k["revoked_at"]) for k in listed] == [
        (key_id, "support bot", None),
        (second["key_id"], "", None),
    ]
    assert all("secret" not in k and "key_hash" not in k for k in listed)
    assert "support bot" in run("keys", "list", "-t", "acme")[1]
    code, out, _ = run("keys", "revoke", key_id, "-t", "acme")
    assert code == 0 and "revoked" in out
    assert json.loads(run("keys", "list", "-t", "acme", "--json")[1].splitlines()[0])["revoked_at"] is not None
    code, _, err = run("keys", "revoke", key_id, "-t", "globex")  # another tenant's key: as if missing
    assert code == 2 and "does not exist for tenant 'globex'" in err
    code, _, err = run("keys", "create", "-t", "acme", "--scopes", "read,root")
    assert code == 2 and "unknown scope 'root'" in err
    assert run("keys", "list", "-t", "nobody")[1].strip() == "no API keys for tenant nobody"


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_several_worker_processes_serve_one_database(service: Service) -> None:
    """``lossgate serve --workers 2`` on the session's database (the in-thread server keeps
    serving it too): 8 clients append at once, with retries; every event lands once."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lossgate",
            "--db",
            service.db_url,
            "serve",
            "--port",
            str(port),
            "--workers",
            "2",
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, proc)
        except RuntimeError as exc:
            raise AssertionError(
                proc.stdout.read().decode() if proc.stdout and proc.poll() is not None else exc
            ) from None
        assert len(_children(proc.pid)) >= 2, "uvicorn runs a process per worker"
        tenant = service.tenant()
        secret = service.key(tenant)
        problems: list[str] = []

        def client(n: int) -> None:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as c:
                for i in range(10):
                    body = {"events": [{"text": f"client {n} line {i}"}]}  # no event id: the key dedupes
                    for subject in (f"own-{n}", "shared"):
                        for _ in range(2):  # every request sent twice, as after a timeout
                            r = c.post(
                                f"/v1/subjects/{subject}/append",
                                json=body,
                                headers={"Idempotency-Key": f"{subject}-{n}-{i}"},
                            )
                            if r.status_code != 200:
                                problems.append(f"{r.status_code} {r.text}")

        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert problems == []
        assert len(service.memory.events(tenant, "shared", limit=1000)) == 80
        assert sorted(e.seq for e in service.memory.events(tenant, "shared", limit=1000)) == list(range(1, 81))
        assert all(len(service.memory.events(tenant, f"own-{n}")) == 10 for n in range(8))
    finally:
        stop_process(proc)
