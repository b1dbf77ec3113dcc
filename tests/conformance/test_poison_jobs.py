"""One subject that fails on every attempt never stops a worker, nor anyone else's job.

Whatever a consolidation raises that lossgate did not raise on purpose (a bug, an
``OverflowError`` in the gate, a ``RecursionError`` on a compressor's output) ends as an
``error`` attempt that names the exception's kind and place and none of its message;
the retry policy then backs off and, at ``max_attempts``, leaves the subject for review,
its sources hot and its recall on the raw layer. The worker goes on to the next job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from lossgate import NewEvent
from lossgate.cli import app
from lossgate.consolidate import pipeline
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.ops.worker import drain, open_worker_memory

SECRET = "date value out of range: 4711 Elm Street"  # what a message may hold: never stored
RETRIES = ConsolidationConfig(backoff_base_s=0, max_attempts=3)
# Two tenants: the poisoned subject's and another, each with subjects of their own.
SUBJECTS = [("acme", "poison"), ("acme", "u1"), ("globex", "u2"), ("globex", "u3")]
AT = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)


def queue_everyone(memory, subjects=SUBJECTS) -> None:
    for tenant, subject in subjects:
        memory.append(
            [
                NewEvent(
                    tenant_id=tenant,
                    subject_id=subject,
                    event_id=f"{tenant}-{subject}-e1",
                    text="The invoice INV-2041 is due on 2026-04-01.",
                    occurred_at=AT,
                )
            ]
        )
        memory.request_consolidation(tenant, subject, reason="test")


@pytest.fixture
def gate_raises_for_poison(monkeypatch):
    """The gate raises OverflowError for the subject ``poison`` and no other."""
    real = pipeline.gate.check

    def check(snapshot, *args, **kwargs):
        if snapshot.subject_id == "poison":
            raise OverflowError(SECRET)
        return real(snapshot, *args, **kwargs)

    monkeypatch.setattr(pipeline.gate, "check", check)


def drain_as_a_worker(store_url: str, config: ConsolidationConfig) -> None:
    worker = open_worker_memory(store_url, migrate=False)
    try:
        drain(worker, consolidation=config)
    finally:
        worker.close()


def assert_left_for_review(memory, tenant: str, subject: str, kind: str) -> None:
    attempts = memory.admin.attempts(tenant, subject)
    assert [a.status for a in attempts] == ["error"] * RETRIES.max_attempts
    assert attempts[-1].needs_review and not attempts[0].needs_review
    for a in attempts:
        assert a.error.startswith(f"crash: {kind} at ") and "lossgate/" in a.error, a.error
        assert SECRET not in (a.error or "") and a.raw_output is None and a.finished_at is not None
    assert [j.status for j in memory.admin.jobs(tenant, subject)][-1] == "review"
    assert memory.admin.alias(tenant, subject).artifact_id is None
    assert memory.recall(tenant, subject).mode == "raw_fallback"


def test_a_job_whose_gate_raises_ends_in_review_and_every_other_job_publishes(
    memory, store_url, gate_raises_for_poison
):
    queue_everyone(memory)
    drain_as_a_worker(store_url, RETRIES)

    assert_left_for_review(memory, "acme", "poison", "OverflowError")
    for tenant, subject in SUBJECTS[1:]:
        assert memory.admin.attempts(tenant, subject)[-1].status == "published", (tenant, subject)
        assert {j.status for j in memory.admin.jobs(tenant, subject)} == {"done"}


def test_a_crash_before_the_attempt_is_recorded_is_recorded_as_one(memory, store_url, monkeypatch):
    def select(*args, **kwargs):
        raise ZeroDivisionError(SECRET)

    monkeypatch.setattr(pipeline, "select", select)
    queue_everyone(memory, [("acme", "poison")])
    config = ConsolidationConfig(incremental=False, backoff_base_s=0, max_attempts=3)

    attempt = memory.consolidate("acme", "poison", config=config)

    assert attempt.status == "error" and attempt.selected_ids == ()
    assert attempt.error.startswith("crash: ZeroDivisionError at ") and SECRET not in attempt.error
    drain_as_a_worker(store_url, config)
    assert_left_for_review(memory, "acme", "poison", "ZeroDivisionError")


def test_an_attempt_is_never_left_selected_when_a_later_step_raises(memory, monkeypatch):
    def switch(*args, **kwargs):
        raise RuntimeError(SECRET)

    monkeypatch.setattr(pipeline, "switch", switch)
    queue_everyone(memory, [("acme", "u1")])

    attempt = memory.consolidate("acme", "u1", config=RETRIES)

    assert attempt.status == "error" and attempt.error.startswith("crash: RuntimeError at ")
    assert [a.status for a in memory.admin.attempts("acme", "u1")] == ["error"]
    assert memory.admin.alias("acme", "u1").artifact_id is None


def test_lossgate_consolidate_says_a_crash_in_one_line_and_exits_1(memory, store_url, gate_raises_for_poison):
    queue_everyone(memory, [("acme", "poison")])

    result = CliRunner().invoke(app, ["--db", store_url, "consolidate", "-t", "acme", "-s", "poison"])

    assert result.exit_code == 1, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: consolidation of acme/poison failed") and "crash: OverflowError" in line
    assert SECRET not in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_two_worker_processes_outlive_poisoned_subjects_and_drain_every_other_tenant(memory, store_url, tmp_path):
    """``lossgate worker -n 2`` with a compressor that crashes on two subjects (one inside the
    compressor, one in the pipeline reading its output), among subjects of three tenants."""
    subjects = [
        ("acme", "poison-raise"),
        ("acme", "poison-deep"),
        ("globex", "poison-exit"),
        ("initech", "poison-huge"),
        *SUBJECTS[1:],
        *[("initech", f"u{i}") for i in range(4)],
    ]
    queue_everyone(memory, subjects)
    log = open(tmp_path / "workers.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lossgate",
            "--db",
            store_url,
            "worker",
            "-n",
            "2",
            "--backoff",
            "0",
            "--max-attempts",
            "3",
            "--compressor",
            "lossgate.testing.compressors:PoisonedCompressor",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            statuses = {s: [j.status for j in memory.admin.jobs(t, s)] for t, s in subjects}
            if all(
                st and st[-1] in ("done", "review") and "pending" not in st and "running" not in st
                for st in statuses.values()
            ):
                break
            assert proc.poll() is None, (tmp_path / "workers.log").read_text()[-3000:]
            time.sleep(0.5)
        else:
            pytest.fail(f"the queue did not drain: {statuses}")
        time.sleep(1.0)  # both workers keep polling: neither died of the poison
        assert proc.poll() is None, (tmp_path / "workers.log").read_text()[-3000:]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "workers.log").read_text()[-3000:]

    raised = memory.admin.attempts("acme", "poison-raise")
    assert [a.status for a in raised] == ["error"] * 3 and raised[-1].needs_review
    assert "RecursionError" in raised[-1].error
    assert_left_for_review(memory, "acme", "poison-deep", "RecursionError")
    for tenant, subject, said in (
        ("globex", "poison-exit", "compressor error: crash: SystemExit at "),
        ("initech", "poison-huge", "invalid output: "),
    ):
        failed = memory.admin.attempts(tenant, subject)
        assert [a.status for a in failed] == ["error"] * 3 and failed[-1].needs_review, subject
        assert failed[-1].error.startswith(said) and failed[-1].raw_output is None, failed[-1].error
    for tenant, subject in subjects[4:]:
        assert memory.admin.attempts(tenant, subject)[-1].status == "published", (tenant, subject)


class Raises:
    """A compressor that raises ``exc`` (foreign code: what it raises is its own)."""

    name, version, prompt_version = "raises", "1", "none"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def compress(self, request):
        raise self.exc


@pytest.mark.parametrize(
    "exc",
    [SystemExit(3), KeyboardInterrupt(), GeneratorExit(), BaseException(SECRET), ValueError(SECRET)],
    ids=lambda e: type(e).__name__,
)
def test_whatever_a_compressor_raises_is_a_failed_attempt_without_its_message(memory, exc):
    queue_everyone(memory, [("acme", "u1")])

    attempt = memory.consolidate("acme", "u1", compressor=Raises(exc), config=RETRIES)

    assert attempt.status == "error" and attempt.error.startswith(f"compressor error: crash: {type(exc).__name__} at ")
    assert SECRET not in attempt.error and attempt.raw_output is None
    assert memory.consolidate("acme", "u1").status == "published"  # the process goes on
