"""Workers: leases, crashes, clean stops, and many processes sharing one database.

Correctness never rests on there being one worker: a worker killed mid-job leaves no
visible half-result, its job is claimed again when the lease runs out, and the alias
CAS lets at most one result per snapshot through. Workers open the database with the
worker's role (on PostgreSQL the only one that may claim; tests/store/test_postgres_only.py
shows the application's role refused).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.errors import ConfigError
from lossgate.model.records import utcnow
from lossgate.ops.worker import Worker, WorkerConfig, drain, open_worker_memory
from lossgate.store import open_store

HERE = Path(__file__).resolve().parent
T = "acme"


@pytest.fixture
def worker_memory(memory: lossgate.Memory, store_url: str):
    """The test's database opened by a worker (``memory`` has migrated it and loaded the registry)."""
    mem = open_worker_memory(store_url, migrate=False)
    yield mem
    mem.close()


def _seed(memory: lossgate.Memory, subject: str, n: int = 3) -> None:
    memory.append(
        [
            NewEvent(
                tenant_id=T, subject_id=subject, event_id=f"{subject}-e{i}", text=f"{subject} says hello number {i}"
            )
            for i in range(n)
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=subject,
            fact_id=f"{subject}-tz",
            predicate="timezone",
            value="UTC+01:00",
            source_event_ids=[f"{subject}-e0"],
        )
    )


def _child(url: str, sleep: float, lease: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "worker_child.py"), url, str(sleep), str(lease)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY"
    return proc


def _wait_line(proc: subprocess.Popen[str], prefix: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(prefix):
            return line.strip()
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"no {prefix!r} line from the worker (stderr: {proc.stderr.read() if proc.stderr else ''})")


@pytest.mark.slow
def test_a_worker_killed_mid_job_leaves_nothing_visible_and_its_job_is_reclaimed(memory, worker_memory, store_url):
    _seed(memory, "u1")
    memory.request_consolidation(T, "u1")
    child = _child(store_url, sleep=30, lease=1.0)
    try:
        _wait_line(child, "CLAIMED")
        (job,) = [j for j in memory.admin.jobs(T, "u1") if j.status == "running"]
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    # Nothing half-finished is visible: no published artifact, recall is raw.
    assert memory.admin.alias(T, "u1").artifact_id is None
    assert memory.recall(T, "u1").mode == "raw_fallback"
    # Before the lease runs out nobody may take the job; after it, another worker does.
    rescuer = Worker(worker_memory, config=WorkerConfig(lease_s=5, heartbeat_s=1, poll_s=0.05))
    assert rescuer.claim() is None
    time.sleep(1.2)
    assert rescuer.run_once() is not None
    jobs = {j.job_id: j for j in memory.admin.jobs(T, "u1")}
    assert jobs[job.job_id].status == "done" and jobs[job.job_id].tries == 2
    published = [a for a in memory.admin.artifacts(T, "u1") if a.state == "published"]
    assert len(published) == 1 and memory.admin.alias(T, "u1").artifact_id == published[0].artifact_id
    assert memory.recall(T, "u1").mode == "summary"


@pytest.mark.slow
def test_sigterm_lets_the_worker_finish_its_job_then_exit(memory, store_url):
    _seed(memory, "u1")
    memory.request_consolidation(T, "u1")
    child = _child(store_url, sleep=1.5, lease=10)
    try:
        _wait_line(child, "CLAIMED")
        child.send_signal(signal.SIGTERM)
        stopped = _wait_line(child, "STOPPED")
        assert child.wait(timeout=20) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert stopped == "STOPPED 1"
    assert [j.status for j in memory.admin.jobs(T, "u1")] == ["done"]
    assert memory.recall(T, "u1").mode == "summary"


def test_a_job_whose_lease_was_lost_cannot_be_finished_by_its_old_owner(memory, worker_memory):
    _seed(memory, "u1")
    memory.request_consolidation(T, "u1")
    slow = Worker(worker_memory, owner="slow", config=WorkerConfig(lease_s=0.2))
    job = slow.claim()
    time.sleep(0.3)
    fast = Worker(worker_memory, owner="fast", config=WorkerConfig(lease_s=30))
    assert fast.claim().job_id == job.job_id  # the expired lease is taken over
    with worker_memory.store.write() as tx:
        assert not tx.heartbeat_job(job.job_id, owner="slow", lease_expires_at=utcnow() + timedelta(seconds=30))
        assert not tx.finish_job(T, "u1", job.job_id, owner="slow", status="done", at=utcnow())
        assert tx.finish_job(T, "u1", job.job_id, owner="fast", status="done", at=utcnow())


