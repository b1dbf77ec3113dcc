"""The events an integration wrote for one subject, read back as they grow.

Each integration marks its events with a key of their payload (``{"langgraph": {...}}``)
and reads them back through :class:`TaggedEvents`: the subject's events holding that key
that are what the integration writes for it (the kind, actor and trust it gives such an item:
anyone who may append may write the key, so an untrusted event carrying a system message's
payload is no item of the integration's, nor is an item whose trust was changed since), valid
or revoked (a revoked event keeps its text, which a deletion must still erase), in seq
order. A read asks the store only for the events after the newest seq it has seen while the
subject's ``input_epoch`` stays where it was; a deletion, revocation or trust change moves
the epoch (in whichever process it ran), and the next read loads the subject again. Events
are appended under the subject's clock lock, in seq order, so one seen at seq ``n`` means
every event before it is already there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from lossgate.api.memory import Memory
from lossgate.model.limits import MAX_TEXT_CHARS
from lossgate.model.records import Event

__all__ = ["TaggedEvents", "marked", "searchable"]


def searchable(text: str) -> str:
    """``text`` as an event's text: its first :data:`~lossgate.model.limits.MAX_TEXT_CHARS`
    characters (the payload keeps the whole item; the text is what recall searches and shows)."""
    return text[:MAX_TEXT_CHARS]


def marked(event: Event, tag: str) -> dict[str, Any] | None:
    """The object ``event``'s payload holds under ``tag``, or ``None`` (a deleted event's
    payload is gone; another writer's may hold something else there)."""
    held = (event.payload or {}).get(tag)
    return held if isinstance(held, dict) else None


class TaggedEvents:
    """The events of ``tenant_id``/``subject_id`` whose payload holds ``tag`` (and which
    ``keep`` accepts, when given) and whose kind, actor and trust are those ``writes`` gives
    what it holds, kept up to date by :meth:`read`. Safe to share between threads."""

    def __init__(
        self,
        memory: Memory,
        tenant_id: str,
        subject_id: str,
        tag: str,
        writes: Callable[[dict[str, Any]], tuple[str, str, str] | None],
        keep: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self.memory, self.tenant_id, self.subject_id, self.tag = memory, tenant_id, subject_id, tag
        self._keep, self._writes = keep, writes
        self._lock = threading.Lock()
        self._epoch: int | None = None
        self._seen = 0  # the newest seq read
        self._events: dict[str, Event] = {}

    def read(self) -> list[Event]:
        """The tagged events, valid or revoked, oldest first, as the store holds them now."""
        with self._lock:
            clock = self.memory.admin.clock(self.tenant_id, self.subject_id)
            if clock.input_epoch != self._epoch:
                # read before the events: a deletion racing this read moves the epoch past it
                self._epoch, self._seen, self._events = clock.input_epoch, 0, {}
            for event in self.memory.events(
                self.tenant_id, self.subject_id, states=["valid", "revoked"], after_seq=self._seen
            ):
                self._seen = max(self._seen, event.seq)
                held = marked(event, self.tag)
                if (
                    held is not None
                    and (self._keep is None or self._keep(held))
                    and self._writes(held) == (event.kind, event.actor, event.trust)
                ):
                    self._events[event.event_id] = event
            return list(self._events.values())

    def erase(self, reason: str) -> None:
        """Delete every tagged event (:meth:`read`: valid or revoked; text and payload purged),
        in one transaction."""
        held = self.read()
        if not held:
            return
        with self.memory.transaction() as ledger:
            for event in held:
                ledger.delete_event(self.tenant_id, self.subject_id, event.event_id, reason=reason)

    def valid(self) -> list[Event]:
        """:meth:`read`, the valid events only (what the subject's authorized view holds)."""
        return [e for e in self.read() if e.state == "valid"]
