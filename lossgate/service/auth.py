"""Authentication: every route but ``/healthz``, ``/metrics`` and ``/openapi.json`` needs an
API key, sent as ``Authorization: Bearer <secret>``.

The header is read strictly (:func:`bearer_token`): one ``Authorization`` header, holding
exactly ``Bearer``, one space and the secret as a token68 (RFC 7235): no other spacing, no
tab, no lower-case ``bearer``, nothing after it. Anything else is a 401 with the challenge,
like a missing key: a header a lenient reader would repair is one the client did not mean.

The secret is hashed and looked up (:meth:`lossgate.Admin.authenticate`: one read, by the
hash, before any tenant is known). A missing header, another scheme, a malformed secret,
an unknown one and a revoked one all get the same 401 (``unauthorized``), so a caller
learns nothing about which keys exist. A key without the scope a route needs gets 403
(``forbidden``). The key's tenant is the only tenant the request can reach: the routes
receive a :class:`~lossgate.service.operations.TenantMemory` bound to it, and no route
reads a tenant from the path, the query or the body.

Nothing is cached between requests: a revoked key is refused from the next request on,
by every worker process.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from lossgate.api.memory import Memory
from lossgate.model.api_keys import ApiKey, Scope
from lossgate.service.errors import ApiError
from lossgate.service.operations import TenantMemory

__all__ = ["bearer", "bearer_token", "api_key", "scoped", "memory_of"]

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="lossgate"'}
# RFC 7235's token68, after exactly "Bearer" and one space.
_BEARER = re.compile(r"Bearer ([A-Za-z0-9._~+/-]+=*)")


def bearer_token(values: Sequence[str]) -> str | None:
    """The secret of the ``Authorization`` header values ``values`` (all of a request's, in
    order), or ``None`` unless there is exactly one and it is exactly ``Bearer <token68>``."""
    if len(values) != 1:
        return None
    found = _BEARER.fullmatch(values[0])
    return found.group(1) if found else None


class _StrictBearer(HTTPBearer):
    """FastAPI's bearer scheme (it documents the key in the OpenAPI document), reading the
    header with :func:`bearer_token`: ``None`` without a key sent exactly as it must be,
    which :func:`api_key` answers as a missing key."""

    async def __call__(self, request: HTTPConnection) -> HTTPAuthorizationCredentials | None:
        token = bearer_token(request.headers.getlist("authorization"))
        return None if token is None else HTTPAuthorizationCredentials(scheme="Bearer", credentials=token)


bearer = _StrictBearer(
    auto_error=False,
    scheme_name="apiKey",
    description="An API key from `lossgate keys create` (`Authorization: Bearer lg_...`).",
)


def memory_of(request: Request) -> Memory:
    memory: Memory = request.app.state.memory
    return memory


def api_key(request: Request, credentials: HTTPAuthorizationCredentials | None = Security(bearer)) -> ApiKey:
    """The active key the request carries; 401 otherwise."""
    if credentials is None:
        _failed(request, "missing")
        raise ApiError("unauthorized", "an API key is required: send Authorization: Bearer <key>", headers=_CHALLENGE)
    key = memory_of(request).admin.authenticate(credentials.credentials)
    if key is None:
        _failed(request, "invalid")
        raise ApiError("unauthorized", "the API key is invalid or revoked", headers=_CHALLENGE)
    request.state.key_id = key.key_id
    return key


def _failed(request: Request, reason: str) -> None:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.auth_failures.labels(reason=reason).inc()


def scoped(scope: Scope) -> Callable[..., TenantMemory]:
    """A dependency: the memory of the key's tenant, if the key has ``scope``; 403 otherwise."""

    def dependency(request: Request, key: ApiKey = Depends(api_key)) -> TenantMemory:
        if scope not in key.scopes:
            raise ApiError("forbidden", f"this API key lacks the {scope!r} scope (it has: {', '.join(key.scopes)})")
        return TenantMemory.of_key(memory_of(request), key)

    dependency.__name__ = f"{scope}_scope"
    return dependency


reader = scoped("read")
writer = scoped("write")
administrator = scoped("admin")
__all__ += ["reader", "writer", "administrator"]
