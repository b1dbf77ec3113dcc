"""Append events and facts; read events, facts and conflicts; supersede, delete, revoke."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response

from lossgate.model.limits import MAX_LABEL_CHARS
from lossgate.model.records import EventState
from lossgate.service.auth import reader, writer
from lossgate.service.bodies import JsonRoute
from lossgate.service.models import AppendIn, AppendOut, ConflictOut, EventOut, FactOut, SupersedeIn
from lossgate.service.operations import TenantMemory
from lossgate.service.routes import Item, Subject, errors

__all__ = ["router"]

router = APIRouter(prefix="/v1/subjects/{subject_id}", tags=["ledger"], route_class=JsonRoute)

Reader = Annotated[TenantMemory, Depends(reader)]
Writer = Annotated[TenantMemory, Depends(writer)]
Reason = Annotated[
    str, Query(max_length=MAX_LABEL_CHARS, pattern=r"^[^\x00]*$", description="Why (kept in the subject's log).")
]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        pattern=r"^[!-~]+$",
        description="A key of your choosing (visible ASCII, up to 200 characters): a retry with the same key and "
        "body gets the first answer and writes nothing; the same key with another body is refused "
        "(`idempotency_key_reused`).",
    ),
]


@router.post(
    "/append",
    response_model=AppendOut,
    responses=errors(404, 409),
    summary="Append events and facts, in one transaction",
)
def append(
    subject_id: Subject,
    body: AppendIn,
    memory: Writer,
    request: Request,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> AppendOut:
    """Append raw events and typed facts to the subject: all or nothing. An event id already
    stored with the same content is a no-op (listed in `duplicates`), with other content a
    409 (`id_conflict`); a fact must cite events stored before or in this request, and its
    value must have its predicate's type. With `Idempotency-Key`, a retry is answered from
    the first answer (header `Idempotent-Replayed: true`)."""
    answer = memory.append(subject_id, body, idempotency_key=idempotency_key)
    metrics = request.app.state.metrics
    if answer.replayed:
        response.headers["Idempotent-Replayed"] = "true"
        metrics.replays.inc()
    else:
        metrics.events_appended.inc(len(answer.value.appended))
        metrics.facts_asserted.inc(len(answer.value.facts))
    return answer.value


@router.get("/events", response_model=list[EventOut], responses=errors(), summary="The subject's events")
def events(
    subject_id: Subject,
    memory: Reader,
    state: Annotated[EventState | None, Query(description="Only events in this state.")] = None,
    after_seq: Annotated[int, Query(ge=0, le=2**63 - 1, description="Only events after this seq.")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[EventOut]:
    """Events in seq order, a page at a time (`after_seq`, `limit`). A deleted event keeps its
    id, seq and hash; its text and payload are `null`."""
    return memory.events(subject_id, states=None if state is None else [state], after_seq=after_seq, limit=limit)


@router.delete(
    "/events/{event_id}", response_model=EventOut, responses=errors(404, 409), summary="Delete an event (erasure)"
)
def delete_event(subject_id: Subject, event_id: Item, memory: Writer, reason: Reason = "") -> EventOut:
    """Purge the event's text and payload (id and hash stay); facts left without a source
    leave the active set; summaries built on it go stale, in one transaction."""
    return memory.delete_event(subject_id, event_id, reason=reason)


@router.post(
    "/events/{event_id}/revoke", response_model=EventOut, responses=errors(404, 409), summary="Revoke an event"
)
def revoke_event(subject_id: Subject, event_id: Item, memory: Writer, reason: Reason = "") -> EventOut:
    """Take the event out of the authorized view (kept for audit): no compressor reads it
    again; summaries built on it go stale."""
    return memory.revoke_event(subject_id, event_id, reason=reason)


@router.get("/facts", response_model=list[FactOut], responses=errors(), summary="The subject's facts")
def facts(
    subject_id: Subject,
    memory: Reader,
    status: Annotated[Literal["active", "all"], Query(description="Active facts, or every status.")] = "active",
    predicate: Annotated[str | None, Query(min_length=1, max_length=200, pattern=r"^[^\x00]+$")] = None,
) -> list[FactOut]:
    return memory.facts(subject_id, which=status, predicate=predicate)


@router.post(
    "/facts/{fact_id}/supersede", response_model=FactOut, responses=errors(404, 409), summary="Replace an active fact"
)
def supersede(subject_id: Subject, fact_id: Item, body: SupersedeIn, memory: Writer) -> FactOut:
    """Assert the new fact (same predicate) and mark the old one superseded; summaries built
    on it go stale, in one transaction."""
    return memory.supersede(subject_id, fact_id, body)


@router.delete(
    "/facts/{fact_id}", response_model=FactOut, responses=errors(404, 409), summary="Delete a fact (erasure)"
)
def delete_fact(subject_id: Subject, fact_id: Item, memory: Writer, reason: Reason = "") -> FactOut:
    """Purge the fact's value (id and hash stay) and the events it was drawn from."""
    return memory.delete_fact(subject_id, fact_id, reason=reason)


@router.get("/conflicts", response_model=list[ConflictOut], responses=errors(), summary="The subject's conflicts")
def conflicts(
    subject_id: Subject, memory: Reader, resolved: Annotated[bool, Query(description="Resolved conflicts too.")] = False
) -> list[ConflictOut]:
    return memory.conflicts(subject_id, unresolved_only=not resolved)
