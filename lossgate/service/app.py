"""The application factory: :func:`create_app` turns a memory (or a database URL) into a
FastAPI application.

The application holds no state that several processes would have to share: a request
authenticates against the database, runs one operation of the Python API (one
transaction for a write) and answers. Any number of uvicorn workers, on any number of
hosts, may serve one PostgreSQL database (``lossgate serve --workers N``); only the
metrics are per process (:mod:`lossgate.service.metrics`).

Layers, outermost first: the metrics middleware (counts every answer, errors included),
the path check (:mod:`lossgate.service.paths`: no encoded ``/`` in a segment), the body
limit (:mod:`lossgate.service.bodies`: size and media type, before any route runs),
FastAPI's routing and validation, the routes (:mod:`lossgate.service.routes`, and
the inspection page, :mod:`lossgate.service.ui`),
which call :class:`~lossgate.service.operations.TenantMemory`. Every error leaves as the
typed body of :mod:`lossgate.service.errors`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

import lossgate
from lossgate.api.memory import Memory
from lossgate.errors import LossgateError, StoreError
from lossgate.service.bodies import DEFAULT_MAX_BODY_BYTES, BodyLimit
from lossgate.service.errors import ApiError, ErrorCode, ErrorDetail, from_lossgate
from lossgate.service.metrics import Metrics, MetricsMiddleware
from lossgate.service.paths import StrictPath
from lossgate.service.routes import consolidation, guard, ledger, recall, responses, system
from lossgate.service.ui import FORM_PATHS
from lossgate.service.ui import router as ui_router

__all__ = ["create_app", "routes", "DESCRIPTION"]

log = logging.getLogger("lossgate.service")

DESCRIPTION = """Long-term memory for LLM agents that compresses without forgetting, over HTTP.

Every route under `/v1` needs an API key (`lossgate keys create`), sent as
`Authorization: Bearer lg_...`. A key belongs to one tenant and has scopes (`read`,
`write`, `admin`): the tenant is the key's, never the request's, and another tenant's
records answer exactly as missing ones (404 `not_found`). Errors have a stable `code`
and a `message`."""


def create_app(
    memory: Memory | str,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    migrate: bool = True,
    close_memory: bool | None = None,
) -> FastAPI:
    """An application serving ``memory``: a :class:`~lossgate.Memory`, or a database URL
    (opened now, migrated unless ``migrate`` is false). The memory is closed when the
    application shuts down if ``close_memory`` (default: when the factory opened it).
    ``max_body_bytes`` bounds every request body (413 ``body_too_large`` beyond it)."""
    owned = isinstance(memory, str) if close_memory is None else close_memory
    opened = lossgate.open(memory, migrate=migrate, starter=False) if isinstance(memory, str) else memory

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                opened.close()

    app = routes(lifespan=lifespan)
    app.state.memory = opened
    app.state.metrics = metrics = Metrics()
    _install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, form_paths=FORM_PATHS)
    app.add_middleware(StrictPath)
    app.add_middleware(MetricsMiddleware, metrics=metrics)  # added last: outermost
    return app


def routes(*, lifespan: Any = None) -> FastAPI:
    """The application's routes, with nothing to serve them (its OpenAPI document is the
    service's: :mod:`lossgate.service.openapi`)."""
    app = FastAPI(
        title="lossgate",
        version=lossgate.__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    for module in (ledger, consolidation, recall, guard, responses, system):
        app.include_router(module.router)
    app.include_router(ui_router)  # the inspection page (/ui): HTML, left out of the OpenAPI document
    return app


def _answer(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body().model_dump(mode="json"), status_code=error.status, headers=error.headers)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _answer(exc)

    @app.exception_handler(LossgateError)
    async def lossgate_error(request: Request, exc: LossgateError) -> JSONResponse:
        if isinstance(exc, StoreError):
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        elif type(exc) is LossgateError:
            log.error("%s %s: unexpected %r", request.method, request.url.path, exc)
        return _answer(from_lossgate(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _answer(_validation_error(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes: dict[int, tuple[ErrorCode, str]] = {
            404: ("not_found", f"no route {request.url.path}"),
            405: ("method_not_allowed", f"{request.method} is not allowed on {request.url.path}"),
            400: ("malformed_json", "the body could not be parsed"),
            413: ("body_too_large", "the request body is too large"),
        }
        code, message = codes.get(exc.status_code, ("internal_error", "internal error"))
        return _answer(ApiError(code, message, headers=dict(exc.headers or {})))

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return _answer(ApiError("internal_error", "internal error"))


def _validation_error(errors: Any) -> ApiError:
    errors = list(errors)
    for e in errors:
        if e.get("type") == "json_invalid":
            why = (e.get("ctx") or {}).get("error", "")
            return ApiError("malformed_json", f"the body is not valid JSON: {why}".rstrip(": "))
    details = [
        ErrorDetail(
            loc=".".join(str(p) for p in e.get("loc", ())), message=str(e.get("msg", "")), type=str(e.get("type", ""))
        )
        for e in errors
    ]
    first = details[0] if details else ErrorDetail(loc="", message="invalid request", type="")
    more = f" (and {len(details) - 1} more problem{'s' if len(details) > 2 else ''})" if len(details) > 1 else ""
    where = f"{first.loc}: " if first.loc else ""
    return ApiError("validation_error", f"{where}{first.message}{more}", details=details)
