"""The evidence tier: what the response boundary leaves, per subject: recall records (what
a recall returned), guard results (what a guard check decided) and response records (what
the agent finally answered or did). A deletion finds and redacts those that touched what
it erased; a retention policy forgets them after their time to live."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from lossgate.model.derived_records import GuardResult, RecallRecord, ResponseRecord
from lossgate.store.protocol.scope import subject_of, tenant_of

__all__ = ["EvidenceReadTx", "EvidenceWriteTx"]


class EvidenceReadTx(Protocol):
    """Reads of recall records, guard results and response records."""

    def recalls(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[RecallRecord]:
        """The subject's most recent recall records, newest first (``at``, ties newest
        created first)."""

    def recalls_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[RecallRecord]:
        """The subject's recall records that still hold a query and touched any of ``ids``: a
        candidate id among them, or (in summary mode) the alias's artifact among them; oldest
        first (``at``, ties in creation order). Reads every recall record of the subject;
        deletions are rare, recalls are not."""

    def recall_record(self, tenant_id: str, subject_id: str, recall_id: str) -> RecallRecord | None:
        """One recall record of the subject by id, or ``None``."""

    def guard_result(self, tenant_id: str, subject_id: str, guard_id: str) -> GuardResult | None:
        """One guard result of the subject by id, or ``None``."""

    def guard_results(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[GuardResult]:
        """The subject's most recent guard results, newest first (``at``, ties newest created first)."""

    def responses(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[ResponseRecord]:
        """The subject's most recent response records, newest first (``at``, ties newest
        created first)."""

    def guard_results_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[GuardResult]:
        """The subject's guard results not redacted yet that touched any of ``ids``: a refusal
        naming one of them (its fact, its conflict or a source event), or a recall record
        they are tied to that touched one (as :meth:`recalls_touching` reads it, the query
        aside); oldest first (``at``, ties in creation order)."""

    def responses_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[ResponseRecord]:
        """The subject's response records not redacted yet whose recall record touched any of
        ``ids`` (as :meth:`recalls_touching` reads it, the query aside), or whose guard result
        is one of ``ids``; oldest first (``at``, ties in creation order)."""


class EvidenceWriteTx(EvidenceReadTx, Protocol):
    """Writes of the evidence: stored once, replaced only to redact, forgotten by retention."""

    @tenant_of("record")
    def insert_recall(self, record: RecallRecord) -> None:
        """Persist the evidence of one recall. Evidence, not memory: it never waits for the
        subject's writers."""

    @subject_of("record")
    def replace_recall(self, record: RecallRecord) -> None:
        """Overwrite a stored recall record (same tenant and recall id); used to redact it."""

    @subject_of("result")
    def record_guard(self, result: GuardResult) -> None:
        """Store one guard result. Written under the subject's lock, in the transaction that
        read the facts it was checked against: a deletion that redacts guard results never
        misses one. Its id taken in the tenant: :class:`~lossgate.errors.IdempotencyConflict`."""

    @subject_of("result")
    def replace_guard(self, result: GuardResult) -> None:
        """Overwrite a stored guard result (same tenant, subject and guard id); used to redact it."""

    @subject_of("response")
    def record_response(self, response: ResponseRecord) -> None:
        """Store one response record, under the subject's lock (as :meth:`record_guard`). Its id
        taken in the tenant: :class:`~lossgate.errors.IdempotencyConflict`."""

    @subject_of("response")
    def replace_response(self, response: ResponseRecord) -> None:
        """Overwrite a stored response record (same tenant, subject and response id); used to
        redact it."""

    def forget_records(self, tenant_id: str, subject_id: str, *, before: datetime) -> int:
        """Delete the subject's recall records, guard results and responses made before
        ``before`` (a retention policy's time to live for them); returns how many went."""
