"""Chat messages as raw events: what :meth:`lossgate.Memory.add` appends.

A message is a plain string (said by the user) or a ``{"role": ..., "content": ...}``
object, as chat APIs write them, with an optional ``name`` (who said it: the event's actor,
else the role). Each becomes one :class:`~lossgate.model.records.NewEvent` with a generated id and
the current time, its kind, actor and trust by its role:

* ``user``: a ``message`` by ``user``, trust ``authenticated_user``;
* ``assistant``: a ``message`` by ``assistant``, trust ``tool``;
* ``system`` and ``developer``: a ``system`` event by ``system`` (or ``developer``), trust ``system``;
* ``tool``: a ``tool_result`` by ``tool``, trust ``tool``.

What the assistant said is a model's output, not the user's word nor the operator's: it is
kept and recalled like any event, and a fact drawn from it has the authority ``tool``,
which never authorizes an action (:mod:`lossgate.guard`), though it may forbid one. Any other role,
another key, a content that is not a string: :class:`~lossgate.errors.InvalidInput` naming
the message, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from lossgate.errors import InvalidInput, InvalidRecord
from lossgate.model.records import EventKind, NewEvent, Trust

__all__ = ["ChatMessage", "Role", "events_of"]

Role = Literal["user", "assistant", "system", "developer", "tool"]

_AS: dict[str, tuple[EventKind, Trust]] = {
    "user": ("message", "authenticated_user"),
    "assistant": ("message", "tool"),
    "system": ("system", "system"),
    "developer": ("system", "system"),
    "tool": ("tool_result", "tool"),
}


class ChatMessage(BaseModel):
    """One chat message, as :meth:`lossgate.Memory.add` takes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: StrictStr
    name: StrictStr | None = None


def events_of(
    tenant_id: str, subject_id: str, messages: Iterable[str | dict[str, Any] | ChatMessage]
) -> list[NewEvent]:
    """The events ``messages`` make, in order (see the module). Raises :class:`InvalidInput`
    naming the first message that is not one (by its position, from 0)."""
    if isinstance(messages, (str, bytes, dict, ChatMessage)) or not isinstance(messages, Iterable):
        raise InvalidInput(
            f"messages is a list of messages (strings or {{'role', 'content'}} objects), "
            f"not {type(messages).__name__}: wrap a single message in a list"
        )
    out = []
    for i, item in enumerate(messages):
        message = _message(i, item)
        kind, trust = _AS[message.role]
        try:
            out.append(
                NewEvent(
                    tenant_id=tenant_id,
                    subject_id=subject_id,
                    kind=kind,
                    trust=trust,
                    actor=message.name if message.name is not None else message.role,
                    text=message.content,
                )
            )
        except InvalidRecord as exc:
            first = exc.errors(include_url=False)[0]
            field = {"text": "content", "actor": "name"}.get(str(first["loc"][0]), str(first["loc"][0]))
            raise InvalidInput(f"message {i}: {field}: {first['msg']}") from None
    if not out:
        raise InvalidInput("messages is empty: nothing to add")
    return out


def _message(i: int, item: Any) -> ChatMessage:
    if isinstance(item, ChatMessage):
        return item
    if isinstance(item, str):
        item = {"role": "user", "content": item}
    if not isinstance(item, dict):
        raise InvalidInput(f"message {i}: a string or an object with role and content, not {type(item).__name__}")
    try:
        return ChatMessage.model_validate(item)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "message"
        raise InvalidInput(f"message {i}: {where}: {first['msg']}") from None
