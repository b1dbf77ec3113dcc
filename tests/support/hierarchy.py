"""The subject of the hierarchy tests: four sessions on four days, each about the size of
the compressor's context (``CONTEXT`` tokens), with the reference subject's facts drawn
from them (:func:`world`). Also used by the tail-growth and loss-aware recall tests."""

from __future__ import annotations

from datetime import timedelta

from lossgate import NewEvent
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.values import Money
from tests.support.world import AT, SMALL_TALK, T, U, fact

CONTEXT = 160
HIER = ConsolidationConfig(hierarchy=HierarchyConfig(context_tokens=CONTEXT))
# What each session says besides small talk, and the fact drawn from it.
SAID = {
    1: ("e-allergy", "I am allergic to peanuts, not merely avoiding them."),
    2: ("e-refund", "You may refund up to 50.00 USD after supervisor review."),
    3: ("e-seats", "We have 40 seats on the plan."),
    4: ("e-tz", "Please show every time in UTC-05:00."),
}


def day(session: int):
    return AT + timedelta(days=7 * session)


def session_events(session: int, n: int, *, subject: str = U, start: int = 0, p: str = "") -> list[NewEvent]:
    """``n`` turns of small talk in ``session`` (its own day), then, in the first batch, the
    turn the session's fact is drawn from (ids prefixed with ``p``: they are the tenant's)."""
    out = [
        NewEvent(
            tenant_id=T,
            subject_id=subject,
            event_id=f"{p}s{session}-{start + i}",
            actor="user",
            text=f"{SMALL_TALK[(start + i) % len(SMALL_TALK)]} today",
            payload={"session": session},
            occurred_at=day(session) + timedelta(minutes=start + i),
        )
        for i in range(n)
    ]
    if start == 0:
        event_id, text = SAID[session]
        out.append(
            NewEvent(
                tenant_id=T,
                subject_id=subject,
                event_id=p + event_id,
                text=text,
                actor="user",
                payload={"session": session},
                occurred_at=day(session) + timedelta(minutes=30),
            )
        )
    return out


def world(memory, subject: str = U, p: str = "") -> None:
    """Four sessions, each about the compressor's context, with the reference subject's facts in them."""
    for session in SAID:
        memory.append(session_events(session, 12, subject=subject, p=p))
    memory.assert_facts(
        [
            fact(
                f"{p}f-allergy",
                "food.peanuts_allowed",
                False,
                [f"{p}e-allergy"],
                subject=subject,
                qualifiers={"basis": "allergy", "severity": "critical"},
            ),
            fact(
                f"{p}f-refund",
                "refund.limit",
                Money(amount="50.00", currency="USD"),
                [f"{p}e-refund"],
                subject=subject,
                qualifiers={"condition": "after supervisor review"},
                authority="system",
            ),
            fact(f"{p}f-seats", "subscription.seats", 40, [f"{p}e-seats"], subject=subject),
            fact(f"{p}f-tz", "timezone", "UTC-05:00", [f"{p}e-tz"], subject=subject),
        ]
    )
