"""The response boundary's evidence: what an agent answered or did after a recall, and
whether what a recall returned is still what memory says."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from lossgate.model.limits import Key
from lossgate.service.auth import reader, writer
from lossgate.service.bodies import JsonRoute
from lossgate.service.models import RecallVerificationOut, RespondIn, ResponseOut
from lossgate.service.operations import TenantMemory
from lossgate.service.routes import Subject, errors

__all__ = ["router"]

router = APIRouter(prefix="/v1/subjects/{subject_id}", tags=["responses"], route_class=JsonRoute)

Reader = Annotated[TenantMemory, Depends(reader)]
Writer = Annotated[TenantMemory, Depends(writer)]
RecallId = Annotated[Key, Path(description="A recall of the subject (the `recall_id` a recall answered with).")]


@router.post(
    "/responses",
    status_code=201,
    response_model=ResponseOut,
    responses=errors(404),
    summary="Record what the agent answered or did",
)
def respond(subject_id: Subject, body: RespondIn, memory: Writer) -> ResponseOut:
    """What the agent finally answered (`answer`) or did (`action`, a JSON object), or both,
    tied to the recall it read and, if the action was checked first, the guard result: the
    evidence a diagnosis reads at the response boundary. 404 for a recall or guard result the
    subject does not have; 422 without an answer or an action, or for a guard result checked
    for another recall. A response on a recall whose content was deleted since is stored
    redacted."""
    return memory.respond(subject_id, body)


@router.get("/responses", response_model=list[ResponseOut], responses=errors(), summary="The subject's responses")
def responses(
    subject_id: Subject,
    memory: Reader,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many, newest first.")] = 100,
) -> list[ResponseOut]:
    """The subject's response records, newest first: the recall and guard result each rests
    on, and what the agent answered or did (`null` once redacted because the recall touched
    content deleted since; the sha256 stay)."""
    return memory.responses(subject_id, limit=limit)


@router.get(
    "/recalls/{recall_id}/verify",
    response_model=RecallVerificationOut,
    responses=errors(404),
    summary="Verify a recall",
)
def verify_recall(subject_id: Subject, recall_id: RecallId, memory: Reader) -> RecallVerificationOut:
    """Whether what a recall returned is still what memory says: `unchanged`; `changed` (a
    fact it returned superseded or revoked, an event revoked, its summary no longer the live
    one); `erased` (something it returned deleted since). Each change names the id and how;
    `rendered_matches` says whether the block it rendered is rebuilt to the same sha256."""
    return memory.verify_recall(subject_id, recall_id)
