"""Extract; consolidate (queue a job, poll it); attempts, artifacts and lineage."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from lossgate.model.derived_records import ArtifactState
from lossgate.service.auth import reader, writer
from lossgate.service.bodies import JsonRoute
from lossgate.service.models import ArtifactOut, AttemptOut, ConsolidateOut, ExtractOut, JobOut, LineageOut
from lossgate.service.operations import TenantMemory
from lossgate.service.routes import Item, Subject, errors

__all__ = ["router"]

router = APIRouter(prefix="/v1/subjects/{subject_id}", tags=["consolidation"], route_class=JsonRoute)

Reader = Annotated[TenantMemory, Depends(reader)]
Writer = Annotated[TenantMemory, Depends(writer)]


@router.post("/extract", response_model=ExtractOut, responses=errors(409), summary="Propose facts from events")
def extract(subject_id: Subject, memory: Writer) -> ExtractOut:
    """Read the subject's events not read before with the default (deterministic)
    extractor and record each proposal with its outcome: asserted at once, or waiting for
    review, by each predicate's policy."""
    return memory.extract(subject_id)


@router.post(
    "/consolidate", status_code=202, response_model=ConsolidateOut, responses=errors(), summary="Queue a consolidation"
)
def consolidate(subject_id: Subject, memory: Writer) -> ConsolidateOut:
    """Queue a rebuild of the subject's summary and return its job (the one already pending,
    if any). Workers (`lossgate worker`) run it: poll `GET .../jobs/{job_id}`, then read
    the subject's attempts."""
    return memory.consolidate(subject_id)


@router.get("/jobs", response_model=list[JobOut], responses=errors(), summary="The subject's jobs")
def jobs(subject_id: Subject, memory: Reader) -> list[JobOut]:
    return memory.jobs(subject_id)


@router.get("/jobs/{job_id}", response_model=JobOut, responses=errors(404), summary="One job")
def job(subject_id: Subject, job_id: Annotated[int, Path(ge=1, le=2**63 - 1)], memory: Reader) -> JobOut:
    return memory.job(subject_id, job_id)


@router.get("/attempts", response_model=list[AttemptOut], responses=errors(), summary="The subject's attempts")
def attempts(subject_id: Subject, memory: Reader) -> list[AttemptOut]:
    """Every consolidation attempt, failures included, with its gate outcome, violations and
    their details (which fact was lost or changed)."""
    return memory.attempts(subject_id)


@router.get("/artifacts", response_model=list[ArtifactOut], responses=errors(), summary="The subject's artifacts")
def artifacts(
    subject_id: Subject,
    memory: Reader,
    state: Annotated[ArtifactState | None, Query(description="Only artifacts in this state.")] = None,
) -> list[ArtifactOut]:
    """The subject's artifacts, in any state (published, stale, failed, ...) or in `state`,
    oldest first."""
    return memory.artifacts(subject_id, states=None if state is None else [state])


@router.get(
    "/artifacts/{artifact_id}/lineage",
    response_model=LineageOut,
    responses=errors(404),
    summary="An artifact's lineage",
)
def lineage(subject_id: Subject, artifact_id: Item, memory: Reader) -> LineageOut:
    """The artifact, what it was derived from, and the chain of parents behind it."""
    return memory.lineage(subject_id, artifact_id)
