"""The seeded world of the consolidation scenarios: tenant ``acme``, its subjects ``user-17``
and ``user-22``, the reference subject's facts (:func:`seed_world`), small talk to pad a
history with, and the queries the scenarios ask of the result. Used against any memory,
on any store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from lossgate import Money, NewEvent, NewFact
from lossgate.consolidate.pipeline import ConsolidationConfig

T, U, V = "acme", "user-17", "user-22"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
# When the reference subject of tests/conftest.py (``reference_memory``) spoke.
REFERENCE_AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)

# Small talk with no digits, dates, names or negations: the prose fact diff finds no
# atoms in it, so dropping it under a budget is not even a recorded loss.
SMALL_TALK = (
    "the weather is lovely and the garden looks great",
    "thanks, that was a nice chat about music",
    "could you remind me what we talked about earlier",
    "the coffee here is really good this morning",
    "we should plan something fun with the team soon",
    "i enjoyed the film everyone was talking about",
)


# -- helpers -------------------------------------------------------------------------------


def ev(event_id: str, text: str, *, subject: str = U, tenant: str = T, **kw) -> NewEvent:
    return NewEvent(tenant_id=tenant, subject_id=subject, event_id=event_id, text=text, occurred_at=AT, **kw)


def fact(fact_id: str | None, predicate: str, value, sources, *, subject: str = U, tenant: str = T, **kw) -> NewFact:
    return NewFact(
        tenant_id=tenant,
        subject_id=subject,
        fact_id=fact_id,
        predicate=predicate,
        value=value,
        source_event_ids=tuple(sources),
        **kw,
    )


def chatter(memory, prefix: str, n: int, *, subject: str = U, tenant: str = T) -> list[str]:
    """Append ``n`` small-talk events; return their ids."""
    ids = [f"{prefix}-{i}" for i in range(n)]
    memory.append([ev(i, SMALL_TALK[k % len(SMALL_TALK)], subject=subject, tenant=tenant) for k, i in enumerate(ids)])
    return ids


def fill_to(memory, high_water: int, prefix: str, *, subject: str = U, tenant: str = T) -> None:
    """Append small talk until the subject's clock reads ``high_water``."""
    missing = high_water - memory.admin.clock(tenant, subject).high_water
    assert missing >= 0
    chatter(memory, prefix, missing, subject=subject, tenant=tenant)
    assert memory.admin.clock(tenant, subject).high_water == high_water


def seed_world(memory, *, subject: str = U, tenant: str = T, p: str = "") -> dict[str, str]:
    """The reference subject: a critical allergy (negation + qualifiers), a refund limit
    (money + condition), a seat count (exact int), a timezone and a disposable topic."""
    memory.append(
        [
            ev(f"{p}e-allergy", "I am allergic to peanuts, not merely avoiding them.", subject=subject, tenant=tenant),
            ev(
                f"{p}e-refund",
                "You may refund up to 50.00 USD after supervisor review.",
                subject=subject,
                tenant=tenant,
                actor="supervisor",
                trust="system",
            ),
            ev(f"{p}e-seats", "We have 40 seats on the plan.", subject=subject, tenant=tenant),
            ev(f"{p}e-tz", "Please show every time in UTC-05:00.", subject=subject, tenant=tenant),
            ev(f"{p}e-topic", "mostly we chatted about jazz", subject=subject, tenant=tenant),
        ]
    )
    memory.assert_facts(
        [
            fact(
                f"{p}f-allergy",
                "food.peanuts_allowed",
                False,
                [f"{p}e-allergy"],
                subject=subject,
                tenant=tenant,
                qualifiers={"basis": "allergy", "severity": "critical"},
            ),
            fact(
                f"{p}f-refund",
                "refund.limit",
                Money(amount=Decimal("50.00"), currency="USD"),
                [f"{p}e-refund"],
                subject=subject,
                tenant=tenant,
                qualifiers={"condition": "after supervisor review"},
                authority="system",
            ),
            fact(f"{p}f-seats", "subscription.seats", 40, [f"{p}e-seats"], subject=subject, tenant=tenant),
            fact(f"{p}f-tz", "timezone", "UTC-05:00", [f"{p}e-tz"], subject=subject, tenant=tenant),
            fact(f"{p}f-topic", "chat.topic", "jazz", [f"{p}e-topic"], subject=subject, tenant=tenant),
        ]
    )
    return {
        "allergy": f"{p}f-allergy",
        "refund": f"{p}f-refund",
        "seats": f"{p}f-seats",
        "tz": f"{p}f-tz",
        "topic": f"{p}f-topic",
    }


def move_timezone(memory, *, subject: str = U, tenant: str = T):
    """The user moved: supersede UTC-05:00 with UTC+01:00."""
    memory.append([ev("e-tz2", "I moved to Lisbon, use UTC+01:00 from now on.", subject=subject, tenant=tenant)])
    return memory.supersede(
        tenant, subject, "f-tz", fact("f-tz-2", "timezone", "UTC+01:00", ["e-tz2"], subject=subject, tenant=tenant)
    )


def published(memory, tenant: str = T, subject: str = U, **config):
    """Consolidate and insist it published: the precondition of most scenarios."""
    attempt = memory.consolidate(tenant, subject, config=ConsolidationConfig(**config) if config else None)
    assert attempt.status == "published", (attempt.status, attempt.violations, attempt.error, attempt.reason)
    return attempt


def claim_key(c) -> tuple:
    """What a claim means, independent of prose and provenance order."""
    return (
        c.fact_id,
        c.tenant_id,
        c.subject_id,
        c.predicate,
        c.value_type,
        json.dumps(c.value, sort_keys=True),
        c.qualifiers,
        c.polarity,
        c.modality,
        c.authority,
    )


def claims(memory, artifact_id: str, tenant: str = T, subject: str = U) -> set[tuple]:
    return {claim_key(c) for c in memory.admin.artifact(tenant, subject, artifact_id).body.claims}


def critical_claims(memory, artifact_id: str, tenant: str = T, subject: str = U) -> set[tuple]:
    reg = memory.admin.registry
    return {
        claim_key(c)
        for c in memory.admin.artifact(tenant, subject, artifact_id).body.claims
        if reg.get(c.predicate).criticality == "critical"
    }


def tiers(memory, tenant: str = T, subject: str = U) -> dict[str, str]:
    return {e.event_id: e.tier for e in memory.events(tenant, subject)}


def log_ops(memory, op: str, tenant: str = T, subject: str = U):
    with memory.store.read() as tx:
        return [e for e in tx.log(tenant, subject) if e.op == op]


def pending_jobs(memory, tenant: str = T, subject: str = U):
    return [j for j in memory.admin.jobs(tenant, subject) if j.status == "pending"]


def assert_nothing_published(memory, tenant: str = T, subject: str = U, *, alias_before=None) -> None:
    """The alias did not move, and no artifact but the one it already pointed at is published."""
    alias = memory.admin.alias(tenant, subject)
    if alias_before is None:
        assert (alias.artifact_id, alias.covers_through) == (None, 0)
    else:
        assert alias == alias_before
    live = [a.artifact_id for a in memory.admin.artifacts(tenant, subject, states=["published"])]
    assert live == ([] if alias.artifact_id is None else [alias.artifact_id])
