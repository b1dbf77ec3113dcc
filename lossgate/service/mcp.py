"""The MCP server: memory as tools for agents (``lossgate mcp``), built with the official
``mcp`` SDK (:class:`mcp.server.MCPServer`), over stdio or streamable HTTP.

One server is bound to one API key, given when it is built (:func:`create_server`): the key
is authenticated then, and its tenant is the only tenant any tool reaches, through
:class:`~lossgate.service.operations.TenantMemory`, as the HTTP routes do. No tool takes a
tenant. Each call authenticates the key again (one read by its hash, as each HTTP request
does), so a key revoked while the server runs is refused from the next call on, and a call
needs the scope its HTTP route needs: ``read`` for ``recall``, ``guard`` and ``inspect``,
``write`` for ``remember`` and ``forget``.

The tools:

* ``remember``: append events and, optionally, facts to a subject, in one transaction
  (:class:`~lossgate.service.models.AppendIn`; ``idempotency_key`` as the HTTP header);
* ``recall``: the rendered prompt block (:meth:`lossgate.model.derived_records.RecallResult.render`) as
  the text the agent reads, the whole :class:`~lossgate.service.models.RecallOut` as
  structured content;
* ``guard``: an action the agent plans, checked against the subject's facts by the
  registry's guard rules (:mod:`lossgate.guard`): the verdict and each refusal's reason as
  text, the whole :class:`~lossgate.model.derived_records.GuardResult` as structured content;
* ``forget``: delete an event or a fact (erasure: content purged, tombstone kept);
* ``inspect``: a subject's active facts and unresolved conflicts, with its clock.

Inputs are typed with the service's own models and limits (:mod:`lossgate.service.models`),
so the SDK publishes their JSON schema and validates calls against it. A failed call is the
SDK's tool error result (``isError: true``) whose text is the service's error body,
``{"code", "message", "details"}``, with the stable codes of :mod:`lossgate.service.errors`
(an argument that fails the schema is ``validation_error``); never a traceback: anything
unexpected is ``internal_error``, logged on the server's stderr.

JSON numbers: the SDK parses a number with a fraction into a binary float, which lossgate
refuses as a ``decimal`` or ``money`` value (it has already lost the digits written); such
values are sent as strings (``"99.95"``, ``{"amount": "12.50", "currency": "USD"}``).

Every message is read by :func:`lossgate.model.limits.read_json` before the SDK reads it, on
both transports: one that gives an object key twice or holds a number a double cannot
hold (``1e-400`` would reach a tool as 0, ``1e999`` as infinity) is not handed on. A
``tools/call`` gets the tool error result ``malformed_json`` naming the key or the
argument; any other request a JSON-RPC error ``-32600`` carrying the same body.

Over HTTP (:func:`http_app`) the server is one tenant's memory on the network, so every
HTTP request must carry the same key, ``Authorization: Bearer <key>``; any other gets 401
``unauthorized`` with the service's error body.
"""

from __future__ import annotations

import hmac
import inspect
import io
import json
import logging
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

import anyio
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from lossgate.api.memory import Memory
from lossgate.errors import LossgateError
from lossgate.model.api_keys import ApiKey
from lossgate.model.api_keys import Scope as KeyScope
from lossgate.model.derived_records import GuardResult
from lossgate.model.limits import MAX_LABEL_CHARS, UnreadableJson, read_json
from lossgate.service.bodies import replayed
from lossgate.service.errors import ApiError, ErrorDetail, from_lossgate
from lossgate.service.models import (
    MAX_BATCH,
    AliasOut,
    AppendIn,
    AppendOut,
    ClockOut,
    ConflictOut,
    EventIn,
    EventOut,
    FactIn,
    FactOut,
    GuardIn,
    ItemId,
    RecallIn,
    RecallOut,
    SubjectId,
)
from lossgate.service.operations import TenantMemory

