"""The parts of a hierarchical consolidation: a subject's events split on natural boundaries.

A part is what one compressor request carries (an input too large for
one pass is split, never truncated). Events are grouped by

* **session** (the default): the ``session`` key of an event's payload, where the
  application records one (LoCoMo's ingest does): a number names the part ``session 3``,
  text groups the events but names the part by its first event's seq (``session @1234``:
  a label is content, and a part's key outlives a deletion in its manifest); an event
  without one falls back to its calendar day;
* **day**, **week** (ISO) or **month**: the period of the event's ``occurred_at``, in the
  event's own offset.

A group whose events take more than ``context_tokens`` (counted on the lines a compressor
is shown, :func:`~lossgate.model.wording.event_line`) is cut, between whole events, into chunks
at boundaries its content defines (:func:`_by_size`), each keyed by its first event's seq
(``session 3 #1234``). One event larger than the context is a part of its own: it is never
cut (a cut could fall inside a number). Parts are ordered by the time of their first event.

Appending at the end of a subject changes only its last part, and an edit inside a period
only that period's part: the other parts keep their inputs, hence their fingerprint, and
:mod:`lossgate.consolidate.hierarchy` reuses their artifacts.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from lossgate.model.records import Event
from lossgate.model.wording import event_line, one_line

__all__ = ["SplitBy", "Part", "period_key", "resume", "split", "SPLITS"]

SplitBy = Literal["session", "day", "week", "month"]
SPLITS: tuple[SplitBy, ...] = ("session", "day", "week", "month")
_LABEL = "session label:"


@dataclass(frozen=True)
class Part:
    """Consecutive events of one period (seq order), under a key that names the period."""

    key: str
    events: tuple[Event, ...]

    @property
    def first_at(self) -> datetime:
        return min(e.occurred_at for e in self.events)

    @property
    def last_at(self) -> datetime:
        return max(e.occurred_at for e in self.events)


def period_key(event: Event, by: SplitBy) -> str:
    """The period ``event`` belongs to, as a grouping key: ``session 3``, ``session label:<text>``
    (named by :func:`split`, never shown), ``2023-05-08``, ``2023-W19`` or ``2023-05``."""
    if by == "session":
        session = (event.payload or {}).get("session")
        if isinstance(session, int) and not isinstance(session, bool):
            return f"session {session}"
        if isinstance(session, str) and session.strip():
            label = one_line(session)
            return (
                f"session {label}" if label.isascii() and label.isdigit() and len(label) <= 18 else f"{_LABEL}{label}"
            )
        by = "day"
    at = event.occurred_at
    if by == "day":
        return at.date().isoformat()
    if by == "week":
        year, week, _ = at.isocalendar()
        return f"{year}-W{week:02d}"
    return f"{at.year:04d}-{at.month:02d}"


def split(events: Iterable[Event], *, by: SplitBy, context_tokens: int, count: Callable[[str], int]) -> list[Part]:
    """The parts of ``events`` (see the module docstring)."""
    groups: dict[str, list[Event]] = {}
    for event in sorted(events, key=lambda e: e.seq):
        groups.setdefault(period_key(event, by), []).append(event)
    parts = []
    for key, group in groups.items():
        # A session named by text is content (a deletion purges its payload), and a part's key
        # stays in manifests: such a session is named by the seq of its first event instead.
        name = f"session @{group[0].seq}" if key.startswith(_LABEL) else key
        parts += _by_size(name, group, context_tokens, count)
    return sorted(parts, key=lambda p: (p.first_at, p.events[0].seq))


def resume(
    name: str, head: Sequence[Event], events: Sequence[Event], *, context_tokens: int, count: Callable[[str], int]
) -> list[Part]:
    """The chunks of a period already cut, from one of its chunk boundaries on: what
    :func:`split` cuts of the same period's events from that boundary on, read without the
    chunks before it. ``name`` is the period's key, ``head`` its first events (at least those
    that first exceed the context, or all of them: they set the stride), ``events`` the
    events from the boundary on, in seq order. A boundary depends only on the stride and the
    events since the one before, so the chunks before this one are left as they are."""
    head_costs = [count(event_line(e)) + 1 for e in head]
    costs = [count(event_line(e)) + 1 for e in events]
    return _chunks(
        name, list(events), costs, _stride(head_costs, context_tokens), context_tokens, first_seq=head[0].seq
    )


def _by_size(key: str, events: list[Event], context_tokens: int, count: Callable[[str], int]) -> list[Part]:
    """One part, or chunks of at most ``context_tokens`` (an event larger alone is a chunk).

    Chunk boundaries are defined by content, so that a change stays local: a chunk may end
    only before an event whose content hash is 0 modulo ``m`` (the stride), a power of two
    sized so that a run between two such events takes half the context to the whole of it on
    average, and a run longer than the context is cut greedily. Removing or adding one event
    moves only the boundaries of its own run, and a chunk's key is that of its first event
    (``session 3 #1234``), so the other chunks keep their inputs, key and fingerprint. The
    stride is measured on the period's first events (those that first exceed the context),
    so that appending never moves it: a period grows by its last chunk (:func:`resume`). A
    period is cut only when its events take more than the context: its stride is then
    always measured on a prefix that does."""
    lines = [event_line(e) for e in events]
    # A token is at least one byte: a group of fewer bytes than the context fits uncounted.
    if sum(len(line.encode("utf-8")) + 1 for line in lines) <= context_tokens:
        return [Part(key, tuple(events))]
    costs = [count(line) + 1 for line in lines]
    if sum(costs) <= context_tokens:
        return [Part(key, tuple(events))]
    return _chunks(key, events, costs, _stride(costs, context_tokens), context_tokens, first_seq=events[0].seq)


def _stride(costs: Sequence[int], context_tokens: int) -> int:
    """The stride ``m`` of a period whose first events cost ``costs``: measured on those up to
    the first that exceeds the context (all of them, if none does)."""
    used, n = 0, 0
    for n, cost in enumerate(costs, 1):  # noqa: B007 - read after the loop
        used += cost
        if used > context_tokens:
            break
    per_event = used / max(1, n)
    return 1 << max(0, int(math.log2(max(1.0, context_tokens / max(1.0, per_event)))))


def _chunks(
    name: str, events: list[Event], costs: Sequence[int], m: int, context_tokens: int, *, first_seq: int
) -> list[Part]:
    """``events`` cut at content-defined boundaries of stride ``m`` (see :func:`_by_size`),
    the first chunk starting at the first event; a chunk is keyed ``name``, if it starts at
    the period's first event (seq ``first_seq``), else ``name #<seq of its first event>``."""
    chunks: list[list[Event]] = [[]]
    used = 0
    for event, cost in zip(events, costs, strict=False):
        anchor = m == 1 or int(hashlib.sha256(event.content_hash.encode()).hexdigest()[:8], 16) % m == 0
        if chunks[-1] and (used + cost > context_tokens or anchor):
            chunks.append([])
            used = 0
        chunks[-1].append(event)
        used += cost
    return [Part(name if chunk[0].seq == first_seq else f"{name} #{chunk[0].seq}", tuple(chunk)) for chunk in chunks]
