"""The service's errors: one table of stable codes, each with its HTTP status.

Every 4xx and 5xx the service sends has the body :class:`ErrorBody`: a ``code`` from
:data:`CODES` (stable: clients branch on it), a one-line ``message`` for people, and,
for a request that failed validation, ``details`` naming each field. The table:

=========================  ======  =============================================================
code                       status  when
=========================  ======  =============================================================
``malformed_json``         400     the body is not JSON (or not UTF-8, or holds NaN/Infinity), or
                                   would not read back as written (a key given twice, a number a
                                   double cannot hold: ``details`` says where)
``unauthorized``           401     no API key, a malformed one, an unknown one or a revoked one
``forbidden``              403     the key lacks the scope the operation needs
``not_found``              404     no such route, or nothing with that id for the key's tenant
                                   (another tenant's record reads exactly as a missing one)
``method_not_allowed``     405     the route exists, not with that method
``id_conflict``            409     an event or fact id already stored with other content
``lifecycle_conflict``     409     the record's state forbids the operation (superseding a
                                   deleted fact, a source event already deleted)
``not_configured``         409     the operation needs something the deployment lacks (no
                                   predicate registry is loaded)
``body_too_large``         413     the body is over the service's limit (1 MiB by default)
``unsupported_media_type`` 415     a body that is not ``application/json``
``validation_error``       422     the request does not fit its schema (``details`` says where),
                                   a path segment holds an encoded ``/``
``invalid_input``          422     the records refuse it (a limit of :mod:`lossgate.model.limits`, an
                                   authority above its sources' trust, ...)
``unknown_predicate``      422     a fact names a predicate the registry does not define
``value_type_mismatch``    422     a fact's value is not of its predicate's type
``idempotency_key_reused`` 422     an ``Idempotency-Key`` already used for another request
``store_busy``             503     a concurrent transaction won; nothing was written, retry
``store_unavailable``      503     the database failed or cannot be reached
``internal_error``         500     a bug; the message says nothing more (the log has it)
=========================  ======  =============================================================

This module imports nothing of FastAPI: the MCP tools raise and map the same errors.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from lossgate import errors as lg

__all__ = ["ErrorCode", "CODES", "ErrorDetail", "ErrorBody", "ApiError", "LOSSGATE_CODES", "from_lossgate"]

ErrorCode = Literal[
    "malformed_json",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "id_conflict",
    "lifecycle_conflict",
    "not_configured",
    "body_too_large",
    "unsupported_media_type",
    "validation_error",
    "invalid_input",
    "unknown_predicate",
    "value_type_mismatch",
    "idempotency_key_reused",
    "store_busy",
    "store_unavailable",
    "internal_error",
]
CODES: dict[ErrorCode, int] = {
    "malformed_json": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "id_conflict": 409,
    "lifecycle_conflict": 409,
    "not_configured": 409,
    "body_too_large": 413,
    "unsupported_media_type": 415,
    "validation_error": 422,
    "invalid_input": 422,
    "unknown_predicate": 422,
    "value_type_mismatch": 422,
    "idempotency_key_reused": 422,
    "store_busy": 503,
    "store_unavailable": 503,
    "internal_error": 500,
}
assert set(CODES) == set(get_args(ErrorCode))


class ErrorDetail(BaseModel):
    """One problem of a request that failed validation: where (``body.events.0.text``),
    what, and pydantic's type of error."""

    model_config = ConfigDict(frozen=True)

    loc: str
    message: str
    type: str


class ErrorBody(BaseModel):
    """The body of every error response."""

    model_config = ConfigDict(frozen=True)

    code: ErrorCode
    message: str
    details: list[ErrorDetail] = []


class ApiError(Exception):
    """An error with its stable code; the HTTP status is the code's (:data:`CODES`)."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        details: list[ErrorDetail] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = " ".join(message.split())  # one line
        self.details = details or []
        self.headers = headers or {}

    @property
    def status(self) -> int:
        return CODES[self.code]

    def body(self) -> ErrorBody:
        return ErrorBody(code=self.code, message=self.message, details=self.details)


def _validation_details(exc: ValidationError) -> list[ErrorDetail]:
    return [
        ErrorDetail(loc=".".join(str(p) for p in e["loc"]), message=e["msg"], type=e["type"])
        for e in exc.errors(include_url=False)
    ]


#: lossgate's errors and the code each is answered with, most specific first (subclasses before
#: their bases: an UnknownPredicate is an InvalidInput, a StoreBusy a StoreError). The one table
#: both ways: :func:`from_lossgate` reads it forwards, :mod:`lossgate.client` backwards.
LOSSGATE_CODES: tuple[tuple[type[lg.LossgateError], ErrorCode], ...] = (
    (lg.NotFound, "not_found"),
    (lg.UnknownPredicate, "unknown_predicate"),
    (lg.ValueTypeError, "value_type_mismatch"),
    (lg.IdempotencyConflict, "id_conflict"),
    (lg.LifecycleError, "lifecycle_conflict"),
    (lg.InvalidInput, "invalid_input"),
    (lg.ConfigError, "not_configured"),
    (lg.StoreBusy, "store_busy"),
    (lg.StoreError, "store_unavailable"),
)


def from_lossgate(exc: lg.LossgateError) -> ApiError:
    """The :class:`ApiError` for an error lossgate raised on purpose."""
    if isinstance(exc, lg.InvalidRecord):
        from lossgate.api.ingest import describe_validation_error

        return ApiError("invalid_input", describe_validation_error(exc), details=_validation_details(exc))
    for kind, code in LOSSGATE_CODES:
        if not isinstance(exc, kind):
            continue
        if code == "store_busy":
            return ApiError(code, str(exc), headers={"Retry-After": "1"})
        if code == "store_unavailable":  # the driver's message stays in the server's log
            return ApiError(code, "the database failed (the server's log says how)")
        return ApiError(code, str(exc))
    return ApiError("internal_error", "internal error")
