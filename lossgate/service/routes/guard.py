"""The response boundary: an agent's planned action checked against the ledger."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from lossgate.model.derived_records import GuardResult
from lossgate.service.auth import reader
from lossgate.service.bodies import JsonRoute
from lossgate.service.models import GuardIn
from lossgate.service.operations import TenantMemory
from lossgate.service.routes import Subject, errors

__all__ = ["router"]

router = APIRouter(prefix="/v1/subjects/{subject_id}", tags=["guard"], route_class=JsonRoute)

Reader = Annotated[TenantMemory, Depends(reader)]


@router.post("/guard", response_model=GuardResult, responses=errors(404), summary="Guard a planned action")
def guard(subject_id: Subject, body: GuardIn, memory: Reader) -> GuardResult:
    """Check an action the agent is about to carry out against the subject's active facts
    and open conflicts, by the guard rules of the predicate registry: `allowed`, or each
    refusal with its rule, the action's field and value, and the fact (value, qualifiers,
    source events) or conflict (both sides) that forbids it. A refusal is an answer (200),
    not an error; the result is recorded, with `recall_id` when given (404 if unknown)."""
    return memory.guard(subject_id, body)
