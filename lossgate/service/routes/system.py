"""Health, metrics, the key a request is made with, and the tenant-wide admin listings."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response

from lossgate.errors import LossgateError
from lossgate.model.api_keys import ApiKey
from lossgate.service.auth import administrator, api_key, memory_of
from lossgate.service.bodies import JsonRoute
from lossgate.service.errors import ErrorBody, from_lossgate
from lossgate.service.metrics import CONTENT_TYPE
from lossgate.service.models import HealthOut, JobOut, KeyOut, SubjectsOut
from lossgate.service.operations import TenantMemory
from lossgate.service.routes import errors

__all__ = ["router"]

router = APIRouter(route_class=JsonRoute)

Admin = Annotated[TenantMemory, Depends(administrator)]


@router.get(
    "/healthz",
    response_model=HealthOut,
    tags=["system"],
    summary="Health",
    responses={503: {"model": ErrorBody, "description": "The database cannot be reached."}},
)
def health(request: Request) -> HealthOut:
    """`ok` when the database answers (no API key needed; it says nothing of any tenant)."""
    try:
        version = memory_of(request).store.schema_version()
    except LossgateError as exc:
        raise from_lossgate(exc) from None
    return HealthOut(status="ok", schema_version=version)


@router.get(
    "/metrics",
    tags=["system"],
    summary="Prometheus metrics",
    response_class=Response,
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "description": "This process's metrics, Prometheus text format.",
        }
    },
)
def metrics(request: Request) -> Response:
    """Request counts and latency by route and status, authentication failures, replays,
    appended events and facts, for this process (no API key needed; no label names a tenant)."""
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE)


@router.get("/v1/key", response_model=KeyOut, tags=["system"], responses=errors(), summary="This API key")
def key(key: Annotated[ApiKey, Depends(api_key)]) -> KeyOut:
    """The tenant, id and scopes of the key the request carries (any scope)."""
    return KeyOut.of(key)


@router.get(
    "/v1/subjects", response_model=SubjectsOut, tags=["admin"], responses=errors(), summary="The tenant's subjects"
)
def subjects(memory: Admin) -> SubjectsOut:
    """Every subject of the key's tenant (needs the `admin` scope)."""
    return memory.subjects()


@router.get("/v1/jobs", response_model=list[JobOut], tags=["admin"], responses=errors(), summary="The tenant's jobs")
def tenant_jobs(
    memory: Admin,
    status: Annotated[
        Literal["pending", "running", "done", "review"] | None, Query(description="Only jobs in this status.")
    ] = None,
) -> list[JobOut]:
    """The rebuild jobs of every subject of the key's tenant, oldest first (`status=review`:
    the subjects whose consolidation keeps failing; needs the `admin` scope)."""
    jobs = memory.jobs(None)
    return jobs if status is None else [j for j in jobs if j.status == status]
