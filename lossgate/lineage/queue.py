"""The rebuild queue's policy: when a subject's summary is rebuilt, how a failure is
retried, when a person must look, and how a worker releases a job.

Every rebuild is queued by one of the functions below, each named for its trigger;
nothing else in lossgate calls the store's ``enqueue_job``:

* :func:`input_changed`: a supersession, deletion, revocation, trust change or new
  conflict moved the subject's ``input_epoch`` (the ledger, in the transaction that
  made the change; invariant 6). Due at once.
* :func:`tail_grew`: :data:`REBUILD_AFTER` or more inputs appended beyond the
  published summary's coverage (the ledger's append). Due at once.
* :func:`switch_refused`: the alias or an input moved under a gated artifact, so
  the switch published nothing; the rebuild starts from the current state, at once.
* :func:`after_failure`: the gate rejected an attempt, or it was an error. The
  retry is due after an exponential backoff (:func:`retry_delay`) on the failures in
  a row since the last publication (:func:`consecutive_failures`); at
  ``max_attempts`` in a row, nothing is queued: the attempt says ``needs_review``,
  the subject's log says why, and its sources stay hot (recall falls back to the
  raw layer, which stays whole).
* :func:`registry_upgraded`: a predicate registry upgrade made the gate stricter and the
  subject's published summary failed its re-gate (:mod:`lossgate.consolidate.regate`, in the
  transaction that loaded the registry). Due at once.
* :func:`requested`: an application asked (:meth:`lossgate.Memory.request_consolidation`).

And one answer: :func:`answered`. A publication that covers the subject's whole
history marks its pending jobs, and those waiting for review, done.

**Folding** (a rule of the store, stated with ``enqueue_job`` and ``finish_job`` in
:mod:`lossgate.store.protocol` and implemented by each engine's SQL): a subject has
at most one pending job. Queueing while one is pending changes nothing (that job
keeps its reason and due time) and returns False; a job released as pending again
(:func:`release` after an infrastructure error) folds into the one already pending,
and is itself marked done. A burst of triggers therefore costs one rebuild, and a
running job does not block the next one from being queued.

**Releasing a claimed job** (:func:`job_status`, :func:`release`): ``done`` after
any attempt, whatever its status (a rejection or an error queued its own retry above,
a refused switch its rebuild); ``review`` when the attempt needs review, or when the
subject cannot be consolidated as it is (any :class:`~lossgate.errors.LossgateError`
but a store error: no registry, nothing to consolidate); ``pending`` again, due after
the worker's ``retry_s``, after a :class:`~lossgate.errors.StoreError` (the
infrastructure failed, not the subject).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Literal

from lossgate.errors import LossgateError, StoreError
from lossgate.model.derived_records import Attempt, Job
from lossgate.store.protocol import WriteTx

__all__ = [
    "REBUILD_AFTER",
    "JobStatus",
    "input_changed",
    "tail_grew",
    "switch_refused",
    "after_failure",
    "requested",
    "registry_upgraded",
    "answered",
    "consecutive_failures",
    "retry_delay",
    "job_status",
    "release",
]

# Queue a rebuild once this many inputs sit beyond the published summary's coverage.
REBUILD_AFTER = 50

JobStatus = Literal["done", "review", "pending"]


def _queue(
    tx: WriteTx, tenant_id: str, subject_id: str, reason: str, *, now: datetime, run_after: datetime | None = None
) -> bool:
    return tx.enqueue_job(tenant_id, subject_id, reason=reason, run_after=run_after or now, at=now)


# -- triggers ------------------------------------------------------------------------------
def input_changed(tx: WriteTx, tenant_id: str, subject_id: str, cause: str, *, now: datetime) -> bool:
    """Queue a rebuild after an input changed (``cause``: ``"delete_event e-1"``, ...)."""
    return _queue(tx, tenant_id, subject_id, cause, now=now)


def tail_grew(
    tx: WriteTx, tenant_id: str, subject_id: str, *, high_water: int, now: datetime, threshold: int = REBUILD_AFTER
) -> bool:
    """Queue a rebuild if ``threshold`` or more inputs lie beyond the alias's coverage
    (reads the alias); False if none was queued."""
    if high_water - tx.alias(tenant_id, subject_id).covers_through < threshold:
        return False
    return _queue(tx, tenant_id, subject_id, f"{threshold}+ new inputs", now=now)


def switch_refused(tx: WriteTx, tenant_id: str, subject_id: str, why: str, *, now: datetime) -> bool:
    """Queue a rebuild from the current state after the switch refused an artifact."""
    return _queue(tx, tenant_id, subject_id, f"switch refused: {why}", now=now)


def registry_upgraded(tx: WriteTx, tenant_id: str, subject_id: str, version: int, *, now: datetime) -> bool:
    """Queue a rebuild after the published summary failed its re-gate under registry ``version``."""
    return _queue(tx, tenant_id, subject_id, f"re-gate failed under registry v{version}", now=now)


def requested(tx: WriteTx, tenant_id: str, subject_id: str, reason: str, *, now: datetime) -> bool:
    """Queue a rebuild an application asked for; False if one is already pending."""
    return _queue(tx, tenant_id, subject_id, reason, now=now)


def after_failure(
    tx: WriteTx, attempt: Attempt, *, max_attempts: int, backoff_base_s: float, backoff_max_s: float, now: datetime
) -> Attempt:
    """Queue the retry of a failed (rejected or error) attempt, already saved, with backoff;
    or, at ``max_attempts`` failures in a row, queue nothing and save and return the attempt
    marked ``needs_review``."""
    t, s = attempt.tenant_id, attempt.subject_id
    failures, _ = consecutive_failures(tx.attempt_tail(t, s)[1])  # this one included: it is saved
    if failures >= max_attempts:
        attempt = attempt.model_copy(update={"needs_review": True})
        tx.save_attempt(attempt)
        tx.add_log(
            t,
            s,
            at=now,
            op="review",
            target_id=attempt.attempt_id,
            detail={"failures": failures, "reason": "consolidation failed repeatedly; sources stay hot"},
        )
        return attempt
    delay = retry_delay(failures, base_s=backoff_base_s, max_s=backoff_max_s)
    _queue(tx, t, s, f"retry after {attempt.status}", now=now, run_after=now + timedelta(seconds=delay))
    return attempt


def answered(
    tx: WriteTx,
    tenant_id: str,
    subject_id: str,
    *,
    high_water: int,
    covers_through: int,
    artifact_id: str,
    now: datetime,
) -> int:
    """After ``artifact_id`` was published: if it covers everything up to ``high_water``,
    the subject's queued rebuilds are answered (marked done); returns how many."""
    if high_water > covers_through:
        return 0  # something newer than the artifact exists: its rebuild stays queued
    return tx.cancel_pending_jobs(tenant_id, subject_id, at=now, reason=f"covered by {artifact_id}")


