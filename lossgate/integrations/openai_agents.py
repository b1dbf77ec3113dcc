"""The OpenAI Agents SDK with lossgate memory: :class:`LossgateSession` and :func:`recall_tool`.

``LossgateSession(session_id, memory, tenant_id=..., subject_id=...)`` implements the SDK's
``Session`` protocol over the subject's raw layer. Each item the runner adds is one event,
its payload ``{"openai_agents": {"session": session_id, "item": item}, "session": session_id}``
(the top-level ``session`` groups the conversation's events into one period when memory is
consolidated by session), its text what the item says (up to 65,536 characters), so that
recall finds it:

=============================  ===============  ===============  ======================
item                           kind             actor            trust
=============================  ===============  ===============  ======================
``role: user``                 ``message``      ``user``         ``authenticated_user``
``role: system``/``developer`` ``system``       the role         ``system``
``role: assistant``, a call    ``message``      ``assistant``    ``tool``
a ``*_output`` (a tool's)      ``tool_result``  ``tool``         ``tool``
=============================  ===============  ===============  ======================

The model's own words get ``tool`` trust, as :meth:`~lossgate.Memory.add` gives them: a fact
drawn from them can forbid an action, never authorize one. An event holding the session's
payload that is not what the session writes for its item (its kind, actor or trust: an
untrusted event posing as a system message, or an item whose trust was changed since) is no
item of the session's.

``get_items`` returns the session's valid items in the order they were added (the newest
``limit``, or ``session_settings.limit``); ``pop_item`` deletes the newest with
:meth:`~lossgate.Memory.delete_event` (text and payload purged) and returns it;
``clear_session`` deletes every item of the session in one transaction. The memory calls
run in a worker thread.

``recall_tool(memory, tenant_id, subject_id)`` is a ``function_tool`` named ``recall``: the
agent passes a query and reads :meth:`~lossgate.RecallResult.render` of
:meth:`~lossgate.Memory.recall` (facts first, then the events that match), under a token
``budget``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from lossgate.api.memory import Memory
from lossgate.errors import InvalidInput
from lossgate.integrations import require
from lossgate.integrations.tagged import TaggedEvents, marked, searchable
from lossgate.model.records import Event, EventKind, NewEvent, Trust

require("agents", extra="openai-agents", framework="OpenAI Agents SDK")

from agents import FunctionTool, function_tool  # noqa: E402 - after the check that names the extra
from agents.memory import SessionSettings  # noqa: E402
from agents.memory.session_settings import resolve_session_limit  # noqa: E402

__all__ = ["LossgateSession", "recall_tool", "TAG"]

TAG = "openai_agents"  # the payload key of the session's events


class LossgateSession:
    """A session of the OpenAI Agents SDK (its ``Session`` protocol) kept in the raw layer of
    ``tenant_id``/``subject_id`` (see the module docstring). Several sessions may share a
    subject: each reads only its own items."""

    def __init__(
        self,
        session_id: str,
        memory: Memory,
        *,
        tenant_id: str,
        subject_id: str,
        session_settings: SessionSettings | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInput("a session id is a non-empty string")
        self.session_id = session_id
        self.session_settings = session_settings
        self.memory, self.tenant_id, self.subject_id = memory, tenant_id, subject_id
        self._events = TaggedEvents(
            memory,
            tenant_id,
            subject_id,
            TAG,
            writes=_writes,
            keep=lambda held: held.get("session") == session_id and "item" in held,
        )

    async def get_items(self, limit: int | None = None) -> list[Any]:
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted is not None and wanted < 0:
            raise InvalidInput(f"limit is at least 0, got {wanted}")
        items = [_item(e) for e in await asyncio.to_thread(self._events.valid)]
        return items if wanted is None else items[-wanted:] if wanted else []

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        events = [self._event(item) for item in items]
        await asyncio.to_thread(self.memory.append, events)

    async def pop_item(self) -> Any | None:
        def pop() -> Any | None:
            held = self._events.valid()
            if not held:
                return None
            newest = held[-1]
            self.memory.delete_event(
                self.tenant_id, self.subject_id, newest.event_id, reason="OpenAI Agents session: pop_item"
            )
            return _item(newest)

        return await asyncio.to_thread(pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._events.erase, "OpenAI Agents session: clear_session")

    def _event(self, item: Any) -> NewEvent:
        if not isinstance(item, dict):
            raise InvalidInput(f"a session item is a JSON object, not {type(item).__name__}")
        kind, actor, trust = _who(item)
        return NewEvent(
            tenant_id=self.tenant_id,
            subject_id=self.subject_id,
            event_id=f"oa-{uuid.uuid4().hex}",
            kind=kind,
            actor=actor,
            trust=trust,
            text=searchable(_said(item)),
            payload={TAG: {"session": self.session_id, "item": item}, "session": self.session_id},
        )


def recall_tool(
    memory: Memory, tenant_id: str, subject_id: str, *, budget: int | None = 2000, name: str = "recall"
) -> FunctionTool:
    """A ``function_tool`` recalling ``tenant_id``/``subject_id``'s memory for a query."""

    def recall(query: str) -> str:
        """Search the user's long-term memory: their facts, and what was said before that matches.

        Args:
            query: What you need to know, in a few words.
        """
        return memory.recall(tenant_id, subject_id, query=query, budget=budget).render()

    return function_tool(recall, name_override=name)


def _item(event: Event) -> Any:
    held = marked(event, TAG)
    assert held is not None  # kept by TaggedEvents only when it is
    return held["item"]


def _who(item: dict[str, Any]) -> tuple[EventKind, str, Trust]:
    """An item's kind, actor and trust (the module docstring's table)."""
    role, kind = item.get("role"), str(item.get("type") or "")
    if kind.endswith("_output"):
        return "tool_result", "tool", "tool"
    if role == "user":
        return "message", "user", "authenticated_user"
    if role in ("system", "developer"):
        return "system", role, "system"
    return "message", "assistant", "tool"


def _writes(held: dict[str, Any]) -> tuple[str, str, str] | None:
    """What the session writes for the item ``held`` holds (:func:`_who`)."""
    item = held.get("item")
    return _who(item) if isinstance(item, dict) else None


def _said(item: dict[str, Any]) -> str:
    """What an item says, for search: a message's text, a call's name and arguments, a
    tool's output."""
    kind = str(item.get("type") or "")
    if "content" in item and item.get("role"):
        return _text_of(item["content"])
    if kind.endswith("_output"):
        return _text_of(item.get("output", ""))
    if "name" in item and "arguments" in item:
        return f"{item['name']}({item['arguments']})"
    return ""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return json.dumps(content, ensure_ascii=False, default=str)
