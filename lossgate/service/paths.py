"""Request paths: one segment is one path parameter, and nothing else.

The server decodes a path before routing it, so ``/v1/subjects/a%2Fevents`` would reach
the route ``/v1/subjects/{subject_id}/events`` of the subject ``a``, and an id holding an
encoded ``/`` would be split in two; and it decodes bytes that are not UTF-8 to U+FFFD, so
``/v1/subjects/%FF`` and ``/v1/subjects/%FE`` would name one subject. :class:`StrictPath`
is ASGI middleware that refuses a request whose path has a segment holding ``%2F`` (or
``%2f``: type ``encoded_slash``) or one whose encoded bytes are not UTF-8 (type
``invalid_utf8``), before any route runs: ``validation_error`` (422, the status of any other
id a path parameter refuses), with the segment named in ``details``. No new id holds a
``/`` (:func:`lossgate.model.limits.id_problem`), so every id can be named in a path.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from lossgate.service.errors import ApiError, ErrorDetail

__all__ = ["StrictPath", "segment_problem"]


def segment_problem(raw_path: bytes) -> tuple[bytes, str, str] | None:
    """The first segment of ``raw_path`` (as the client sent it) that cannot be one id, with
    what is wrong and its type (``encoded_slash``, ``invalid_utf8``), or ``None``."""
    for segment in raw_path.split(b"/"):
        if b"%2f" in segment.lower():
            return segment, "holds an encoded '/' (%2F): one segment is one id", "encoded_slash"
        if b"%" in segment:
            try:
                unquote_to_bytes(segment).decode("utf-8")
            except UnicodeDecodeError:
                return segment, "encodes bytes that are not UTF-8", "invalid_utf8"
    return None


class StrictPath:
    """Refuse a path segment that is not one id as written (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        found = segment_problem(raw) if isinstance(raw, bytes) else None
        if found is None:
            await self.app(scope, receive, send)
            return
        segment, why, kind = found
        shown = segment.decode("ascii", "replace")
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        message = f"the path segment {shown!r} {why}"
        error = ApiError("validation_error", message, details=[ErrorDetail(loc="path", message=message, type=kind)])
        body = error.body().model_dump_json().encode()
        await send(
            {
                "type": "http.response.start",
                "status": error.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
