"""The queue tier: rebuild jobs, their claims and leases."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from lossgate.model.derived_records import Job
from lossgate.store.protocol.scope import tenant_of, unscoped

__all__ = ["QueueReadTx", "QueueWriteTx"]


class QueueReadTx(Protocol):
    """Reads of the rebuild queue."""

    @tenant_of("tenant_id")
    def jobs(self, tenant_id: str, subject_id: str | None, *, statuses: Sequence[str] | None = None) -> list[Job]:
        """The subject's rebuild jobs, oldest first (creation order), optionally of some
        statuses. With ``subject_id=None`` an admin listing of the whole tenant (``review``
        jobs: the subjects a person must look at). Never waits for the subject's writers."""


class QueueWriteTx(QueueReadTx, Protocol):
    """The rebuild queue: at most one *pending* job per subject.

    **A retry folds into the job already pending.** :meth:`finish_job` with status
    ``pending`` (retry later) ends the job ``done`` instead when the subject already has a
    pending job (queued while this one ran): the pending one covers it, and the subject
    keeps one pending job. Claiming takes the oldest due job first (``run_after``, then
    creation order); a job whose lease expired is due again."""

    def enqueue_job(self, tenant_id: str, subject_id: str, *, reason: str, run_after: datetime, at: datetime) -> bool:
        """Queue a rebuild unless one is already pending for the subject (True if queued)."""

    @unscoped
    def claim_job(self, *, owner: str, lease_seconds: float, now: datetime) -> Job | None:
        """Claim the oldest due pending job, or one whose lease expired, for ``owner``.
        Admin-level: the only primitive that is not scoped to one subject."""

    @unscoped
    def heartbeat_job(self, job_id: int, *, owner: str, lease_expires_at: datetime) -> bool:
        """Extend ``owner``'s lease on a running job; False if the lease was lost."""

    def finish_job(
        self,
        tenant_id: str,
        subject_id: str,
        job_id: int,
        *,
        owner: str,
        status: str,
        at: datetime,
        run_after: datetime | None = None,
    ) -> bool:
        """Release a claimed job as done, review or pending again (retry at ``run_after``;
        folded into a job already pending, see the class). False if ``owner`` no longer
        holds the lease."""

    def cancel_pending_jobs(self, tenant_id: str, subject_id: str, *, at: datetime, reason: str) -> int:
        """Mark the subject's pending jobs, and those waiting for review, done (a publication
        already covers them); returns how many."""