# -- retries -------------------------------------------------------------------------------
def consecutive_failures(attempts: Iterable[Attempt]) -> tuple[int, tuple[str, ...]]:
    """Of a subject's attempts (oldest first): how many in a row failed (rejected or error)
    since the last publication, and what the gate refused the latest rejected one for."""
    failures, refused_for = 0, None
    for a in reversed(list(attempts)):
        if a.lane == "shadow":  # a shadow configuration's attempts are its own
            continue
        if a.status == "published":
            break
        if a.status in ("rejected", "error"):
            failures += 1
            if refused_for is None and a.status == "rejected":
                refused_for = a.violations
    return failures, refused_for or ()


def retry_delay(failures: int, *, base_s: float, max_s: float) -> float:
    """Seconds before retrying after ``failures`` in a row: ``base_s``, doubled per further
    failure, at most ``max_s``."""
    return min(max_s, base_s * 2.0 ** max(0, failures - 1))


# -- workers -------------------------------------------------------------------------------
def job_status(outcome: Attempt | LossgateError) -> JobStatus:
    """The status a claimed job is released with, given what processing it came to: the
    attempt it made, or the error that stopped it (see the module docstring)."""
    if isinstance(outcome, StoreError):
        return "pending"
    if isinstance(outcome, LossgateError):
        return "review"
    return "review" if outcome.needs_review else "done"


def release(
    tx: WriteTx, job: Job, outcome: Attempt | LossgateError, *, owner: str, retry_s: float, now: datetime
) -> bool:
    """Release ``owner``'s claim on ``job`` with :func:`job_status` (a ``pending`` job is due
    ``retry_s`` from ``now``). False if ``owner`` no longer held the lease."""
    status = job_status(outcome)
    run_after = now + timedelta(seconds=retry_s) if status == "pending" else None
    return tx.finish_job(
        job.tenant_id, job.subject_id, job.job_id, owner=owner, status=status, at=now, run_after=run_after
    )
