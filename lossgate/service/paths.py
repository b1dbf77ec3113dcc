"""Request paths: one segment is one path parameter, and nothing else.

The server decodes a path before routing it, so ``/v1/subjects/a%2Fevents`` would reach
the route ``/v1/subjects/{subject_id}/events`` of the subject ``a``, and an id holding an
encoded ``/`` would be split in two. :class:`EncodedSlash` is ASGI middleware that refuses
a request whose path has a segment holding ``%2F`` (or ``%2f``), before any route runs:
``validation_error`` (422, the status of any other id a path parameter refuses), with the
segment named in ``details``. An id holding a ``/`` can be written in a body; it cannot be
named in a path.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from lossgate.service.errors import ApiError, ErrorDetail

__all__ = ["EncodedSlash", "encoded_slash"]


def encoded_slash(raw_path: bytes) -> bytes | None:
    """The first segment of ``raw_path`` (as the client sent it) that holds an encoded
    ``/``, or ``None``."""
    for segment in raw_path.split(b"/"):
        if b"%2f" in segment.lower():
            return segment
    return None


class EncodedSlash:
    """Refuse a path segment that decodes to something holding ``/`` (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        segment = encoded_slash(raw) if isinstance(raw, bytes) else None
        if segment is None:
            await self.app(scope, receive, send)
            return
        shown = segment.decode("ascii", "replace")
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        message = f"the path segment {shown!r} holds an encoded '/' (%2F): one segment is one id"
        error = ApiError("validation_error", message,
                         details=[ErrorDetail(loc="path", message=message, type="encoded_slash")])
        body = error.body().model_dump_json().encode()
        await send({"type": "http.response.start", "status": error.status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
