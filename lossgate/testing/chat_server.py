"""A scripted OpenAI-compatible server on loopback, for tests and demos of
:class:`lossgate.consolidate.chat.ChatCompressor`, :class:`lossgate.semantic.HttpEmbedder`
and :class:`lossgate.semantic.HttpReranker` without a model or a network.

It is a real HTTP server (``http.server`` in a thread): the client goes through its
whole protocol (connection, headers, status codes, ``Retry-After``, timeouts). Each
request to ``POST /v1/chat/completions``, ``POST /v1/embeddings`` or ``POST /v1/rerank``
takes the next scripted :class:`Reply` (or
calls a function of the request body that returns one); once the script runs out,
``default`` answers. Every request body, its headers and its path are kept for assertions.

    with ScriptedChatServer([Reply(status=503), narrative("They asked for a refund.")]) as server:
        compressor = ChatCompressor(ChatConfig(base_url=server.url, model="scripted"))
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ScriptedChatServer", "completion", "echo_conversation", "narrative", "tool_call"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: status, JSON (dict) or raw (str/bytes) body, headers, and a delay."""

    status: int = 200
    body: dict[str, Any] | str | bytes = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Script = Reply | Callable[[dict[str, Any]], Reply]


def completion(content: str | None, *, finish_reason: str = "stop", refusal: str | None = None) -> Reply:
    """A well-formed chat completion whose message content is ``content``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return Reply(
        body={
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


def tool_call(name: str, arguments: dict[str, Any], *, call_id: str = "call-1") -> Reply:
    """A well-formed chat completion asking for one call of the tool ``name`` (an agent's turn)."""
    return Reply(
        body={
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


def narrative(text: str) -> Reply:
    """A completion answering ``{"narrative": text}``, as the chat compressor asks."""
    return completion(json.dumps({"narrative": text}))


def echo_conversation(body: dict[str, Any]) -> Reply:
    """A faithful "model": its narrative is the conversation it was sent, line by line."""
    document = json.loads(body["messages"][-1]["content"])
    lines = [f"{turn['actor']}: {turn['text']}" for turn in document["conversation"]]
    return narrative("\n".join(lines))


class ScriptedChatServer:
    def __init__(self, script: Iterable[Script] = (), *, default: Script | None = None) -> None:
        self._script: deque[Script] = deque(script)
        self._default = default
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        # serve_forever checks for shutdown every poll_interval (0.5 s by default): each
        # server's exit would cost that much, which in a suite of hundreds of servers adds up
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="scripted-chat", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def push(self, *replies: Script) -> None:
        with self._lock:
            self._script.extend(replies)

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, body: dict[str, Any], headers: dict[str, str], path: str) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            script = self._script.popleft() if self._script else self._default
        if script is None:
            return Reply(status=500, body={"error": {"message": "the script ran out"}})
        return script(body) if callable(script) else script

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The status line and headers go out in one write, the body in another: with
            # Nagle's algorithm on, a kept-alive connection's answer then waits for the
            # client's delayed ACK (40 ms on Linux) before its body is sent.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/v1/embeddings", "/v1/rerank"):
                    self._send(Reply(status=404, body={"error": {"message": f"no route {self.path}"}}))
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(Reply(status=400, body={"error": {"message": "body is not JSON"}}))
                    return
                reply = server._next(body, {k.lower(): v for k, v in self.headers.items()}, self.path.rstrip("/"))
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                payload = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else (reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode())
                )
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
