"""Recall, with the rendered prompt block; the recall records; the clock."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from lossgate.service.auth import reader
from lossgate.service.bodies import JsonRoute
from lossgate.service.models import RecallIn, RecallOut, RecallRecordOut, SubjectClockOut
from lossgate.service.operations import TenantMemory
from lossgate.service.routes import Subject, errors

__all__ = ["router"]

router = APIRouter(prefix="/v1/subjects/{subject_id}", tags=["recall"], route_class=JsonRoute)

Reader = Annotated[TenantMemory, Depends(reader)]


@router.post("/recall", response_model=RecallOut, responses=errors(), summary="Recall")
def recall(subject_id: Subject, body: RecallIn, memory: Reader) -> RecallOut:
    """What an agent should read now: the fresh summary or raw memory, critical facts
    always, with a query the most relevant facts and events of every tier, and `rendered`,
    the block to put in the prompt. Each recall is recorded (evidence), so this is a POST."""
    return memory.recall(subject_id, body)


@router.get("/clock", response_model=SubjectClockOut, responses=errors(), summary="The subject's clock and alias")
def clock(subject_id: Subject, memory: Reader) -> SubjectClockOut:
    """A subject never written has a zero clock and an empty alias."""
    return memory.clock(subject_id)


@router.get(
    "/recalls", response_model=list[RecallRecordOut], responses=errors(), summary="The subject's recall records"
)
def recalls(
    subject_id: Subject,
    memory: Reader,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many, newest first.")] = 100,
) -> list[RecallRecordOut]:
    """The evidence each recall left, newest first: the query (`null` once redacted because
    the recall touched content deleted since), the ids considered and returned, and the
    clock and alias it read."""
    return memory.recalls(subject_id, limit=limit)