def test_many_changes_enqueue_one_rebuild_and_drain_publishes_it(memory, worker_memory):
    _seed(memory, "u1", n=5)
    drain(worker_memory)
    for i in range(3):
        memory.append([NewEvent(tenant_id=T, subject_id="u1", event_id=f"late-{i}", text=f"moved {i}")])
        memory.supersede(
            T,
            "u1",
            memory.facts(T, "u1", predicate="timezone")[0].fact_id,
            NewFact(
                tenant_id=T,
                subject_id="u1",
                predicate="timezone",
                value=f"UTC+0{i + 2}:00",
                source_event_ids=[f"late-{i}"],
            ),
        )
    memory.delete_event(T, "u1", "u1-e3")
    assert len([j for j in memory.admin.jobs(T, "u1") if j.status == "pending"]) == 1
    assert drain(worker_memory) == 1
    alias, clock = memory.admin.alias(T, "u1"), memory.admin.clock(T, "u1")
    assert (alias.source_epoch, alias.covers_through) == (clock.input_epoch, clock.high_water)
    assert [j.status for j in memory.admin.jobs(T, "u1")].count("pending") == 0


def test_a_subject_that_keeps_failing_ends_in_review_not_in_a_retry_loop(memory, worker_memory):
    from lossgate.consolidate.pipeline import ConsolidationConfig
    from lossgate.testing.compressors import MissingFieldCompressor

    _seed(memory, "bad")
    _seed(memory, "good")
    memory.request_consolidation(T, "bad")
    config = ConsolidationConfig(max_attempts=3, backoff_base_s=0.0)
    worker = Worker(
        worker_memory, consolidation=config, compressor=MissingFieldCompressor(), config=WorkerConfig(poll_s=0.0)
    )
    assert worker.run(exit_when_idle=True) == 3  # the first try and two retries, then no more
    attempts = memory.admin.attempts(T, "bad")
    assert [a.status for a in attempts] == ["error"] * 3
    assert [a.needs_review for a in attempts] == [False, False, True]
    assert [j.status for j in memory.admin.jobs(T, "bad")] == ["done", "done", "review"]
    assert memory.admin.alias(T, "bad").artifact_id is None and memory.recall(T, "bad").mode == "raw_fallback"
    # The tenant-wide view an operator reads; a healthy subject is not in it.
    drain(worker_memory)
    memory.request_consolidation(T, "good")
    assert drain(worker_memory) == 1
    assert [(j.subject_id, j.status) for j in memory.admin.jobs(T, None, statuses=["review"])] == [("bad", "review")]
    assert memory.admin.jobs("other-tenant", None) == []
    # A new change earns one more try, not a new series of retries.
    memory.append([NewEvent(tenant_id=T, subject_id="bad", event_id="bad-late", text="one more thing")])
    memory.request_consolidation(T, "bad")
    assert worker.run(exit_when_idle=True) == 3 + 1  # run() counts every job this worker did
    assert [j.status for j in memory.admin.jobs(T, "bad")][-1] == "review"
    assert len(memory.admin.attempts(T, "bad")) == 4
    # Once a rebuild publishes (here with a working compressor), the subject leaves review.
    assert memory.consolidate(T, "bad").status == "published"
    assert memory.admin.jobs(T, None, statuses=["review"]) == []


def test_a_store_acts_for_an_application_or_a_worker(store_url):
    # On SQLite, one embedded file with no database roles, the role changes nothing.
    for role in ("app", "worker"):
        open_store(store_url, role=role).close()
    with pytest.raises(ConfigError, match="unknown store role 'admin'"):
        open_store(store_url, role="admin")


# -- many worker processes, one database (PostgreSQL) --------------------------------------

SUBJECTS = int(os.environ.get("LOSSGATE_TEST_SUBJECTS", "200"))
WORKERS = 8


