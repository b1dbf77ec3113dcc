"""Helpers of the tail-growth tests: turns of small talk on a session's day, the published
head, and what a full plan of the current state would cut (the fingerprints its parts
would have), which every tail-grown root must match."""

from __future__ import annotations

from datetime import timedelta

from lossgate import NewEvent
from lossgate.consolidate.hierarchy import plan
from lossgate.consolidate.selection import select
from lossgate.consolidate.tokens import default_counter
from tests.support.hierarchy import HIER, day
from tests.support.world import SMALL_TALK, T, U


def turns(session: int, n: int, *, start: int = 0) -> list[NewEvent]:
    """``n`` turns of small talk in ``session``, on its own day."""
    return [
        NewEvent(
            tenant_id=T,
            subject_id=U,
            event_id=f"s{session}-{start + i}",
            actor="user",
            text=f"{SMALL_TALK[(start + i) % len(SMALL_TALK)]} on day {session}",
            payload={"session": session},
            occurred_at=day(session) + timedelta(minutes=start + i),
        )
        for i in range(n)
    ]


def head(memory):
    """The subject's published root."""
    alias = memory.admin.alias(T, U)
    return memory.admin.artifact(T, U, alias.artifact_id)


def consolidated(memory, config=HIER):
    """Consolidate, insist it published, and return the new head."""
    attempt = memory.consolidate(T, U, config=config)
    assert attempt.status == "published", (attempt.status, attempt.violations, attempt.error, attempt.reason)
    return head(memory)


def full_plan(memory, config=HIER):
    """What a full plan of the current state would cut (the fingerprints of its parts)."""
    registry = memory.admin.registry
    root = head(memory)
    with memory.store.read() as tx:
        sel = select(tx, T, U, registry, incremental=False)
        settings = config.hierarchy.settings(root.manifest.tree, None)
        tree = plan(
            tx,
            sel,
            root,
            settings,
            compressor="deterministic@1",
            registry=registry,
            count=default_counter(),
            reuse=False,
        )
    return [job.fingerprint for job in tree.parts]


def fingerprints(memory, root):
    """The fingerprints of ``root``'s parts, in order."""
    return [memory.admin.artifact(T, U, c).manifest.part.fingerprint for c in root.manifest.children]
