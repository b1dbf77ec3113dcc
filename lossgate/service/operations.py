"""What the service does, for one tenant, without HTTP: the layer the routes (and the MCP
tools) call.

A :class:`TenantMemory` is a :class:`~lossgate.Memory` seen through one tenant (a
:class:`~lossgate.api.tenancy.TenantView`, as ``memory.tenant(t)`` is): it is built from an
authenticated API key (:meth:`TenantMemory.of_key`) and every call passes that key's tenant
to the memory. No method takes a tenant; a subject, an event id or a
fact id of another tenant is simply not found, exactly as one that does not exist.
Each write is one call of the Python API, so one transaction: an append of events and
facts commits whole or not at all.

**Idempotent appends.** :meth:`TenantMemory.append` with an ``idempotency_key`` stores
its answer in the same transaction as the append (:class:`lossgate.model.api_keys.IdempotencyRecord`);
a retry with the same key and the same request gets that answer again, flagged
``replayed``, and writes nothing; the same key with another request is
``idempotency_key_reused``. Two requests with one key racing: the second's record
collides with the first's when it commits, its whole transaction rolls back, and it
answers with the first's record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from lossgate.api.memory import Memory
from lossgate.api.tenancy import TenantView
from lossgate.errors import IdempotencyConflict, InvalidInput
from lossgate.ledger.lifecycle import Ledger
from lossgate.model.api_keys import ApiKey, IdempotencyRecord
from lossgate.model.derived_records import GuardResult
from lossgate.model.records import EventState, FactStatus, NewEvent, NewFact, utcnow
from lossgate.service.errors import ApiError
from lossgate.service.models import (
    AliasOut,
    AppendIn,
    AppendOut,
    ArtifactOut,
    AttemptOut,
    ClockOut,
    ConflictOut,
    ConsolidateOut,
    EventIn,
    EventOut,
    EventRef,
    ExtractOut,
    FactIn,
    FactOut,
    FactRef,
    GuardIn,
    JobOut,
    LineageOut,
    ProposalOut,
    RecallIn,
    RecallOut,
    RecallRecordOut,
    RecallVerificationOut,
    RespondIn,
    ResponseOut,
    SubjectClockOut,
    SubjectsOut,
    SupersedeIn,
)

__all__ = ["TenantMemory", "Answer", "request_hash"]

T = TypeVar("T")
FactSet = Literal["active", "all"]


@dataclass(frozen=True)
class Answer(Generic[T]):
    """An operation's result; ``replayed`` when it is the stored answer to an earlier
    request with the same idempotency key."""

    value: T
    replayed: bool = False


def request_hash(operation: str, subject_id: str, body: Any) -> str:
    """What identifies a request for idempotency: the operation, the subject and the body as
    parsed (so neither whitespace nor key order makes two requests differ)."""
    doc = {"operation": operation, "subject_id": subject_id, "body": body}
    return "sha256:" + hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


class TenantMemory(TenantView):
    """A :class:`~lossgate.Memory` seen through one tenant (see the module): the view of
    :mod:`lossgate.api.tenancy`, whose binding (and :meth:`~lossgate.api.tenancy.TenantView.add`,
    :meth:`~lossgate.api.tenancy.TenantView.search`) it shares, with the service's operations."""

    memory: Memory

    @classmethod
    def of_key(cls, memory: Memory, key: ApiKey) -> TenantMemory:
        """The memory of an authenticated key's tenant."""
        return cls(memory, key.tenant_id)

    # -- writes ------------------------------------------------------------------------------
    def append(self, subject_id: str, body: AppendIn, *, idempotency_key: str | None = None) -> Answer[AppendOut]:
        """Append events and facts to the subject in one transaction (see the module for
        ``idempotency_key``)."""
        if idempotency_key is None:
            with self.memory.transaction() as led:
                return Answer(self._append(led, subject_id, body))
        digest = request_hash("append", subject_id, body.model_dump(mode="json"))
        replay = self._replay(idempotency_key, digest)
        if replay is not None:
            return replay
        try:
            with self.memory.transaction() as led:
                out = self._append(led, subject_id, body)
                led.tx.save_idempotency_record(
                    IdempotencyRecord(
                        tenant_id=self.tenant_id,
                        idempotency_key=idempotency_key,
                        request_hash=digest,
                        status=200,
                        response=out.model_dump_json(),
                        created_at=utcnow(),
                    )
                )
        except IdempotencyConflict:
            replay = self._replay(idempotency_key, digest)  # a request with the same key committed first
            if replay is None:
                raise
            return replay
        return Answer(out)

    def _replay(self, idempotency_key: str, digest: str) -> Answer[AppendOut] | None:
        with self.memory.store.read() as tx:
            stored = tx.idempotency_record(self.tenant_id, idempotency_key)
        if stored is None:
            return None
        if stored.request_hash != digest:
            raise ApiError(
                "idempotency_key_reused",
                f"Idempotency-Key {idempotency_key!r} was used for another request; use a new key",
            )
        return Answer(AppendOut.model_validate_json(stored.response), replayed=True)

    def _append(self, led: Ledger, subject_id: str, body: AppendIn) -> AppendOut:
        t = self.tenant_id
        if body.facts:
            try:
                led.registry  # noqa: B018 - read now: a deployment without a registry says so
            except InvalidInput as exc:
                raise ApiError("not_configured", str(exc)) from None
        result = led.append([self._event(subject_id, e) for e in body.events])
        facts = led.assert_facts([self._fact(subject_id, f) for f in body.facts])
        clock = led.tx.clock(t, subject_id)
        return AppendOut(
            subject_id=subject_id,
            appended=[EventRef(event_id=r.event_id, seq=r.seq, content_hash=r.content_hash) for r in result.appended],
            duplicates=list(result.duplicates),
            facts=[FactRef(fact_id=f.fact_id, seq=f.seq, status=f.status, content_hash=f.content_hash) for f in facts],
            clock=ClockOut.of(clock),
        )

    def _event(self, subject_id: str, e: EventIn) -> NewEvent:
        optional: dict[str, Any] = {
            name: value
            for name, value in (("event_id", e.event_id), ("occurred_at", e.occurred_at))
            if value is not None
        }  # left out: the record's defaults (a fresh id, now)
        return NewEvent(
            tenant_id=self.tenant_id,
            subject_id=subject_id,
            kind=e.kind,
            actor=e.actor,
            trust=e.trust,
            text=e.text,
            payload=e.payload,
            **optional,
        )

    def _fact(self, subject_id: str, f: FactIn) -> NewFact:
        return NewFact(
            tenant_id=self.tenant_id,
            subject_id=subject_id,
            fact_id=f.fact_id,
            predicate=f.predicate,
            value=f.value,
            qualifiers=tuple(f.qualifiers.items()),
            polarity=f.polarity,
            modality=f.modality,
            authority=f.authority,
            source_event_ids=tuple(f.source_event_ids),
            valid_from=f.valid_from,
        )

    def supersede(self, subject_id: str, fact_id: str, body: SupersedeIn) -> FactOut:
        """Replace an active fact; the old one is kept as superseded, summaries built on it
        go stale in the same transaction."""
        return FactOut.of(self.memory.supersede(self.tenant_id, subject_id, fact_id, self._fact(subject_id, body.fact)))

    def delete_fact(self, subject_id: str, fact_id: str, *, reason: str = "") -> FactOut:
        """Erase a fact (value purged, tombstone kept)."""
        return FactOut.of(self.memory.delete_fact(self.tenant_id, subject_id, fact_id, reason=reason))

    def delete_event(self, subject_id: str, event_id: str, *, reason: str = "") -> EventOut:
        """Erase an event (text and payload purged, tombstone kept)."""
        return EventOut.of(self.memory.delete_event(self.tenant_id, subject_id, event_id, reason=reason))

    def revoke_event(self, subject_id: str, event_id: str, *, reason: str = "") -> EventOut:
        """Take an event out of the authorized view (kept for audit)."""
        return EventOut.of(self.memory.revoke_event(self.tenant_id, subject_id, event_id, reason=reason))

    def extract(self, subject_id: str) -> ExtractOut:
        """Propose facts from the events not read before, with the default extractor."""
        if self.memory.admin.registry is None and self.memory.registries.default is None:
            raise ApiError("not_configured", "no predicate registry is loaded (lossgate init --predicates FILE)")
        proposals = self.memory.extract(self.tenant_id, subject_id)
        return ExtractOut(subject_id=subject_id, proposals=[ProposalOut.of(p) for p in proposals])

    def consolidate(self, subject_id: str) -> ConsolidateOut:
        """Queue a rebuild of the subject for the workers; the job to poll."""
        queued = self.memory.request_consolidation(self.tenant_id, subject_id, reason="requested")
        live = self.memory.admin.jobs(self.tenant_id, subject_id, statuses=["pending", "running"])
        job = (live or self.memory.admin.jobs(self.tenant_id, subject_id))[-1]  # a worker may have finished it already
        return ConsolidateOut(subject_id=subject_id, queued=queued, job=JobOut.of(job))

    # -- reads -------------------------------------------------------------------------------
    def recall(self, subject_id: str, body: RecallIn) -> RecallOut:
        """What an agent should read now, with the rendered prompt block."""
        return RecallOut.of(
            self.memory.recall(
                self.tenant_id, subject_id, query=body.query or None, k=body.k, budget=body.budget, context=body.context
            )
        )

    def guard(self, subject_id: str, body: GuardIn) -> GuardResult:
        """The guard's verdict on an agent's planned action (stored, tied to the recall given)."""
        return self.memory.guard(self.tenant_id, subject_id, body.action, recall_id=body.recall_id)

    def recalls(self, subject_id: str, *, limit: int = 100) -> list[RecallRecordOut]:
        """The subject's recall records, newest first."""
        return [RecallRecordOut.of(r) for r in self.memory.admin.recalls(self.tenant_id, subject_id, limit=limit)]

    def verify_recall(self, subject_id: str, recall_id: str) -> RecallVerificationOut:
        """Whether what a recall returned is still what memory says."""
        return RecallVerificationOut.of(self.memory.verify_recall(self.tenant_id, subject_id, recall_id))

    def respond(self, subject_id: str, body: RespondIn) -> ResponseOut:
        """Record what the agent answered or did after a recall (one transaction)."""
        return ResponseOut.of(
            self.memory.respond(
                self.tenant_id,
                subject_id,
                body.recall_id,
                answer=body.answer,
                action=body.action,
                guard_id=body.guard_id,
            )
        )

    def responses(self, subject_id: str, *, limit: int = 100) -> list[ResponseOut]:
        """The subject's response records, newest first."""
        return [ResponseOut.of(r) for r in self.memory.admin.responses(self.tenant_id, subject_id, limit=limit)]

    def clock(self, subject_id: str) -> SubjectClockOut:
        return SubjectClockOut(
            subject_id=subject_id,
            clock=ClockOut.of(self.memory.admin.clock(self.tenant_id, subject_id)),
            alias=AliasOut.of(self.memory.admin.alias(self.tenant_id, subject_id)),
        )

    def events(
        self, subject_id: str, *, states: Sequence[EventState] | None = None, after_seq: int = 0, limit: int = 100
    ) -> list[EventOut]:
        return [
            EventOut.of(e)
            for e in self.memory.events(self.tenant_id, subject_id, states=states, after_seq=after_seq, limit=limit)
        ]

    def facts(self, subject_id: str, *, which: FactSet = "active", predicate: str | None = None) -> list[FactOut]:
        statuses: Sequence[FactStatus] | None = ("active",) if which == "active" else None
        return [
            FactOut.of(f) for f in self.memory.facts(self.tenant_id, subject_id, statuses=statuses, predicate=predicate)
        ]

    def conflicts(self, subject_id: str, *, unresolved_only: bool = True) -> list[ConflictOut]:
        return [
            ConflictOut.of(c)
            for c in self.memory.conflicts(self.tenant_id, subject_id, unresolved_only=unresolved_only)
        ]

    def jobs(self, subject_id: str | None) -> list[JobOut]:
        """The subject's rebuild jobs, oldest first; ``None``: the tenant's (admin)."""
        return [JobOut.of(j) for j in self.memory.admin.jobs(self.tenant_id, subject_id)]

    def job(self, subject_id: str, job_id: int) -> JobOut:
        for j in self.memory.admin.jobs(self.tenant_id, subject_id):
            if j.job_id == job_id:
                return JobOut.of(j)
        raise ApiError("not_found", f"job {job_id} does not exist for subject {subject_id!r}")

    def attempts(self, subject_id: str) -> list[AttemptOut]:
        return [AttemptOut.of(a) for a in self.memory.admin.attempts(self.tenant_id, subject_id)]

    def artifacts(self, subject_id: str, *, states: Sequence[str] | None = None) -> list[ArtifactOut]:
        return [ArtifactOut.of(a) for a in self.memory.admin.artifacts(self.tenant_id, subject_id, states=states)]

    def lineage(self, subject_id: str, artifact_id: str) -> LineageOut:
        return LineageOut.of(self.memory.admin.lineage(self.tenant_id, subject_id, artifact_id))

    def subjects(self) -> SubjectsOut:
        return SubjectsOut(subjects=self.memory.admin.subjects(self.tenant_id))