@pytest.mark.slow
def test_eight_worker_processes_and_200_subjects_with_interleaved_changes(memory, store_url):
    if not store_url.startswith("postgresql"):
        pytest.skip("the multi-process scale test runs on PostgreSQL (SQLite has one writer)")
    subjects = [f"s{i:03d}" for i in range(SUBJECTS)]
    for s in subjects:
        _seed(memory, s, n=4)
        memory.request_consolidation(T, s)
    env = {**os.environ, "LOSSGATE_DB": store_url}
    pool = subprocess.Popen(
        [sys.executable, "-m", "lossgate", "worker", "--concurrency", str(WORKERS), "--lease", "10"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deleted: dict[str, str] = {}
    try:
        # Interleave appends, supersessions and deletions while the workers consolidate.
        for round_ in range(3):
            for i, s in enumerate(subjects):
                memory.append(
                    [
                        NewEvent(
                            tenant_id=T,
                            subject_id=s,
                            event_id=f"{s}-r{round_}",
                            text=f"round {round_} for {s}: secret-{s}-{round_}",
                        )
                    ]
                )
                if (i + round_) % 3 == 0:
                    old = memory.facts(T, s, predicate="timezone")[0]
                    memory.supersede(
                        T,
                        s,
                        old.fact_id,
                        NewFact(
                            tenant_id=T,
                            subject_id=s,
                            predicate="timezone",
                            value=f"UTC+0{round_ + 2}:00",
                            source_event_ids=[f"{s}-r{round_}"],
                        ),
                    )
                elif (i + round_) % 3 == 1:
                    memory.delete_event(T, s, f"{s}-r{round_}")
                    deleted[f"{s}-r{round_}"] = s
                memory.request_consolidation(T, s)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            busy = [
                s
                for s in subjects
                if any(j.status in ("pending", "running") and j.run_after <= utcnow() for j in memory.admin.jobs(T, s))
            ]
            if not busy:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the queue never drained: {len(busy)} subjects busy")
    finally:
        pool.send_signal(signal.SIGTERM)
        try:
            code = pool.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pool.kill()
            raise
    assert code == 0, pool.stdout.read() if pool.stdout else ""

    for s in subjects:
        clock, alias = memory.admin.clock(T, s), memory.admin.alias(T, s)
        # The alias points at an artifact built from the subject's current valid inputs.
        assert alias.artifact_id and alias.source_epoch == clock.input_epoch, s
        art = memory.admin.artifact(T, s, alias.artifact_id)
        m = art.manifest
        floor = m.expected_alias.covers_through if m.path == "incremental" else 0
        valid = {e.event_id for e in memory.events(T, s, states=["valid"]) if floor < e.seq <= m.new_covers_through}
        active = {f.fact_id for f in memory.facts(T, s) if f.seq <= m.new_covers_through}
        events_in = {r.id for r in m.inputs if r.kind == "event"}
        facts_in = {r.id for r in m.inputs if r.kind == "fact"}
        # Every input is still valid, and every valid input it covers is in (incremental:
        # the events after its parent's coverage; the parent itself is the published alias).
        assert events_in == valid and facts_in == active, s
        # No artifact mixes subjects: every claim and every input belongs to this subject.
        own = (
            {e.event_id for e in memory.events(T, s)}
            | {f.fact_id for f in memory.facts(T, s, statuses=None)}
            | {a.artifact_id for a in memory.admin.artifacts(T, s)}
        )
        for a in memory.admin.artifacts(T, s):
            assert (a.tenant_id, a.subject_id, a.body.tenant_id, a.body.subject_id) == (T, s, T, s)
            assert all((c.tenant_id, c.subject_id) == (T, s) for c in a.body.claims)
            assert {r.id for r in a.manifest.inputs} <= own, (s, a.artifact_id)
        # Coverage never decreased, in the order the alias moved.
        published = [a for a in memory.admin.attempts(T, s) if a.status == "published"]
        published.sort(key=lambda a: a.finished_at)
        covers = [a.covers_through for a in published]
        assert covers == sorted(covers), (s, covers)
    # No deleted content in any compressor input after its deletion, nor in what recall returns.
    for event_id, s in deleted.items():
        (gone_at,) = [
            line.at for line in memory.admin.log(T, s) if line.op == "delete_event" and line.target_id == event_id
        ]
        later = [a for a in memory.admin.attempts(T, s) if a.started_at > gone_at]
        assert later, f"{s} was never consolidated after {event_id} was deleted"
        for attempt in later:
            assert event_id not in attempt.selected_ids, (event_id, attempt.attempt_id)
        secret = f"secret-{event_id.replace('-r', '-')}"
        result = memory.recall(T, s)
        assert secret not in (result.summary or "")
        assert all(secret not in (e.text or "") for e in result.events)
