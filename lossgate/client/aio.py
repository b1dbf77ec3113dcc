"""The asynchronous client: :class:`AsyncClient`, :class:`~lossgate.client.Client`'s methods awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx

from lossgate.client import calls
from lossgate.client.calls import MAX_BODY_BYTES, Call, JobStatus, check_size
from lossgate.client.errors import error_of
from lossgate.client.retry import Retry
from lossgate.client.sync import headers_for
from lossgate.model.derived_records import ArtifactState, GuardResult
from lossgate.model.records import EventState
from lossgate.service.models import (
    AppendOut,
    ArtifactOut,
    AttemptOut,
    ConflictOut,
    ConsolidateOut,
    EventIn,
    EventOut,
    ExtractOut,
    FactIn,
    FactOut,
    HealthOut,
    JobOut,
    KeyOut,
    LineageOut,
    RecallOut,
    RecallRecordOut,
    RecallVerificationOut,
    ResponseOut,
    SubjectClockOut,
    SubjectsOut,
)

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient:
    """:class:`~lossgate.client.Client` for asyncio: the same methods, with the same
    parameters, answers, errors and retries, each awaited (``async with AsyncClient(...) as
    memory: await memory.recall(...)``). The docstrings are :class:`~lossgate.client.Client`'s."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: Retry = Retry(),
        max_body_bytes: int | None = MAX_BODY_BYTES,
    ) -> None:
        self.retry = retry
        self.max_body_bytes = max_body_bytes
        self._http = httpx.AsyncClient(base_url=url, headers=headers_for(api_key), timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _run(self, call: Call[T]) -> T:
        check_size(call, self.max_body_bytes)
        attempt = 1
        while True:
            response = await self._http.request(
                call.method, call.path, params=call.params, content=call.body, headers=call.headers
            )
            wait = self.retry.wait(attempt, response)
            if wait is None:
                break
            await asyncio.sleep(wait)
            attempt += 1
        if not response.is_success:
            raise error_of(response)
        return call.read(response)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        return await self._run(calls.by_path(method, path, params=params, json=json, content=content, headers=headers))

    # -- the ledger ------------------------------------------------------------------------------
    async def append(
        self,
        subject_id: str,
        events: Sequence[EventIn] = (),
        facts: Sequence[FactIn] = (),
        *,
        idempotency_key: str | None = None,
    ) -> AppendOut:
        return await self._run(calls.append(subject_id, events, facts, idempotency_key=idempotency_key))

    async def events(
        self, subject_id: str, *, state: EventState | None = None, after_seq: int = 0, limit: int = 100
    ) -> list[EventOut]:
        return await self._run(calls.events(subject_id, state=state, after_seq=after_seq, limit=limit))

    async def delete_event(self, subject_id: str, event_id: str, *, reason: str = "") -> EventOut:
        return await self._run(calls.delete_event(subject_id, event_id, reason=reason))

    async def revoke_event(self, subject_id: str, event_id: str, *, reason: str = "") -> EventOut:
        return await self._run(calls.revoke_event(subject_id, event_id, reason=reason))

    async def facts(
        self, subject_id: str, *, status: Literal["active", "all"] = "active", predicate: str | None = None
    ) -> list[FactOut]:
        return await self._run(calls.facts(subject_id, status=status, predicate=predicate))

    async def supersede(self, subject_id: str, fact_id: str, fact: FactIn) -> FactOut:
        return await self._run(calls.supersede(subject_id, fact_id, fact))

    async def delete_fact(self, subject_id: str, fact_id: str, *, reason: str = "") -> FactOut:
        return await self._run(calls.delete_fact(subject_id, fact_id, reason=reason))

    async def conflicts(self, subject_id: str, *, resolved: bool = False) -> list[ConflictOut]:
        return await self._run(calls.conflicts(subject_id, resolved=resolved))

    # -- consolidation -------------------------------------------------------------------------
    async def extract(self, subject_id: str) -> ExtractOut:
        return await self._run(calls.extract(subject_id))

    async def consolidate(self, subject_id: str) -> ConsolidateOut:
        return await self._run(calls.consolidate(subject_id))

    async def jobs(self, subject_id: str) -> list[JobOut]:
        return await self._run(calls.jobs(subject_id))

    async def job(self, subject_id: str, job_id: int) -> JobOut:
        return await self._run(calls.job(subject_id, job_id))

    async def attempts(self, subject_id: str) -> list[AttemptOut]:
        return await self._run(calls.attempts(subject_id))

    async def artifacts(self, subject_id: str, *, state: ArtifactState | None = None) -> list[ArtifactOut]:
        return await self._run(calls.artifacts(subject_id, state=state))

    async def lineage(self, subject_id: str, artifact_id: str) -> LineageOut:
        return await self._run(calls.lineage(subject_id, artifact_id))

    # -- recall, the guard, responses ----------------------------------------------------------
    async def recall(
        self, subject_id: str, query: str | None = None, *, k: int = 20, budget: int | None = None, context: bool = True
    ) -> RecallOut:
        return await self._run(calls.recall(subject_id, query, k=k, budget=budget, context=context))

    async def clock(self, subject_id: str) -> SubjectClockOut:
        return await self._run(calls.clock(subject_id))

    async def recalls(self, subject_id: str, *, limit: int = 100) -> list[RecallRecordOut]:
        return await self._run(calls.recalls(subject_id, limit=limit))

    async def guard(self, subject_id: str, action: Mapping[str, Any], *, recall_id: str | None = None) -> GuardResult:
        return await self._run(calls.guard(subject_id, action, recall_id=recall_id))

    async def respond(
        self,
        subject_id: str,
        recall_id: str,
        *,
        answer: str | None = None,
        action: Mapping[str, Any] | None = None,
        guard_id: str | None = None,
    ) -> ResponseOut:
        return await self._run(calls.respond(subject_id, recall_id, answer=answer, action=action, guard_id=guard_id))

    async def responses(self, subject_id: str, *, limit: int = 100) -> list[ResponseOut]:
        return await self._run(calls.responses(subject_id, limit=limit))

    async def verify_recall(self, subject_id: str, recall_id: str) -> RecallVerificationOut:
        return await self._run(calls.verify_recall(subject_id, recall_id))

    # -- the system and the tenant -------------------------------------------------------------
    async def health(self) -> HealthOut:
        return await self._run(calls.health())

    async def metrics(self) -> str:
        return await self._run(calls.metrics())

    async def key(self) -> KeyOut:
        return await self._run(calls.key())

    async def subjects(self) -> SubjectsOut:
        return await self._run(calls.subjects())

    async def tenant_jobs(self, *, status: JobStatus | None = None) -> list[JobOut]:
        return await self._run(calls.tenant_jobs(status=status))
