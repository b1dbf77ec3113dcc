"""The blocking client: :class:`Client`."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx

import lossgate
from lossgate.client import calls
from lossgate.client.calls import MAX_BODY_BYTES, Call, JobStatus, check_size
from lossgate.client.errors import error_of
from lossgate.client.retry import Retry
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

__all__ = ["Client", "headers_for"]

T = TypeVar("T")


def headers_for(api_key: str | None) -> dict[str, str]:
    """The headers every request of a client sends: its key as the service expects it
    (``Authorization: Bearer <key>``), and who is asking."""
    headers = {"User-Agent": f"lossgate-client/{lossgate.__version__}"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


class Client:
    """The memory service over HTTP, one method per route, typed with the service's models.

    ::

        with Client("http://127.0.0.1:8080", api_key="lg_...") as memory:
            memory.append("user-17", [EventIn(event_id="event-41", text="I am allergic to peanuts.")])
            print(memory.recall("user-17", "Can I order the satay?", budget=2000).rendered)

    The tenant is the key's. An error answer raises lossgate's exception for its code
    (:mod:`lossgate.client.errors`: ``not_found`` is :class:`~lossgate.errors.NotFound`, a 401
    :class:`~lossgate.errors.Unauthorized`, ...); a 503 is retried by ``retry``
    (:class:`~lossgate.client.retry.Retry`), an append with the same ``Idempotency-Key`` each
    time. A body over ``max_body_bytes`` (the service's default limit; ``None``: no check) is
    refused before it is sent. A transport error (no connection, a timeout after ``timeout``
    seconds) is httpx's.
    """

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
        self._http = httpx.Client(base_url=url, headers=headers_for(api_key), timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        check_size(call, self.max_body_bytes)
        attempt = 1
        while True:
            response = self._http.request(
                call.method, call.path, params=call.params, content=call.body, headers=call.headers
            )
            wait = self.retry.wait(attempt, response)
            if wait is None:
                break
            time.sleep(wait)
            attempt += 1
        if not response.is_success:
            raise error_of(response)
        return call.read(response)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """A request written by hand (``path`` as sent), with this client's key, retries and
        errors; the answer as it came."""
        return self._run(calls.by_path(method, path, params=params, json=json, content=content, headers=headers))

    # -- the ledger ------------------------------------------------------------------------------
    def append(
        self,
        subject_id: str,
        events: Sequence[EventIn] = (),
        facts: Sequence[FactIn] = (),
        *,
        idempotency_key: str | None = None,
    ) -> AppendOut:
        """``POST .../append``: events and facts in one transaction. ``idempotency_key``
        (default: a fresh one) is sent with every try, so a retry never appends twice."""
        return self._run(calls.append(subject_id, events, facts, idempotency_key=idempotency_key))

    def events(
        self, subject_id: str, *, state: EventState | None = None, after_seq: int = 0, limit: int = 100
    ) -> list[EventOut]:
        """``GET .../events``: a page of events in seq order."""
        return self._run(calls.events(subject_id, state=state, after_seq=after_seq, limit=limit))

    def delete_event(self, subject_id: str, event_id: str, *, reason: str = "") -> EventOut:
        """``DELETE .../events/{id}``: erase an event (text and payload purged)."""
        return self._run(calls.delete_event(subject_id, event_id, reason=reason))

    def revoke_event(self, subject_id: str, event_id: str, *, reason: str = "") -> EventOut:
        """``POST .../events/{id}/revoke``: take an event out of the authorized view."""
        return self._run(calls.revoke_event(subject_id, event_id, reason=reason))

    def facts(
        self, subject_id: str, *, status: Literal["active", "all"] = "active", predicate: str | None = None
    ) -> list[FactOut]:
        """``GET .../facts``: the active facts, or all."""
        return self._run(calls.facts(subject_id, status=status, predicate=predicate))

    def supersede(self, subject_id: str, fact_id: str, fact: FactIn) -> FactOut:
        """``POST .../facts/{id}/supersede``: replace an active fact."""
        return self._run(calls.supersede(subject_id, fact_id, fact))

    def delete_fact(self, subject_id: str, fact_id: str, *, reason: str = "") -> FactOut:
        """``DELETE .../facts/{id}``: erase a fact."""
        return self._run(calls.delete_fact(subject_id, fact_id, reason=reason))

    def conflicts(self, subject_id: str, *, resolved: bool = False) -> list[ConflictOut]:
        """``GET .../conflicts``: the unresolved conflicts (``resolved``: all)."""
        return self._run(calls.conflicts(subject_id, resolved=resolved))

    # -- consolidation -------------------------------------------------------------------------
    def extract(self, subject_id: str) -> ExtractOut:
        """``POST .../extract``: proposals of the default extractor, with their outcome."""
        return self._run(calls.extract(subject_id))

    def consolidate(self, subject_id: str) -> ConsolidateOut:
        """``POST .../consolidate``: queue a rebuild; the job (workers run it)."""
        return self._run(calls.consolidate(subject_id))

    def jobs(self, subject_id: str) -> list[JobOut]:
        """``GET .../jobs``: the subject's rebuild jobs."""
        return self._run(calls.jobs(subject_id))

    def job(self, subject_id: str, job_id: int) -> JobOut:
        """``GET .../jobs/{id}``: one job."""
        return self._run(calls.job(subject_id, job_id))

    def attempts(self, subject_id: str) -> list[AttemptOut]:
        """``GET .../attempts``: every consolidation attempt, with its gate outcome."""
        return self._run(calls.attempts(subject_id))

    def artifacts(self, subject_id: str, *, state: ArtifactState | None = None) -> list[ArtifactOut]:
        """``GET .../artifacts``: the subject's artifacts (in ``state``)."""
        return self._run(calls.artifacts(subject_id, state=state))

    def lineage(self, subject_id: str, artifact_id: str) -> LineageOut:
        """``GET .../artifacts/{id}/lineage``: what an artifact was derived from."""
        return self._run(calls.lineage(subject_id, artifact_id))

    # -- recall, the guard, responses ----------------------------------------------------------
    def recall(
        self, subject_id: str, query: str | None = None, *, k: int = 20, budget: int | None = None, context: bool = True
    ) -> RecallOut:
        """``POST .../recall``: what an agent should read now; ``rendered`` is the prompt block."""
        return self._run(calls.recall(subject_id, query, k=k, budget=budget, context=context))

    def clock(self, subject_id: str) -> SubjectClockOut:
        """``GET .../clock``: the subject's clock and alias."""
        return self._run(calls.clock(subject_id))

    def recalls(self, subject_id: str, *, limit: int = 100) -> list[RecallRecordOut]:
        """``GET .../recalls``: the recall records, newest first."""
        return self._run(calls.recalls(subject_id, limit=limit))

    def guard(self, subject_id: str, action: Mapping[str, Any], *, recall_id: str | None = None) -> GuardResult:
        """``POST .../guard``: check a planned action against the ledger (a refusal is an answer)."""
        return self._run(calls.guard(subject_id, action, recall_id=recall_id))

    def respond(
        self,
        subject_id: str,
        recall_id: str,
        *,
        answer: str | None = None,
        action: Mapping[str, Any] | None = None,
        guard_id: str | None = None,
    ) -> ResponseOut:
        """``POST .../responses``: record what the agent answered or did after a recall."""
        return self._run(calls.respond(subject_id, recall_id, answer=answer, action=action, guard_id=guard_id))

    def responses(self, subject_id: str, *, limit: int = 100) -> list[ResponseOut]:
        """``GET .../responses``: the response records, newest first."""
        return self._run(calls.responses(subject_id, limit=limit))

    def verify_recall(self, subject_id: str, recall_id: str) -> RecallVerificationOut:
        """``GET .../recalls/{id}/verify``: whether what a recall returned still holds."""
        return self._run(calls.verify_recall(subject_id, recall_id))

    # -- the system and the tenant -------------------------------------------------------------
    def health(self) -> HealthOut:
        """``GET /healthz``: ``ok`` when the database answers (no key needed)."""
        return self._run(calls.health())

    def metrics(self) -> str:
        """``GET /metrics``: the serving process's metrics, Prometheus text (no key needed)."""
        return self._run(calls.metrics())

    def key(self) -> KeyOut:
        """``GET /v1/key``: this client's key: its tenant, id and scopes."""
        return self._run(calls.key())

    def subjects(self) -> SubjectsOut:
        """``GET /v1/subjects``: the tenant's subjects (scope ``admin``)."""
        return self._run(calls.subjects())

    def tenant_jobs(self, *, status: JobStatus | None = None) -> list[JobOut]:
        """``GET /v1/jobs``: the tenant's rebuild jobs (scope ``admin``)."""
        return self._run(calls.tenant_jobs(status=status))
