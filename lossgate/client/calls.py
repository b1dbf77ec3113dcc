"""Every route of the service as a call: its method and path, what it sends, how its answer is
read. The one place each operation is written; :class:`~lossgate.client.Client` and
:class:`~lossgate.client.AsyncClient` only send the calls.

:data:`ROUTES` names each route by the name of the service's route function (``append``,
``verify_recall``), which is also the builder's here and the method's on both clients, with
the same parameters (``tests/client`` holds the three, and the service's routes, to that).

A request body is one of the service's request models (:mod:`lossgate.service.models`),
built here from what a method is given, so a body its model refuses is an
:class:`~lossgate.errors.InvalidInput` before anything is sent; an answer is read into the
service's response models.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx
import pydantic_core
from pydantic import BaseModel, TypeAdapter, ValidationError

from lossgate import errors as lg
from lossgate.client.errors import refused
from lossgate.model.derived_records import ArtifactState, GuardResult
from lossgate.model.records import EventState
from lossgate.service.models import (
    AppendIn,
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
    GuardIn,
    HealthOut,
    JobOut,
    KeyOut,
    LineageOut,
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

__all__ = ["Call", "Route", "ROUTES", "JobStatus", "MAX_BODY_BYTES", "check_size", "new_idempotency_key", "by_path"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
JobStatus = Literal["pending", "running", "done", "review"]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request, ready to send (as often as a retry needs: it is the same each time), and
    how to read its answer."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Mapping[str, str | int | bool] = field(default_factory=dict)
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Route(Generic[T]):
    """A route of the service: ``path`` is its template, as the service declares it."""

    name: str
    method: str
    path: str
    read: Callable[[httpx.Response], T]

    def call(
        self,
        path: Mapping[str, str | int] | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        body: BaseModel | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Call[T]:
        """This route's call: ``path`` fills the template (each value quoted whole, so a ``/``
        in an id stays in its segment, where the service refuses it), ``params`` without its
        ``None`` values is the query, ``body`` is sent as JSON."""
        filled = self.path.format(**{k: quote(str(v), safe="") for k, v in (path or {}).items()})
        query = {k: v for k, v in (params or {}).items() if v is not None}
        sent = dict(headers or {})
        if body is not None:
            sent["Content-Type"] = "application/json"
        return Call(self.method, filled, self.read, query, None if body is None else _json(body), sent)


ROUTES: dict[str, Route[Any]] = {}


def _route(name: str, method: str, path: str, answer: TypeAdapter[T]) -> Route[T]:
    def read(response: httpx.Response) -> T:
        try:
            return answer.validate_json(response.content)
        except ValidationError as exc:
            raise refused(
                lg.LossgateError,
                f"{method} {response.request.url.path}: the service's answer does not "
                f"read as {name}'s model: {exc.errors()[0]['msg']}",
                code=None,
            ) from exc

    ROUTES[name] = route = Route(name, method, path, read)
    return route


def _text(response: httpx.Response) -> str:
    return response.text


def _json(body: BaseModel) -> bytes:
    # pydantic writes a NaN or an infinity as null; the service refuses them, so does this.
    problem = _not_finite(body.model_dump(mode="python"), "body")
    if problem is not None:
        raise refused(
            lg.InvalidInput,
            f"{problem}: NaN and infinity are not JSON numbers",
            code="validation_error",
            details=({"loc": problem, "message": "not a finite number", "type": "finite_number"},),
        )
    return body.model_dump_json().encode()


def _not_finite(value: Any, where: str) -> str | None:
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _not_finite(item, f"{where}.{key}")
        if found is not None:
            return found
    return None


def _model(kind: type[M], **fields: Any) -> M:
    """``kind`` built from ``fields``; what it refuses is an :class:`~lossgate.errors.InvalidInput`
    (code ``validation_error``, each field in ``details``), as the service would answer."""
    try:
        return kind(**fields)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        details = tuple(
            {"loc": ".".join(["body", *(str(p) for p in e["loc"])]), "message": e["msg"], "type": e["type"]}
            for e in errors
        )
        more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
        raise refused(
            lg.InvalidInput,
            f"{details[0]['loc']}: {details[0]['message']}{more}",
            code="validation_error",
            details=details,
        ) from None


def new_idempotency_key() -> str:
    """A fresh ``Idempotency-Key`` for an append (sent with each of its tries)."""
    return f"lossgate-client-{uuid.uuid4().hex}"


_SUBJECT = "/v1/subjects/{subject_id}"

# -- the ledger ----------------------------------------------------------------------------------
_APPEND = _route("append", "POST", f"{_SUBJECT}/append", TypeAdapter(AppendOut))
_EVENTS = _route("events", "GET", f"{_SUBJECT}/events", TypeAdapter(list[EventOut]))
_DELETE_EVENT = _route("delete_event", "DELETE", f"{_SUBJECT}/events/{{event_id}}", TypeAdapter(EventOut))
_REVOKE_EVENT = _route("revoke_event", "POST", f"{_SUBJECT}/events/{{event_id}}/revoke", TypeAdapter(EventOut))
_FACTS = _route("facts", "GET", f"{_SUBJECT}/facts", TypeAdapter(list[FactOut]))
_SUPERSEDE = _route("supersede", "POST", f"{_SUBJECT}/facts/{{fact_id}}/supersede", TypeAdapter(FactOut))
_DELETE_FACT = _route("delete_fact", "DELETE", f"{_SUBJECT}/facts/{{fact_id}}", TypeAdapter(FactOut))
_CONFLICTS = _route("conflicts", "GET", f"{_SUBJECT}/conflicts", TypeAdapter(list[ConflictOut]))
# -- consolidation ---------------------------------------------------------------------------------
_EXTRACT = _route("extract", "POST", f"{_SUBJECT}/extract", TypeAdapter(ExtractOut))
_CONSOLIDATE = _route("consolidate", "POST", f"{_SUBJECT}/consolidate", TypeAdapter(ConsolidateOut))
_JOBS = _route("jobs", "GET", f"{_SUBJECT}/jobs", TypeAdapter(list[JobOut]))
_JOB = _route("job", "GET", f"{_SUBJECT}/jobs/{{job_id}}", TypeAdapter(JobOut))
_ATTEMPTS = _route("attempts", "GET", f"{_SUBJECT}/attempts", TypeAdapter(list[AttemptOut]))
_ARTIFACTS = _route("artifacts", "GET", f"{_SUBJECT}/artifacts", TypeAdapter(list[ArtifactOut]))
_LINEAGE = _route("lineage", "GET", f"{_SUBJECT}/artifacts/{{artifact_id}}/lineage", TypeAdapter(LineageOut))
# -- recall, the guard, responses ------------------------------------------------------------------
_RECALL = _route("recall", "POST", f"{_SUBJECT}/recall", TypeAdapter(RecallOut))
_CLOCK = _route("clock", "GET", f"{_SUBJECT}/clock", TypeAdapter(SubjectClockOut))
_RECALLS = _route("recalls", "GET", f"{_SUBJECT}/recalls", TypeAdapter(list[RecallRecordOut]))
_GUARD = _route("guard", "POST", f"{_SUBJECT}/guard", TypeAdapter(GuardResult))
_RESPOND = _route("respond", "POST", f"{_SUBJECT}/responses", TypeAdapter(ResponseOut))
_RESPONSES = _route("responses", "GET", f"{_SUBJECT}/responses", TypeAdapter(list[ResponseOut]))
_VERIFY_RECALL = _route(
    "verify_recall", "GET", f"{_SUBJECT}/recalls/{{recall_id}}/verify", TypeAdapter(RecallVerificationOut)
)
# -- the system and the tenant ---------------------------------------------------------------------
_HEALTH = _route("health", "GET", "/healthz", TypeAdapter(HealthOut))
_METRICS = Route("metrics", "GET", "/metrics", _text)
ROUTES["metrics"] = _METRICS
_KEY = _route("key", "GET", "/v1/key", TypeAdapter(KeyOut))
_SUBJECTS = _route("subjects", "GET", "/v1/subjects", TypeAdapter(SubjectsOut))
_TENANT_JOBS = _route("tenant_jobs", "GET", "/v1/jobs", TypeAdapter(list[JobOut]))


#: The service's body limit unless it is served with another (``lossgate serve --max-body-bytes``).
MAX_BODY_BYTES = 1_048_576


def check_size(call: Call[Any], max_body_bytes: int | None) -> None:
    """Refuse a body over ``max_body_bytes`` before it is sent (``None``: send any). The service
    would refuse it too, but it answers before it has read the body and closes the connection,
    and a client still sending may see the connection reset instead of the answer."""
    if max_body_bytes is not None and call.body is not None and len(call.body) > max_body_bytes:
        raise refused(
            lg.InvalidInput,
            f"the request body is {len(call.body):,} bytes, over the service's limit of "
            f"{max_body_bytes:,} (a client of a service with another limit is given it: "
            "max_body_bytes)",
            code="body_too_large",
        )


def by_path(
    method: str,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    content: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Call[httpx.Response]:
    """A request written by hand (``path`` as sent, ``json`` or ``content`` its body), answered
    with the response itself; errors and retries as for every call."""
    sent = dict(headers or {})
    if json is not None:
        content = pydantic_core.to_json(json)
        sent.setdefault("Content-Type", "application/json")
    return Call(
        method.upper(), path, _itself, {k: v for k, v in (params or {}).items() if v is not None}, content, sent
    )


def _itself(response: httpx.Response) -> httpx.Response:
    return response


# -- the calls, one per route (each client method sends one) --------------------------------------


def append(
    subject_id: str, events: Sequence[EventIn] = (), facts: Sequence[FactIn] = (), *, idempotency_key: str | None = None
) -> Call[AppendOut]:
    key = idempotency_key if idempotency_key is not None else new_idempotency_key()
    body = _model(AppendIn, events=list(events), facts=list(facts))
    return _APPEND.call({"subject_id": subject_id}, body=body, headers={"Idempotency-Key": key})


def events(
    subject_id: str, *, state: EventState | None = None, after_seq: int = 0, limit: int = 100
) -> Call[list[EventOut]]:
    return _EVENTS.call({"subject_id": subject_id}, params={"state": state, "after_seq": after_seq, "limit": limit})


def delete_event(subject_id: str, event_id: str, *, reason: str = "") -> Call[EventOut]:
    return _DELETE_EVENT.call({"subject_id": subject_id, "event_id": event_id}, params={"reason": reason})


def revoke_event(subject_id: str, event_id: str, *, reason: str = "") -> Call[EventOut]:
    return _REVOKE_EVENT.call({"subject_id": subject_id, "event_id": event_id}, params={"reason": reason})


def facts(
    subject_id: str, *, status: Literal["active", "all"] = "active", predicate: str | None = None
) -> Call[list[FactOut]]:
    return _FACTS.call({"subject_id": subject_id}, params={"status": status, "predicate": predicate})


def supersede(subject_id: str, fact_id: str, fact: FactIn) -> Call[FactOut]:
    return _SUPERSEDE.call({"subject_id": subject_id, "fact_id": fact_id}, body=_model(SupersedeIn, fact=fact))


def delete_fact(subject_id: str, fact_id: str, *, reason: str = "") -> Call[FactOut]:
    return _DELETE_FACT.call({"subject_id": subject_id, "fact_id": fact_id}, params={"reason": reason})


def conflicts(subject_id: str, *, resolved: bool = False) -> Call[list[ConflictOut]]:
    return _CONFLICTS.call({"subject_id": subject_id}, params={"resolved": resolved})


def extract(subject_id: str) -> Call[ExtractOut]:
    return _EXTRACT.call({"subject_id": subject_id})


def consolidate(subject_id: str) -> Call[ConsolidateOut]:
    return _CONSOLIDATE.call({"subject_id": subject_id})


def jobs(subject_id: str) -> Call[list[JobOut]]:
    return _JOBS.call({"subject_id": subject_id})


def job(subject_id: str, job_id: int) -> Call[JobOut]:
    return _JOB.call({"subject_id": subject_id, "job_id": job_id})


def attempts(subject_id: str) -> Call[list[AttemptOut]]:
    return _ATTEMPTS.call({"subject_id": subject_id})


def artifacts(subject_id: str, *, state: ArtifactState | None = None) -> Call[list[ArtifactOut]]:
    return _ARTIFACTS.call({"subject_id": subject_id}, params={"state": state})


def lineage(subject_id: str, artifact_id: str) -> Call[LineageOut]:
    return _LINEAGE.call({"subject_id": subject_id, "artifact_id": artifact_id})


def recall(
    subject_id: str, query: str | None = None, *, k: int = 20, budget: int | None = None, context: bool = True
) -> Call[RecallOut]:
    body = _model(RecallIn, query=query, k=k, budget=budget, context=context)
    return _RECALL.call({"subject_id": subject_id}, body=body)


def clock(subject_id: str) -> Call[SubjectClockOut]:
    return _CLOCK.call({"subject_id": subject_id})


def recalls(subject_id: str, *, limit: int = 100) -> Call[list[RecallRecordOut]]:
    return _RECALLS.call({"subject_id": subject_id}, params={"limit": limit})


def guard(subject_id: str, action: Mapping[str, Any], *, recall_id: str | None = None) -> Call[GuardResult]:
    return _GUARD.call({"subject_id": subject_id}, body=_model(GuardIn, action=dict(action), recall_id=recall_id))


def respond(
    subject_id: str,
    recall_id: str,
    *,
    answer: str | None = None,
    action: Mapping[str, Any] | None = None,
    guard_id: str | None = None,
) -> Call[ResponseOut]:
    body = _model(
        RespondIn,
        recall_id=recall_id,
        answer=answer,
        action=None if action is None else dict(action),
        guard_id=guard_id,
    )
    return _RESPOND.call({"subject_id": subject_id}, body=body)


def responses(subject_id: str, *, limit: int = 100) -> Call[list[ResponseOut]]:
    return _RESPONSES.call({"subject_id": subject_id}, params={"limit": limit})


def verify_recall(subject_id: str, recall_id: str) -> Call[RecallVerificationOut]:
    return _VERIFY_RECALL.call({"subject_id": subject_id, "recall_id": recall_id})


def health() -> Call[HealthOut]:
    return _HEALTH.call()


def metrics() -> Call[str]:
    return _METRICS.call()


def key() -> Call[KeyOut]:
    return _KEY.call()


def subjects() -> Call[SubjectsOut]:
    return _SUBJECTS.call()


def tenant_jobs(*, status: JobStatus | None = None) -> Call[list[JobOut]]:
    return _TENANT_JOBS.call(params={"status": status})
