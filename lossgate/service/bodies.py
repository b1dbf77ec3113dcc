"""Request bodies: their size, their media type, and JSON numbers read exactly.

:class:`BodyLimit` is ASGI middleware that reads a body before the application sees it:
a ``Content-Length`` over the limit is refused at once, a body that grows past it while
being read (chunked) is refused when it does, and a body that is not ``application/json``
(or ``+json``) is refused too, except an HTML form (``application/x-www-form-urlencoded``)
posted to one of ``form_paths`` (the inspection page's login); each with the service's error body
(:mod:`lossgate.service.errors`: ``body_too_large`` 413, ``unsupported_media_type``
415). Nothing reaches a route, so nothing is written.

:class:`JsonRoute` parses JSON the way ``lossgate ingest`` does
(:func:`lossgate.model.limits.read_json`): a number with a fraction or an exponent becomes a
:class:`~decimal.Decimal`, never a binary float, so ``50.0`` given for an ``int`` predicate
is refused instead of becoming ``50``, and ``0.1`` stays ``0.1`` (invariant 9); ``NaN`` and
``Infinity`` are not JSON and are refused. So are an object key given twice and a number a
double cannot hold (``1e-400`` would read as 0, ``1e999`` as infinity): ``malformed_json``
(400), naming the key or the field in ``details``, before the route runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lossgate.model.limits import UnreadableJson, read_json
from lossgate.service.errors import ApiError, ErrorDetail

__all__ = ["BodyLimit", "JsonRoute", "DEFAULT_MAX_BODY_BYTES", "error_bytes"]

DEFAULT_MAX_BODY_BYTES = 1_048_576


def error_bytes(error: ApiError) -> bytes:
    return error.body().model_dump_json().encode()


class BodyLimit:
    """Refuse bodies over ``max_bytes`` and bodies that are not JSON (see the module)."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int = DEFAULT_MAX_BODY_BYTES, form_paths: frozenset[str] = frozenset()
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.form_paths = form_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                if int(declared) > self.max_bytes:
                    await self._refuse(send, self._too_large())
                    return
            except ValueError:
                pass  # the server refuses a malformed Content-Length itself
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, self._too_large())
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        media = headers.get(b"content-type", b"")
        if body and not _is_json(media) and not (scope.get("path") in self.form_paths and _is_form(media)):
            await self._refuse(
                send, ApiError("unsupported_media_type", "the body must be JSON: send Content-Type: application/json")
            )
            return
        await self.app(scope, replayed(body, receive), send)

    def _too_large(self) -> ApiError:
        return ApiError("body_too_large", f"the request body is over the limit of {self.max_bytes:,} bytes")

    @staticmethod
    async def _refuse(send: Send, error: ApiError) -> None:
        body = error_bytes(error)
        await send(
            {
                "type": "http.response.start",
                "status": error.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _is_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def _is_form(content_type: bytes) -> bool:
    return content_type.split(b";", 1)[0].strip().lower() == b"application/x-www-form-urlencoded"


class _ExactJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            raw = await self.body()
            try:
                self._json = read_json(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise json.JSONDecodeError(f"the body is not UTF-8 ({exc.reason})", "", 0) from None
            except UnreadableJson:
                raise
            except ValueError as exc:
                if isinstance(exc, json.JSONDecodeError):
                    raise
                raise json.JSONDecodeError(str(exc), "", 0) from None
        return self._json

    async def refuse_unreadable(self) -> None:
        """Raise ``malformed_json`` for a body that parses but would not read back as written
        (:class:`~lossgate.model.limits.UnreadableJson`); any other failure to parse is left to
        FastAPI's own reading, which answers it as it always has."""
        if not await self.body():
            return
        try:
            await self.json()
        except UnreadableJson as exc:
            where = ".".join(["body", *(str(part) for part in exc.loc)])
            raise ApiError(
                "malformed_json",
                f"the body cannot be read as it was written: {exc}",
                details=[ErrorDetail(loc=where, message=str(exc), type=exc.kind)],
            ) from None
        except (ValueError, RecursionError):
            pass


class JsonRoute(APIRoute):
    """A route whose JSON body is parsed with exact numbers and refused when it would not
    read back as written (see the module)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        reads_body = self.body_field is not None

        async def exact(request: Request) -> Response:
            strict = _ExactJsonRequest(request.scope, request.receive)
            if reads_body:
                await strict.refuse_unreadable()
            return await handler(strict)

        return exact


def replayed(body: bytes, receive: Receive) -> Receive:
    """An ASGI ``receive`` that hands on ``body``, already read from ``receive``, as one
    message, then waits on ``receive`` (for the disconnect), as the server would."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
