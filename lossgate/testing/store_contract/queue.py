"""The queue tier (:mod:`lossgate.store.protocol.queue`): one pending job per subject, leases,
and a retry that folds into the job already pending."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

from datetime import timedelta

from lossgate.store.protocol import Store
from lossgate.testing.store_contract.support import NOW, Contract, S, T, check_signatures

__all__ = ["QueueContract"]


class QueueContract(Contract):
    """The queue tier's tests (see the module); a subclass provides the ``store`` fixture,
    as for :class:`~lossgate.testing.store_contract.StoreContract`."""

    def test_the_queue_tier_is_implemented_with_its_exact_signatures(self, store: Store) -> None:
        assert check_signatures(store, ("queue",)) == []

    def test_a_retry_folds_into_the_job_already_pending(self, store: Store) -> None:
        later = NOW + timedelta(minutes=5)
        with store.write() as tx:
            tx.enqueue_job(T, S, reason="first", run_after=NOW, at=NOW)
        with store.write() as tx:
            job = tx.claim_job(owner="w1", lease_seconds=30, now=NOW)
            assert job is not None
            # queued while the first one runs: the subject has a running and a pending job
            assert tx.enqueue_job(T, S, reason="second", run_after=NOW, at=NOW) is True
            assert tx.finish_job(T, S, job.job_id, owner="w1", status="pending", at=NOW, run_after=later) is True
        with store.read() as tx:
            assert [(j.reason, j.status) for j in tx.jobs(T, S)] == [("first", "done"), ("second", "pending")]
            assert tx.jobs(T, S, statuses=["pending"])[0].run_after == NOW  # the pending job's time stands
        with store.write() as tx:  # with nothing pending, the retry is the job itself, later
            job = tx.claim_job(owner="w2", lease_seconds=30, now=NOW)
            assert job is not None and job.reason == "second"
            assert tx.finish_job(T, S, job.job_id, owner="w2", status="pending", at=NOW, run_after=later) is True
        with store.read() as tx:
            assert [(j.reason, j.status, j.tries, j.lease_owner) for j in tx.jobs(T, S)] == [
                ("first", "done", 1, None),
                ("second", "pending", 1, None),
            ]
            assert tx.jobs(T, S)[1].run_after == later
            assert [j.reason for j in tx.jobs(T, S, statuses=["pending"])] == ["second"]

    def test_an_expired_lease_is_claimed_again_and_the_first_owner_cannot_finish(self, store: Store) -> None:
        with store.write() as tx:
            tx.enqueue_job(T, S, reason="new events", run_after=NOW, at=NOW)
            tx.enqueue_job(T, "u2", reason="later", run_after=NOW + timedelta(hours=1), at=NOW)
        with store.write() as tx:
            first = tx.claim_job(owner="w1", lease_seconds=10, now=NOW)
            assert first is not None and first.subject_id == S
            assert tx.claim_job(owner="w2", lease_seconds=10, now=NOW + timedelta(seconds=5)) is None
        with store.write() as tx:
            again = tx.claim_job(owner="w2", lease_seconds=10, now=NOW + timedelta(seconds=11))
            assert again is not None and (again.job_id, again.lease_owner, again.tries) == (first.job_id, "w2", 2)
            assert tx.finish_job(T, S, first.job_id, owner="w1", status="done", at=NOW) is False
            assert tx.finish_job(T, S, first.job_id, owner="w2", status="review", at=NOW) is True
            assert tx.cancel_pending_jobs(T, S, at=NOW, reason="published") == 1  # review counts
        with store.read() as tx:
            assert [(j.status, j.reason) for j in tx.jobs(T, S)] == [("done", "new events (published)")]
            assert [j.subject_id for j in tx.jobs(T, None, statuses=["pending"])] == ["u2"]
