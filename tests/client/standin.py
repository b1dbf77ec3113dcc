"""An HTTP server in front of a served lossgate that answers the first requests from a
script, then forwards every request to the service as it came.

A step either answers without forwarding (:class:`Answer`: the service never sees the
request) or forwards the request and then replaces what the service answered
(:class:`LoseAnswer`: the service did the work, the client hears the scripted answer, as
when an answer is lost on the way). Each request is recorded with what the service answered
it, if it was forwarded.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host", "date", "server"}


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any] | bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def content(self) -> bytes:
        if self.body is None:
            return b""
        return self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()


@dataclass(frozen=True)
class LoseAnswer(Answer):
    """Forward, then answer this instead of what the service said."""


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    service_status: int | None = None  # what the service answered, when it was forwarded
    service_headers: dict[str, str] = field(default_factory=dict)


def error_body(code: str, message: str = "scripted") -> dict[str, Any]:
    return {"code": code, "message": message, "details": []}


class StandIn:
    """``with StandIn(service_url, [Answer(503, ...)]) as standin: Client(standin.url, ...)``."""

    def __init__(self, target: str, script: list[Answer]) -> None:
        self.target = target
        self.script = list(script)
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._http = httpx.Client(base_url=target, timeout=60)
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                standin._handle(self)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="standin", daemon=True
        )

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        seen = Seen(handler.command, handler.path, {k: v for k, v in handler.headers.items()})
        with self._lock:
            self.seen.append(seen)
            step = self.script.pop(0) if self.script else None
        if step is not None and not isinstance(step, LoseAnswer):
            self._send(handler, step.status, step.headers, step.content())
            return
        forwarded = self._http.request(
            handler.command,
            handler.path,
            content=body,
            headers={k: v for k, v in handler.headers.items() if k.lower() not in _HOP},
        )
        seen.service_status, seen.service_headers = forwarded.status_code, dict(forwarded.headers)
        if step is not None:
            self._send(handler, step.status, step.headers, step.content())
            return
        kept = {k: v for k, v in forwarded.headers.items() if k.lower() not in _HOP}
        self._send(handler, forwarded.status_code, kept, forwarded.content)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], content: bytes) -> None:
        handler.send_response(status)
        for k, v in headers.items():
            handler.send_header(k, v)
        if content and not any(k.lower() == "content-type" for k in headers):
            handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(content)))
        handler.end_headers()
        handler.wfile.write(content)
