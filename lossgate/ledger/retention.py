"""How long raw memory is kept: a tenant's retention policy, and expiry as a deletion.

A tenant's :class:`RetentionPolicy` (its settings record, versioned: each change counts the
version up and keeps the earlier ones) gives a time to live to raw events, by kind and by
actor (:class:`RetentionRule`; the first rule that matches an event decides; an event no
rule matches is kept). Time is the store's own clock, an event's ``recorded_at`` (how long
memory has held it), as the tiers measure it (:mod:`lossgate.ledger.tiers`).

An event past its time to live is deleted (:meth:`lossgate.ledger.lifecycle.Ledger.delete_event`),
with every guarantee a deletion has: its text and payload purged (to the bytes, on SQLite
after ``lossgate compact``), the tombstone kept, facts resting only on it out of the active
set, summaries built on it stale at once and rebuilt without it, recall records that
touched it redacted. Its log line names the policy version and the rule that expired it.

One thing retention never takes: a source event of an active critical fact. Such an event
is kept past its time to live (and counted, so an operator sees it), since the fact would
otherwise lose its provenance; it expires once its fact is superseded, revoked or deleted.

The policy may give recall records, guard results and responses a time to live too
(``records``): past it they are deleted, evidence and all.

Workers expire the subject of each job they run (:class:`lossgate.ops.worker.Worker`);
``lossgate retention run`` (:meth:`lossgate.Admin.expire`) expires a whole tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lossgate.errors import InvalidInput
from lossgate.model.instants import before
from lossgate.model.limits import text_problem
from lossgate.model.records import Event, EventKind, Tier
from lossgate.store.protocol import ReadTx, WriteTx

__all__ = ["RetentionRule", "RetentionPolicy", "Expiry", "policy", "set_policy", "expiring", "EXPIRY_REASON"]

_KEY = "retention"
_TIERS: tuple[Tier, ...] = ("hot", "warm", "cold")
EXPIRY_REASON = "retention"


class RetentionRule(BaseModel):
    """Events of ``kind`` (any, if ``None``) by ``actor`` (any, if ``None``) live ``ttl``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EventKind | None = None
    actor: str | None = Field(default=None, min_length=1, max_length=200)
    ttl: timedelta

    @field_validator("ttl", mode="before")
    @classmethod
    def _a_duration(cls, value: Any) -> Any:
        if isinstance(value, (bool, int, float)):  # True is not one second
            raise ValueError("a time to live is a duration (a timedelta, or ISO 8601: P30D), not a number")
        return value

    @field_validator("ttl")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        return _positive(value)

    @field_validator("actor")
    @classmethod
    def _actor(cls, value: str | None) -> str | None:
        if value == "*":
            return None  # any actor, as a kind of "*" is any kind
        if value is not None and text_problem(value) is not None:
            raise ValueError(f"actor {text_problem(value)}")
        return value

    def matches(self, e: Event) -> bool:
        return (self.kind is None or e.kind == self.kind) and (self.actor is None or e.actor == self.actor)

    def describe(self) -> str:
        who = " ".join(x for x in (self.kind or "any kind", f"by {self.actor}" if self.actor else "") if x)
        return f"{who}: {self.ttl}"


class RetentionPolicy(BaseModel):
    """A tenant's retention (see the module docstring). ``version`` 0: never set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: tuple[RetentionRule, ...] = ()
    # how long recall records, guard results and responses live (None: kept)
    records: timedelta | None = None
    version: int = Field(default=0, ge=0)
    at: datetime | None = None

    @field_validator("records")
    @classmethod
    def _records(cls, value: timedelta | None) -> timedelta | None:
        return None if value is None else _positive(value)

    def rule_for(self, e: Event) -> RetentionRule | None:
        return next((r for r in self.events if r.matches(e)), None)


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError("a time to live is longer than zero")
    return value


@dataclass
class Expiry:
    """What one run expired of a subject, and what it kept past its time for a critical fact."""

    tenant_id: str
    subject_id: str
    expired: list[str] = field(default_factory=list)
    kept_for_critical_facts: list[str] = field(default_factory=list)
    records_forgotten: int = 0  # recall records, guard results and responses past their time


def policy(tx: ReadTx, tenant_id: str) -> RetentionPolicy:
    """The tenant's retention policy (no rule, version 0, if it never set one)."""
    record = tx.tenant_settings(tenant_id).get(_KEY)
    if not record:
        return RetentionPolicy()
    return RetentionPolicy.model_validate({k: v for k, v in record.items() if k != "history"})


def set_policy(
    tx: WriteTx,
    tenant_id: str,
    rules: Sequence[dict[str, Any] | RetentionRule],
    *,
    records: timedelta | None = None,
    now: datetime,
) -> RetentionPolicy:
    """Store ``rules`` (and ``records``, the time to live of recall records, guard results and
    responses) as the tenant's retention, one version after the current one, keeping the
    earlier versions (the last 50). Raises :class:`InvalidInput` for a malformed rule."""
    try:
        parsed = tuple(r if isinstance(r, RetentionRule) else RetentionRule.model_validate(r) for r in rules)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInput(f"retention rule: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    settings = tx.tenant_settings(tenant_id)
    old = settings.get(_KEY) or {}
    try:
        new = RetentionPolicy(events=parsed, records=records, version=int(old.get("version", 0)) + 1, at=now)
    except ValidationError as exc:
        raise InvalidInput(f"retention of records: {exc.errors()[0]['msg']}") from None
    history = [*old.get("history", []), {k: v for k, v in old.items() if k != "history"}] if old else []
    settings[_KEY] = {**new.model_dump(mode="json"), "history": history[-50:]}
    tx.save_tenant_settings(tenant_id, settings, at=now)
    return new


def expiring(
    tx: ReadTx, tenant_id: str, subject_id: str, retention: RetentionPolicy, now: datetime
) -> tuple[list[tuple[Event, RetentionRule]], list[str]]:
    """The subject's valid events past their time to live, each with the rule that expires
    it, and the ids of those kept for an active critical fact (see the module docstring)."""
    if not retention.events:
        return [], []
    horizon = before(now, min(r.ttl for r in retention.events))
    candidates = [e for tier in _TIERS for e in tx.tier_events(tenant_id, subject_id, tier, recorded_through=horizon)]
    due: list[tuple[Event, RetentionRule]] = []
    for e in sorted(candidates, key=lambda e: e.seq):
        rule = retention.rule_for(e)
        if rule is not None and e.recorded_at <= before(now, rule.ttl):
            due.append((e, rule))
    if not due:
        return [], []
    critical = {
        i
        for f in tx.facts_citing(tenant_id, subject_id, [e.event_id for e, _ in due], statuses=["active"])
        if f.criticality == "critical"
        for i in f.source_event_ids
    }
    return [(e, r) for e, r in due if e.event_id not in critical], [
        e.event_id for e, _ in due if e.event_id in critical
    ]
