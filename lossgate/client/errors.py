"""The service's error answers as lossgate's exceptions: the service's table of codes, read
backwards.

:data:`lossgate.service.errors.LOSSGATE_CODES` says which code each lossgate error is
answered with; :data:`EXCEPTIONS` inverts it, and adds the codes the service answers for
what only HTTP can get wrong (no key, a body that is not JSON, a route that does not exist),
so that every code of :data:`lossgate.service.errors.CODES` raises one class. The raised
error carries the answer's ``code`` and ``details`` (:class:`lossgate.errors.LossgateError`).
"""

from __future__ import annotations

from typing import Any

import httpx

from lossgate import errors as lg
from lossgate.service.errors import LOSSGATE_CODES, ErrorCode

__all__ = ["EXCEPTIONS", "error_of", "refused"]

# Codes no lossgate error is answered with: the request failed before any operation ran.
_ANSWERED_ONLY: dict[ErrorCode, type[lg.LossgateError]] = {
    "malformed_json": lg.InvalidInput,
    "unauthorized": lg.Unauthorized,
    "forbidden": lg.Forbidden,
    "method_not_allowed": lg.InvalidInput,
    "body_too_large": lg.InvalidInput,
    "unsupported_media_type": lg.InvalidInput,
    "validation_error": lg.InvalidInput,
    "idempotency_key_reused": lg.IdempotencyConflict,
    "internal_error": lg.LossgateError,
}

#: The exception each code of the service raises.
EXCEPTIONS: dict[ErrorCode, type[lg.LossgateError]] = {
    **{code: kind for kind, code in LOSSGATE_CODES},
    **_ANSWERED_ONLY,
}
_BY_CODE: dict[str, type[lg.LossgateError]] = {code: kind for code, kind in EXCEPTIONS.items()}


def refused(
    kind: type[lg.LossgateError], message: str, *, code: str | None, details: tuple[dict[str, str], ...] = ()
) -> lg.LossgateError:
    """An error of ``kind`` carrying ``code`` and ``details``."""
    exc = kind(message)
    exc.code = code
    exc.details = details
    return exc


def error_of(response: httpx.Response) -> lg.LossgateError:
    """The exception for an error answer: the class of its ``code``, its ``message``. An answer
    without the service's error body (a proxy's page) or with a code this client does not
    know (a newer service's) is a :class:`~lossgate.errors.LossgateError` naming the status."""
    request = response.request
    where = f"{request.method} {request.url.path}"
    body = _error_body(response)
    if body is None:
        exc = refused(
            lg.LossgateError,
            f"{where}: the service answered {response.status_code} {response.reason_phrase} without an error body",
            code=None,
        )
    else:
        code, message, details = body
        kind = _BY_CODE.get(code, lg.LossgateError)
        exc = refused(kind, message, code=code, details=details)
        exc.add_note(f"lossgate service: {where} answered {response.status_code} {code}")
    return exc


def _error_body(response: httpx.Response) -> tuple[str, str, tuple[dict[str, str], ...]] | None:
    try:
        data: Any = response.json()
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("code"), str) or not isinstance(data.get("message"), str):
        return None
    raw = data.get("details")
    details = tuple(
        {k: str(d.get(k, "")) for k in ("loc", "message", "type")}
        for d in (raw if isinstance(raw, list) else [])
        if isinstance(d, dict)
    )
    return data["code"], data["message"], details