__all__ = [
    "SERVER_NAME",
    "InvalidKey",
    "ForgetOut",
    "InspectOut",
    "Refusal",
    "authenticate",
    "create_server",
    "http_app",
    "refusal",
]

SERVER_NAME = "lossgate"
log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

# The same bounds as the HTTP API's Idempotency-Key header and reason query parameter.
IdempotencyKey = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[!-~]+$")]
Reason = Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS, pattern=r"^[^\x00]*$")]
Query = Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS, pattern=r"^[^\x00]*$")]  # as RecallIn's


class InvalidKey(Exception):
    """The configured API key is malformed, unknown or revoked."""


class ForgetOut(BaseModel):
    """What ``forget`` erased: the event or the fact as it is now (its content purged, its
    id, seq and hash kept)."""

    model_config = ConfigDict(frozen=True)

    subject_id: str
    forgotten: Literal["event", "fact"]
    event: EventOut | None = None
    fact: FactOut | None = None


class InspectOut(BaseModel):
    """A subject's active facts, its unresolved conflicts, its clock and its alias."""

    model_config = ConfigDict(frozen=True)

    subject_id: str
    clock: ClockOut
    alias: AliasOut
    facts: list[FactOut]
    conflicts: list[ConflictOut]


def authenticate(memory: Memory, secret: str) -> ApiKey:
    """The active key ``secret`` is the secret of; :class:`InvalidKey` otherwise."""
    key = memory.admin.authenticate(secret)
    if key is None:
        raise InvalidKey("the API key is invalid or revoked")
    return key


def _error_result(error: ApiError) -> CallToolResult:
    body = error.body().model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body))], structured_content=body, is_error=True
    )


def _validation_error(exc: ValidationError) -> ApiError:
    details = [
        ErrorDetail(loc=".".join(str(p) for p in e["loc"]), message=e["msg"], type=e["type"])
        for e in exc.errors(include_url=False)
    ]
    where = ", ".join(d.loc or "(arguments)" for d in details[:5])
    return ApiError("validation_error", f"the arguments do not fit the tool's schema: {where}", details=details)


class Refusal(NamedTuple):
    """A message lossgate will not hand to the SDK, and the JSON-RPC message that answers
    it (``None`` for a notification, which nothing answers)."""

    reply: dict[str, Any] | None
    error: ApiError


def refusal(raw: str) -> Refusal | None:
    """The :class:`Refusal` of a JSON-RPC message that parses but would not read back as
    written (:class:`~lossgate.model.limits.UnreadableJson`), or ``None``: it reads, or it is not
    JSON at all, which the SDK answers itself."""
    try:
        read_json(raw)
        return None
    except UnreadableJson as exc:
        problem = exc
    except (ValueError, RecursionError):
        return None
    try:  # leniently, only for the request's id and method
        message = json.loads(raw)
    except (ValueError, RecursionError):
        message = None
    fields = message if isinstance(message, dict) else {}
    loc, top = problem.loc, "(message)"
    is_call = fields.get("method") == "tools/call"
    if is_call and loc[:2] == ("params", "arguments"):
        loc, top = loc[2:], "(arguments)"  # where in the tool's arguments, as a validation error says
    where = ".".join(str(part) for part in loc) or top
    error = ApiError(
        "malformed_json",
        f"the message cannot be read as it was written: {problem}",
        details=[ErrorDetail(loc=where, message=str(problem), type=problem.kind)],
    )
    if "id" not in fields:
        return Refusal(None, error)
    if is_call:
        result = _error_result(error).model_dump(by_alias=True, mode="json", exclude_none=True)
        return Refusal({"jsonrpc": "2.0", "id": fields["id"], "result": result}, error)
    body = error.body().model_dump(mode="json")
    return Refusal(
        {
            "jsonrpc": "2.0",
            "id": fields["id"],
            "error": {"code": mcp_types.INVALID_REQUEST, "message": error.message, "data": body},
        },
        error,
    )


