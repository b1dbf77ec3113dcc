"""PydanticAI agents with lossgate memory: :func:`memory_toolset` and :class:`LossgateMessageHistory`.

``memory_toolset(memory, tenant_id, subject_id)`` is a ``FunctionToolset`` of four tools on
that subject's memory, for ``Agent(..., toolsets=[...])`` or ``agent.run(..., toolsets=[...])``:

* ``remember(text)``: appends one note, an event (the toolset's ``actor`` and ``trust``: by
  default the agent, ``tool`` trust, as :meth:`~lossgate.Memory.add` gives a model's words),
  and returns its ``event_id``;
* ``recall(query=None)``: :meth:`~lossgate.Memory.recall` under the toolset's token
  ``budget``: the ``recall_id``, the block :meth:`~lossgate.RecallResult.render` prints
  (``memory``), and the facts (id, predicate) and events (id, text) it holds, so that
  ``forget`` can name one;
* ``forget(kind, id, reason="")``: :meth:`~lossgate.Memory.delete_event` (``kind="event"``) or
  :meth:`~lossgate.Memory.delete_fact` (``"fact"``): the content is purged, summaries built on
  it go stale. What the model may forget is the toolset's ``forget``: ``"notes"`` (the
  default) the notes this toolset remembered only, so that a model misled by what it read
  cannot erase the user's allergy the guard reads; ``"any"`` any event or fact of the subject;
  ``None`` leaves the tool out;
* ``guard(action, recall_id=None)``: :meth:`~lossgate.Memory.guard`, the planned action checked
  against the subject's facts: ``allowed``, or each refusal with its rule, field, reason and
  fact. The result is stored, tied to the recall named.

A lossgate :class:`~lossgate.errors.InvalidInput` or :class:`~lossgate.errors.NotFound` (the
model named an unknown id, a malformed action) is handed back to the model as PydanticAI's
``ModelRetry``, so it can call again; any other error ends the run.

``LossgateMessageHistory(memory, tenant_id=..., subject_id=..., conversation_id=...)`` keeps an
agent's messages in the subject's raw layer, one event per message, its payload
``{"pydantic_ai": {"conversation": id, "message": ...}, "session": id}`` (the message as
``ModelMessagesTypeAdapter`` writes it as JSON), its text what the message says (user
prompts, text answers, tool calls and returns; up to 65,536 characters). A request holding a
tool's return (or a retry prompt) is a ``tool_result`` of actor ``tool`` and ``tool`` trust;
one holding a user prompt is a ``message`` of the ``user`` (``authenticated_user``); another
request (instructions only) is ``system``; a response is the ``assistant``'s (``tool``
trust, as above). ``load()`` returns the conversation's valid messages in order (the last ``limit``),
for ``message_history=``; ``save(result.new_messages())`` appends them; ``clear()`` deletes
every message of the conversation. ``aload``, ``asave`` and ``aclear`` run them in a worker
thread.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from lossgate.api.memory import Memory
from lossgate.errors import InvalidInput, NotFound
from lossgate.integrations import require
from lossgate.integrations.tagged import TaggedEvents, marked, searchable
from lossgate.model.derived_records import GuardResult, RecallResult
from lossgate.model.records import Event, EventKind, NewEvent, Trust

require("pydantic_ai", extra="pydantic-ai", framework="PydanticAI")

from pydantic_ai import ModelRetry, Tool  # noqa: E402 - after the check that names the extra
from pydantic_ai.messages import (  # noqa: E402
    BaseToolCallPart,
    BaseToolReturnPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

__all__ = [
    "LossgateMessageHistory",
    "memory_toolset",
    "TAG",
    "Remembered",
    "Recalled",
    "RecalledFact",
    "RecalledEvent",
    "Forgotten",
    "Guarded",
    "Refused",
]

TAG = "pydantic_ai"  # the payload key of the history's events
T = TypeVar("T")


class Remembered(BaseModel):
    event_id: str


class RecalledFact(BaseModel):
    fact_id: str
    predicate: str


class RecalledEvent(BaseModel):
    event_id: str
    text: str


class Recalled(BaseModel):
    recall_id: str
    memory: str  # the rendered block
    facts: list[RecalledFact]  # what the block holds, by id, for forget
    events: list[RecalledEvent]


class Forgotten(BaseModel):
    kind: Literal["event", "fact"]
    id: str
    state: str  # the event's state or the fact's status after the deletion


class Refused(BaseModel):
    rule: str
    field: str
    detail: str
    fact_id: str | None


class Guarded(BaseModel):
    guard_id: str
    allowed: bool
    refusals: list[Refused]


def memory_toolset(
    memory: Memory,
    tenant_id: str,
    subject_id: str,
    *,
    budget: int | None = 2000,
    actor: str = "agent",
    trust: Trust = "tool",
    forget: Literal["notes", "any"] | None = "notes",
) -> FunctionToolset[Any]:
    """The ``remember``, ``recall``, ``forget`` and ``guard`` tools on one subject's memory
    (see the module docstring)."""
    if forget not in ("notes", "any", None):
        raise InvalidInput(f"forget is 'notes', 'any' or None, not {forget!r}")
    scope = forget

    def remember(text: str) -> Remembered:
        """Keep a note in the user's long-term memory.

        Args:
            text: What to remember, in one or a few sentences.
        """
        event = _retry_on_bad_input(
            lambda: NewEvent(
                tenant_id=tenant_id,
                subject_id=subject_id,
                event_id=f"pa-{uuid.uuid4().hex}",
                actor=actor,
                trust=trust,
                text=text,
                payload={NOTE: True},
            )
        )
        _retry_on_bad_input(lambda: memory.append([event]))
        return Remembered(event_id=event.event_id)

    def recall(query: str | None = None) -> Recalled:
        """Read the user's long-term memory: their facts first, then what was said that matches.

        Args:
            query: What you need to know, in a few words; none for the summary and the latest events.
        """
        found: RecallResult = _retry_on_bad_input(
            lambda: memory.recall(tenant_id, subject_id, query=query, budget=budget)
        )
        return Recalled(
            recall_id=found.record.recall_id,
            memory=found.render(),
            facts=[RecalledFact(fact_id=f.fact_id, predicate=f.predicate) for f in found.facts],
            events=[RecalledEvent(event_id=e.event_id, text=e.text or "") for e in found.events],
        )

    def forget_tool(kind: Literal["event", "fact"], id: str, reason: str = "") -> Forgotten:
        """Erase an event or a fact from the user's memory for good (its text is purged).

        Args:
            kind: "event" or "fact".
            id: The event_id or fact_id, as recall listed it.
            reason: Why (kept in the memory's log).
        """
        if scope == "notes" and not _a_note(memory, tenant_id, subject_id, kind, id, actor, trust):
            raise ModelRetry(f"only the notes you remembered can be forgotten; {kind} {id!r} is not one")
        if kind == "event":
            event = _retry_on_bad_input(lambda: memory.delete_event(tenant_id, subject_id, id, reason=reason))
            return Forgotten(kind="event", id=id, state=event.state)
        fact = _retry_on_bad_input(lambda: memory.delete_fact(tenant_id, subject_id, id, reason=reason))
        return Forgotten(kind="fact", id=id, state=fact.status)

    def guard(action: dict[str, Any], recall_id: str | None = None) -> Guarded:
        """Check an action you plan against the user's facts before carrying it out. Do not carry
        out a refused action.

        Args:
            action: The action as a JSON object, e.g. {"items": [{"dish": "salad", "ingredients": ["lettuce"]}]}.
            recall_id: The recall_id of the recall you based it on.
        """
        result: GuardResult = _retry_on_bad_input(
            lambda: memory.guard(tenant_id, subject_id, action, recall_id=recall_id)
        )
        return Guarded(
            guard_id=result.guard_id,
            allowed=result.allowed,
            refusals=[Refused(rule=r.rule, field=r.field, detail=r.detail, fact_id=r.fact_id) for r in result.refusals],
        )

    tools: list[Tool[Any]] = [Tool(remember), Tool(recall), Tool(guard)]
    if scope is not None:
        tools.insert(2, Tool(forget_tool, name="forget"))
    return FunctionToolset(tools)


NOTE = "pydantic_ai_note"  # the payload key of a note the toolset remembered


def _a_note(
    memory: Memory, tenant_id: str, subject_id: str, kind: str, event_id: str, actor: str, trust: Trust
) -> bool:
    """Whether ``event_id`` is a note this toolset remembered (its payload's mark, as it wrote it)."""
    if kind != "event":
        return False
    found = memory.events(tenant_id, subject_id, ids=[event_id], states=["valid"])
    return (
        bool(found)
        and (found[0].payload or {}).get(NOTE) is True
        and (found[0].kind, found[0].actor, found[0].trust) == ("message", actor, trust)
    )


def _retry_on_bad_input(call: Callable[[], T]) -> T:
    """``call()``, a lossgate refusal of the model's arguments handed back to the model."""
    try:
        return call()
    except (InvalidInput, NotFound) as exc:
        raise ModelRetry(str(exc)) from exc


class LossgateMessageHistory:
    """One conversation's messages in the raw layer of ``tenant_id``/``subject_id`` (see the
    module docstring). Several conversations may share a subject: each reads only its own."""

    def __init__(self, memory: Memory, *, tenant_id: str, subject_id: str, conversation_id: str) -> None:
        if not isinstance(conversation_id, str) or not conversation_id:
            raise InvalidInput("a conversation id is a non-empty string")
        self.memory, self.tenant_id, self.subject_id = memory, tenant_id, subject_id
        self.conversation_id = conversation_id
        self._events = TaggedEvents(
            memory,
            tenant_id,
            subject_id,
            TAG,
            writes=_writes,
            keep=lambda held: held.get("conversation") == conversation_id and isinstance(held.get("message"), dict),
        )

    def load(self, limit: int | None = None) -> list[ModelMessage]:
        """The conversation's valid messages, oldest first (the last ``limit`` of them)."""
        if limit is not None and limit < 0:
            raise InvalidInput(f"limit is at least 0, got {limit}")
        events = self._events.valid()
        if limit is not None:
            events = events[-limit:] if limit else []
        return ModelMessagesTypeAdapter.validate_python([_message(e) for e in events])

    def save(self, messages: Sequence[ModelMessage]) -> list[str]:
        """Append ``messages`` (a run's ``new_messages()``) in one transaction; their event ids."""
        if not messages:
            return []
        stored = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
        events = []
        for message, as_json in zip(messages, stored, strict=False):
            kind, actor, trust = _who(message)
            events.append(
                NewEvent(
                    tenant_id=self.tenant_id,
                    subject_id=self.subject_id,
                    event_id=f"pa-{uuid.uuid4().hex}",
                    kind=kind,
                    actor=actor,
                    trust=trust,
                    text=searchable(_said(message)),
                    payload={
                        TAG: {"conversation": self.conversation_id, "message": as_json},
                        "session": self.conversation_id,
                    },
                )
            )
        self.memory.append(events)
        return [e.event_id for e in events]

    def clear(self) -> None:
        """Delete every message of the conversation (text and payload purged), in one transaction."""
        self._events.erase("PydanticAI message history: cleared")

    async def aload(self, limit: int | None = None) -> list[ModelMessage]:
        return await asyncio.to_thread(self.load, limit)

    async def asave(self, messages: Sequence[ModelMessage]) -> list[str]:
        return await asyncio.to_thread(self.save, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)


def _message(event: Event) -> dict[str, Any]:
    held = marked(event, TAG)
    assert held is not None  # kept by TaggedEvents only when it is
    message: dict[str, Any] = held["message"]
    return message


def _who(message: ModelMessage) -> tuple[EventKind, str, Trust]:
    """A message's kind, actor and trust (the module docstring)."""
    if isinstance(message, ModelResponse):
        return "message", "assistant", "tool"
    if any(isinstance(p, (BaseToolReturnPart, RetryPromptPart)) for p in message.parts):
        return "tool_result", "tool", "tool"  # the lower trust, when a user prompt rides with it
    if any(isinstance(p, UserPromptPart) for p in message.parts):
        return "message", "user", "authenticated_user"
    return "system", "system", "system"


def _writes(held: dict[str, Any]) -> tuple[str, str, str] | None:
    """What the history writes for the message ``held`` holds (:func:`_who`)."""
    try:
        (message,) = ModelMessagesTypeAdapter.validate_python([held.get("message")])
    except ValueError:
        return None
    return _who(message)


def _said(message: ModelMessage) -> str:
    """What a message says, for search: user prompts, text answers, tool calls and returns."""
    said: list[str] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            content = part.content
            said += [content] if isinstance(content, str) else [c for c in content if isinstance(c, str)]
        elif isinstance(part, TextPart):
            said.append(part.content)
        elif isinstance(part, BaseToolCallPart):
            said.append(f"{part.tool_name}({part.args_as_json_str()})")
        elif isinstance(part, BaseToolReturnPart):
            said.append(part.model_response_str())
    return "\n".join(s for s in said if s)
