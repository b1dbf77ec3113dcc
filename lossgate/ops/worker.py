"""Consolidation workers: stateless processes that drain the rebuild queue.

Any number of workers, on any number of hosts, share one database. A worker
claims the oldest due job (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite's
single writer lock serialises claims), holds it under a lease that a
heartbeat thread extends, consolidates the subject, and releases the job.
A worker killed mid-job simply stops heart-beating: its lease expires and
another worker claims the job again. Correctness never rests on there being
one worker, only on the alias CAS: two workers racing on one subject can both
build an artifact, and at most one of them is published.

Claiming a job and extending its lease reach every tenant's queue, so they take
the worker's credential: a worker opens its memory with
:func:`open_worker_memory`, which on PostgreSQL runs every transaction as the
role ``lossgate_worker``; a memory opened by :func:`lossgate.open` (an
application's) is refused. docs/roles.md says what each login is granted.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from lossgate.api.memory import Memory
from lossgate.consolidate.compressor import Compressor
from lossgate.consolidate.factory import load_compressor
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.errors import LossgateError, StoreError, crash_reason
from lossgate.judge import ModelJudge
from lossgate.lineage import queue
from lossgate.model.derived_records import Attempt, Job
from lossgate.model.records import utcnow
from lossgate.semantic import Embedder, embedder_from_env
from lossgate.store import open_store

__all__ = ["WorkerConfig", "Worker", "open_worker_memory", "run_pool", "drain"]

log = logging.getLogger("lossgate.ops.worker")


@dataclass(frozen=True)
class WorkerConfig:
    lease_s: float = 30.0
    heartbeat_s: float = 10.0
    poll_s: float = 0.5
    retry_s: float = 5.0  # after an infrastructure error, try the job again this much later


def open_worker_memory(
    url: str | None = None,
    *,
    migrate: bool = True,
    embedder: Embedder | None = None,
    compressors: Callable[[str], Compressor] | None = None,
) -> Memory:
    """:func:`lossgate.open` for a worker: the store acts as ``role="worker"``, the only
    role that may claim jobs and extend leases (on SQLite, which has no roles, the same
    memory as any other). If the login may not act as the worker role, every read and
    write raises :class:`~lossgate.errors.StoreError` saying so. With an ``embedder``,
    each job also embeds what its subject gained (:func:`lossgate.semantic.embed_pending`)."""
    memory = Memory(open_store(url, role="worker"), embedder=embedder, compressors=compressors)
    if migrate:
        memory.admin.migrate()
    return memory


class Worker:
    """One worker loop over one memory (one connection per worker process). The memory
    must be a worker's (:func:`open_worker_memory`): an application's cannot claim."""

    def __init__(
        self,
        memory: Memory,
        *,
        config: WorkerConfig | None = None,
        consolidation: ConsolidationConfig | None = None,
        compressor: Compressor | None = None,
        owner: str | None = None,
        judge: ModelJudge | None = None,
    ) -> None:
        self.memory = memory
        self.config = config or WorkerConfig()
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.consolidator = memory.admin.consolidator(compressor=compressor, config=consolidation, judge=judge)
        self._consolidation, self._judge = consolidation, judge
        self.stopping = threading.Event()
        self.processed = 0
        # Set by install_signal_handlers: SIGINT and SIGTERM then set ``stopping``, so a
        # KeyboardInterrupt or SystemExit raised during a job is the job's, not a signal.
        self._stops_by_flag = False

    def claim(self) -> Job | None:
        with self.memory.store.write() as tx:
            return tx.claim_job(owner=self.owner, lease_seconds=self.config.lease_s, now=utcnow())

    def run_once(self) -> Job | None:
        """Claim and process one due job. Returns it, or None if the queue had nothing due."""
        job = self.claim()
        if job is None:
            return None
        beat_stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job, beat_stop), daemon=True)
        beat.start()
        outcome: Attempt | LossgateError
        try:
            self._expire(job)  # before the compressor reads the subject: what expired never reaches it
            # the tenant's rollout (live and shadow compressors) decides, else this worker's own
            outcome = self.memory.admin.run_job(
                job.tenant_id, job.subject_id, fallback=self.consolidator, config=self._consolidation, judge=self._judge
            )
            log.info("job %s %s/%s: %s", job.job_id, job.tenant_id, job.subject_id, outcome.status)
            if outcome.needs_review:  # failed max_attempts times in a row: no retry is queued
                log.error("job %s: needs review after repeated failures: %s", job.job_id, outcome.reason)
            self._embed(job)
            self._demote(job)
        except StoreError as exc:  # infrastructure: the job goes back for a later try
            log.warning("job %s: store error, will retry: %s", job.job_id, exc)
            outcome = exc
        except LossgateError as exc:  # the subject cannot be consolidated as it is: a person must look
            log.error("job %s: needs review: %s", job.job_id, exc)
            outcome = exc
        except BaseException as exc:
            if not self._stops_by_flag and isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise  # without our signal handlers, a Ctrl-C is the caller's to stop a drain
            outcome = self._crashed(job, exc)
        finally:
            beat_stop.set()
            beat.join()
        with self.memory.store.write() as tx:  # the status: lossgate.lineage.queue.job_status
            queue.release(tx, job, outcome, owner=self.owner, retry_s=self.config.retry_s, now=utcnow())
        self.processed += 1
        return job

    def _crashed(self, job: Job, exc: BaseException) -> Attempt | LossgateError:
        """What a job that raised ``exc`` (not a lossgate error: a bug outside the consolidation
        proper, which records its own) comes to: an ``error`` attempt with its retry or review
        queued, or, if even that cannot be written, the error to release the job with."""
        try:
            return self.consolidator.crashed(job.tenant_id, job.subject_id, exc)
        except LossgateError as failed:
            return failed
        except Exception as failed:  # noqa: BLE001 - the job goes to review; the worker goes on
            log.error("job %s: could not record its failure: %s", job.job_id, crash_reason(failed))
            return LossgateError(crash_reason(exc))

    def _demote(self, job: Job) -> None:
        """Move the subject's dormant events between tiers now that its consolidation ran
        (:mod:`lossgate.ledger.tiers`): warm under a summary that passed the gate, or kept hot with
        the failure recorded. A failure here costs only the move, retried with the next job."""
        try:
            for d in self.memory.admin.demote(job.tenant_id, job.subject_id):
                if d.warm or d.cold or d.retention_logged:
                    log.info(
                        "job %s: %d events to warm, %d to cold, %d kept hot",
                        job.job_id,
                        len(d.warm),
                        len(d.cold),
                        len(d.held),
                    )
        except Exception as exc:  # noqa: BLE001 - best effort, as the docstring says
            log.warning(
                "job %s: demotion failed, will retry with the next job: %s",
                job.job_id,
                exc if isinstance(exc, LossgateError) else crash_reason(exc),
            )

    def _expire(self, job: Job) -> None:
        """Delete the subject's events past their time to live under the tenant's retention
        policy (:mod:`lossgate.ledger.retention`). A failure costs only the delay: the next job tries again."""
        try:
            for x in self.memory.admin.expire(job.tenant_id, job.subject_id):
                if x.expired or x.kept_for_critical_facts:
                    log.info(
                        "job %s: %d events expired, %d kept for an active critical fact",
                        job.job_id,
                        len(x.expired),
                        len(x.kept_for_critical_facts),
                    )
        except StoreError:
            raise  # the job goes back for a later try, as for any outage
        except Exception as exc:  # noqa: BLE001 - best effort, as the docstring says
            log.warning(
                "job %s: expiry failed, will retry with the next job: %s",
                job.job_id,
                exc if isinstance(exc, LossgateError) else crash_reason(exc),
            )

    def _embed(self, job: Job) -> None:
        """Vectors for what the subject gained (hybrid search), under the job's lease. A
        failure costs only semantic ranking until the next job: recall stays lexical."""
        if self.memory.embedder is None:
            return
        try:
            report = self.memory.admin.embed(job.tenant_id, job.subject_id)
            log.info(
                "job %s: %d vectors stored, %d items refused by the embedder",
                job.job_id,
                report.stored,
                len(report.skipped),
            )
        except Exception as exc:  # noqa: BLE001 - best effort, as the docstring says
            log.warning(
                "job %s: embedding failed, will retry with the next job: %s",
                job.job_id,
                exc if isinstance(exc, LossgateError) else crash_reason(exc),
            )

    def _heartbeat(self, job: Job, stop: threading.Event) -> None:
        while not stop.wait(self.config.heartbeat_s):
            try:
                with self.memory.store.write() as tx:
                    alive = tx.heartbeat_job(
                        job.job_id, owner=self.owner, lease_expires_at=utcnow() + timedelta(seconds=self.config.lease_s)
                    )
                if not alive:
                    log.warning("job %s: lease lost; the alias CAS keeps the result safe", job.job_id)
                    return
            except Exception as exc:  # noqa: BLE001 - a missed beat costs at most the lease
                log.warning(
                    "job %s: heartbeat failed: %s",
                    job.job_id,
                    exc if isinstance(exc, LossgateError) else crash_reason(exc),
                )

    def run(self, *, max_jobs: int | None = None, exit_when_idle: bool = False) -> int:
        """Process jobs until stopped (SIGTERM/SIGINT finish the current job first). Returns jobs done.

        A job never stops the loop (it ends as a recorded attempt: :meth:`run_once`), nor does
        an outage: a claim or release that fails is tried again after ``retry_s``. With
        ``exit_when_idle`` such a failure is raised instead."""
        while not self.stopping.is_set():
            if max_jobs is not None and self.processed >= max_jobs:
                break
            try:
                job = self.run_once()
            except Exception as exc:
                if exit_when_idle:  # a drain (tests, one-shot runs) reports it instead
                    raise
                # A job claimed and not released goes back to the queue when its lease runs out.
                log.warning(
                    "worker %s: %s; trying again in %gs",
                    self.owner,
                    exc if isinstance(exc, LossgateError) else crash_reason(exc),
                    self.config.retry_s,
                )
                self.stopping.wait(self.config.retry_s)
                continue
            if job is None:
                if exit_when_idle:
                    break
                self.stopping.wait(self.config.poll_s)
        return self.processed

    def install_signal_handlers(self) -> None:
        def stop(signum: int, frame: object) -> None:
            log.info("worker %s: signal %s, stopping after the current job", self.owner, signum)
            self.stopping.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self._stops_by_flag = True


def _child(
    url: str,
    config: WorkerConfig,
    consolidation: ConsolidationConfig | None,
    exit_when_idle: bool,
    max_jobs: int | None,
    compressor: str | None,
    log_level: int = logging.WARNING,
    log_format: str | None = None,
) -> None:
    if not logging.getLogger().handlers:  # a spawned process starts with none: log as the parent does
        logging.basicConfig(level=log_level, format=log_format or logging.BASIC_FORMAT)
    memory = open_worker_memory(
        url,
        migrate=False,
        embedder=embedder_from_env(os.environ),  # LOSSGATE_EMBEDDER
        compressors=lambda spec: load_compressor(spec, environ=os.environ),
    )  # rollouts
    worker = Worker(
        memory,
        config=config,
        consolidation=consolidation,
        compressor=load_compressor(compressor, environ=os.environ) if compressor else None,
        judge=ModelJudge.from_env(os.environ),
    )  # LOSSGATE_JUDGE_URL and LOSSGATE_JUDGE_MODEL
    worker.install_signal_handlers()
    try:
        worker.run(exit_when_idle=exit_when_idle, max_jobs=max_jobs)
    finally:
        memory.close()


def run_pool(
    url: str,
    concurrency: int,
    *,
    config: WorkerConfig | None = None,
    consolidation: ConsolidationConfig | None = None,
    exit_when_idle: bool = False,
    max_jobs: int | None = None,
    compressor: str | None = None,
) -> int:
    """Run ``concurrency`` worker processes until they exit or SIGTERM; returns the worst exit code.
    ``compressor`` is a :func:`~lossgate.consolidate.factory.load_compressor` spec, made in
    each process (a model client does not cross a process boundary)."""
    import multiprocessing as mp

    memory = open_worker_memory(url)  # migrate once, before the workers start
    try:
        memory.admin.registry  # noqa: B018 - a login that may not act as a worker fails here, once
    finally:
        memory.close()
    ctx = mp.get_context("spawn")
    root = logging.getLogger()
    fmt = root.handlers[0].formatter._fmt if root.handlers and root.handlers[0].formatter else None
    procs = [
        ctx.Process(
            target=_child,
            args=(
                url,
                config or WorkerConfig(),
                consolidation,
                exit_when_idle,
                max_jobs,
                compressor,
                root.getEffectiveLevel(),
                fmt,
            ),
            name=f"lossgate-worker-{i}",
        )
        for i in range(concurrency)
    ]
    for p in procs:
        p.start()

    def forward(signum: int, frame: object) -> None:
        for p in procs:
            if p.is_alive() and p.pid:
                os.kill(p.pid, signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for p in procs:
            while p.is_alive():
                p.join(timeout=0.5)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return max((p.exitcode or 0) for p in procs) if procs else 0


def drain(memory: Memory, *, consolidation: ConsolidationConfig | None = None) -> int:
    """Process every due job in this process (tests and single-host setups); ``memory`` is a
    worker's (:func:`open_worker_memory`). Returns jobs done."""
    worker = Worker(memory, consolidation=consolidation, config=WorkerConfig(poll_s=0.0))
    return worker.run(exit_when_idle=True)