class _StrictLines:
    """stdin's lines for the SDK's stdio transport, each read by lossgate first: a line it
    refuses is answered on the write stream (once :meth:`answer_on` gives it) and never
    handed on."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self._replies: Any = None
        self._open = anyio.Event()

    def answer_on(self, write_stream: Any) -> None:
        self._replies = write_stream
        self._open.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            refused = refusal(line)
            if refused is None:
                yield line
            elif refused.reply is None:
                log.warning("a notification was dropped: %s", refused.error.message)
            else:
                await self._open.wait()
                reply = mcp_types.jsonrpc_message_adapter.validate_python(refused.reply)
                await self._replies.send(SessionMessage(reply))


class _Server(MCPServer[Any]):
    """:class:`MCPServer` whose argument-validation failures carry the service's error body
    (``validation_error``, with ``details``) instead of the SDK's text, and which refuses
    arguments a tool does not take (the SDK drops them; the HTTP API refuses unknown fields,
    a ``tenant_id`` above all)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parameters: dict[str, frozenset[str]] = {}

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().add_tool(fn, name, *args, **kwargs)
        self._parameters[name or fn.__name__] = frozenset(inspect.signature(fn).parameters)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Any = None,
    ) -> CallToolResult | InputRequiredResult:
        unknown = sorted(set(arguments) - self._parameters.get(name, frozenset(arguments)))
        if unknown:
            return _error_result(
                ApiError(
                    "validation_error",
                    f"the arguments do not fit the tool's schema: {', '.join(unknown)}",
                    details=[
                        ErrorDetail(loc=u, message="Extra inputs are not permitted", type="extra_forbidden")
                        for u in unknown
                    ],
                )
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return _error_result(_validation_error(exc.__cause__))

    async def run_stdio_async(self) -> None:
        """The SDK's stdio transport, reading stdin through :class:`_StrictLines`."""
        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")  # as the SDK reads it
        lines = _StrictLines(anyio.wrap_file(stdin))
        try:
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
                lines.answer_on(write_stream)
                await self._lowlevel_server.run(
                    read_stream, write_stream, self._lowlevel_server.create_initialization_options()
                )
        finally:
            stdin.detach()  # the buffer is sys.stdin's: not this wrapper's to close


class _Tools:
    """The tools' bodies: each call authenticates the key, checks its scope and runs one
    operation of :class:`TenantMemory`; errors become the service's error body."""

    def __init__(self, memory: Memory, secret: str, key: ApiKey) -> None:
        self.memory = memory
        self._secret = secret
        self.tenant_id = key.tenant_id

    def _tenant(self, scope: KeyScope) -> TenantMemory:
        key = self.memory.admin.authenticate(self._secret)
        if key is None or key.tenant_id != self.tenant_id:
            raise ApiError("unauthorized", "the API key is invalid or revoked")
        if scope not in key.scopes:
            raise ApiError("forbidden", f"this API key lacks the {scope!r} scope (it has: {', '.join(key.scopes)})")
        return TenantMemory.of_key(self.memory, key)

    def run(
        self, scope: KeyScope, operation: Callable[[TenantMemory], M], *, text: Callable[[M], str] | None = None
    ) -> CallToolResult:
        try:
            value = operation(self._tenant(scope))
        except ApiError as exc:
            return _error_result(exc)
        except LossgateError as exc:  # InvalidRecord too (also a ValidationError)
            return _error_result(from_lossgate(exc))
        except ValidationError as exc:  # a model built from the arguments refused them
            return _error_result(_validation_error(exc))
        except Exception:
            log.exception("an MCP tool failed")
            return _error_result(ApiError("internal_error", "internal error"))
        structured = value.model_dump(mode="json")
        shown = text(value) if text is not None else json.dumps(structured)
        return CallToolResult(content=[TextContent(type="text", text=shown)], structured_content=structured)


def _verdict(r: GuardResult) -> str:
    """A guard result as the agent reads it: the verdict, then each refusal's reason."""
    if r.allowed:
        return f"allowed (guard {r.guard_id})"
    return "\n".join([f"refused (guard {r.guard_id}):", *(f"- {x.rule}: {x.detail}" for x in r.refusals)])


def create_server(memory: Memory, secret: str) -> MCPServer[Any]:
    """The MCP server of the key ``secret`` (authenticated now: :class:`InvalidKey` if it is
    not an active key). The caller keeps ``memory`` open while the server runs."""
    tools = _Tools(memory, secret, authenticate(memory, secret))
    server = _Server(
        SERVER_NAME,
        instructions=(
            "Long-term memory of subjects (users, accounts). remember appends what happened (events) and, "
            "optionally, typed facts drawn from them; recall returns the block to put in your prompt; inspect "
            "lists a subject's active facts and unresolved conflicts; guard checks an action you plan against the "
            "subject's facts before you carry it out; forget erases an event or a fact."
        ),
    )

    @server.tool("remember", annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
    def remember(
        subject_id: Annotated[SubjectId, Field(description="The subject: no whitespace, up to 200 characters.")],
        events: Annotated[
            list[EventIn],
            Field(
                max_length=MAX_BATCH,
                description=(
                    'Events to append, e.g. {"event_id": "msg-41", "text": "I am allergic to peanuts"}. '
                    "An event_id makes a retry a no-op."
                ),
            ),
        ] = [],  # noqa: B006 - pydantic copies a field's default
        facts: Annotated[
            list[FactIn],
            Field(
                max_length=MAX_BATCH,
                description=(
                    "Typed facts, each citing events of this call or stored before (source_event_ids); the predicate "
                    'must be in the registry. Decimal and money amounts as strings: "99.95".'
                ),
            ),
        ] = [],  # noqa: B006 - pydantic copies a field's default
        idempotency_key: Annotated[
            IdempotencyKey | None,
            Field(
                description=(
                    "A key of your choosing: a retry with the same key and arguments gets the first answer and "
                    "writes nothing."
                )
            ),
        ] = None,
    ) -> Annotated[CallToolResult, AppendOut]:
        """Append events, and optionally facts, to a subject's memory: all or nothing."""

        def append(t: TenantMemory) -> AppendOut:
            body = AppendIn(events=events, facts=facts)
            return t.append(subject_id, body, idempotency_key=idempotency_key).value

        return tools.run("write", append)

    @server.tool("recall", annotations=ToolAnnotations(read_only_hint=True))
    def recall(
        subject_id: Annotated[SubjectId, Field(description="The subject.")],
        query: Annotated[
            Query | None,
            Field(
                description=(
                    "What the memory is needed for: the most relevant facts and events of every tier come too."
                )
            ),
        ] = None,
        k: Annotated[int, Field(ge=0, le=200, description="How many hits of the query.")] = 20,
        budget: Annotated[int | None, Field(ge=1, le=1_000_000, description="At most this many tokens.")] = None,
        context: Annotated[bool, Field(description="Events around each hit too.")] = True,
    ) -> Annotated[CallToolResult, RecallOut]:
        """What to know about a subject now: the rendered memory block to put in the prompt
        (the summary or raw memory, critical facts always)."""
        return tools.run(
            "read",
            lambda t: t.recall(subject_id, RecallIn(query=query, k=k, budget=budget, context=context)),
            text=lambda r: r.rendered,
        )

    @server.tool("guard", annotations=ToolAnnotations(read_only_hint=True))
    def guard(
        subject_id: Annotated[SubjectId, Field(description="The subject the action is for.")],
        action: Annotated[
            dict[str, Any],
            Field(
                description=(
                    'The action you are about to carry out, as a JSON object, e.g. {"items": [{"dish": "salad", '
                    '"ingredients": ["lettuce", "peanut dressing"]}]} or {"refund": {"amount": "40", '
                    '"currency": "USD"}}.'
                )
            ),
        ],
        recall_id: Annotated[
            str | None, Field(max_length=200, description=("The recall_id of the recall you based it on."))
        ] = None,
    ) -> Annotated[CallToolResult, GuardResult]:
        """Check a planned action against the subject's facts before carrying it out: allowed,
        or refused with each rule, field and fact (value, qualifiers, sources). Do not carry
        out a refused action."""
        return tools.run(
            "read", lambda t: t.guard(subject_id, GuardIn(action=action, recall_id=recall_id)), text=_verdict
        )

    @server.tool("forget", annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
    def forget(
        subject_id: Annotated[SubjectId, Field(description="The subject.")],
        kind: Annotated[Literal["event", "fact"], Field(description="What to erase.")],
        id: Annotated[ItemId, Field(description="The event id or the fact id.")],
        reason: Annotated[Reason, Field(description="Why (kept in the subject's log).")] = "",
    ) -> Annotated[CallToolResult, ForgetOut]:
        """Erase an event or a fact: its content is purged (id and hash kept), summaries built
        on it go stale; erasing an event takes the facts drawn only from it out of the active set."""

        def erase(t: TenantMemory) -> ForgetOut:
            if kind == "event":
                return ForgetOut(
                    subject_id=subject_id, forgotten="event", event=t.delete_event(subject_id, id, reason=reason)
                )
            return ForgetOut(subject_id=subject_id, forgotten="fact", fact=t.delete_fact(subject_id, id, reason=reason))

        return tools.run("write", erase)

    @server.tool("inspect", annotations=ToolAnnotations(read_only_hint=True))
    def inspect_subject(
        subject_id: Annotated[SubjectId, Field(description="The subject.")],
        predicate: Annotated[
            str | None,
            Field(min_length=1, max_length=200, pattern=r"^[^\x00]+$", description="Only facts of this predicate."),
        ] = None,
    ) -> Annotated[CallToolResult, InspectOut]:
        """A subject's active facts and unresolved conflicts, with its clock and published summary."""

        def look(t: TenantMemory) -> InspectOut:
            now = t.clock(subject_id)
            return InspectOut(
                subject_id=subject_id,
                clock=now.clock,
                alias=now.alias,
                facts=t.facts(subject_id, which="active", predicate=predicate),
                conflicts=t.conflicts(subject_id, unresolved_only=True),
            )

        return tools.run("read", look)

    return server


class _BearerGate:
    """ASGI middleware: an HTTP request passes only with ``Authorization: Bearer <secret>``
    (exactly that one header), and a message passes only if lossgate reads it
    (:func:`refusal`)."""

    def __init__(self, app: ASGIApp, secret: str) -> None:
        self.app = app
        self._expected = f"Bearer {secret}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        if len(sent) != 1 or not hmac.compare_digest(sent[0], self._expected):
            body = ApiError("unauthorized", "send the server's API key: Authorization: Bearer <key>").body()
            await _respond(
                send, 401, body.model_dump_json().encode(), [(b"www-authenticate", b'Bearer realm="lossgate"')]
            )
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        try:
            refused = refusal(raw.decode("utf-8"))
        except UnicodeDecodeError:
            refused = None  # the SDK answers what is not UTF-8
        if refused is not None:
            reply = refused.reply or {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": mcp_types.INVALID_REQUEST,
                    "message": refused.error.message,
                    "data": refused.error.body().model_dump(mode="json"),
                },
            }
            await _respond(send, 200 if "result" in reply else 400, json.dumps(reply).encode())
            return
        await self.app(scope, replayed(raw, receive), send)


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer[Any], secret: str, *, host: str = "127.0.0.1", path: str = "/mcp") -> ASGIApp:
    """The streamable HTTP application of ``server`` at ``path``, behind the key ``secret``."""
    return _BearerGate(server.streamable_http_app(streamable_http_path=path, host=host), secret)
