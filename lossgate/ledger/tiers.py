"""Tiers with a clock of their own: hot, warm and cold events.

* **hot**: raw and recent. Every event is appended hot.
* **warm**: dormant, and covered by the subject's gated, published, fresh summary: the
  summary stands in for it. Demotion to warm happens only once the gate has passed for the
  artifact that replaces the hot entries: a publication alone moves no tier.
* **cold**: warm for longer than the second horizon (``cold_after``): raw, still found by a
  query (recall searches every tier), no longer the period a summary is read for. "No
  longer in any summary" is approximated by this horizon: tiers do not read which events a
  period's digest (:mod:`lossgate.consolidate.hierarchy`) left out.

Dormancy is measured on the store's own clock: an event's ``recorded_at`` (when it entered
memory), never a caller's domain time. The clock is injectable: every operation takes
``now``. The thresholds are a tenant's :class:`TierPolicy` (its settings record;
default :data:`DEFAULT_DORMANCY` and :data:`DEFAULT_COLD_AFTER`).

A dormant hot event that no fresh summary covers stays hot. When that is because the
subject's last consolidation attempt failed, or its summary went stale, the hold is a
**retention extension** and the subject's log records why (op ``retention``, once per
failed attempt or stale summary). Every move is a log line (op ``tier``) whose target is
the summary that covers the events, so it shows in ``lossgate lineage`` of that summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from lossgate.errors import InvalidInput
from lossgate.model.derived_records import Attempt
from lossgate.model.instants import SPAN_DAYS, before, utc
from lossgate.model.records import Event, Tier
from lossgate.store.protocol import ReadTx, Store, WriteTx

__all__ = [
    "DEFAULT_DORMANCY",
    "DEFAULT_COLD_AFTER",
    "TierPolicy",
    "Demotion",
    "policy",
    "set_policy",
    "demote_subject",
    "demote",
]

DEFAULT_DORMANCY = timedelta(days=7)
DEFAULT_COLD_AFTER = timedelta(days=90)
_FAILED = ("rejected", "conflict", "error")


@dataclass(frozen=True)
class TierPolicy:
    """A tenant's tier clock: hot events dormant for ``dormancy`` go warm (once a gated
    summary covers them); warm events recorded ``cold_after`` ago go cold."""

    dormancy: timedelta = DEFAULT_DORMANCY
    cold_after: timedelta = DEFAULT_COLD_AFTER

    def __post_init__(self) -> None:
        if self.dormancy < timedelta(0) or self.cold_after < self.dormancy or self.cold_after > timedelta(SPAN_DAYS):
            raise InvalidInput(
                f"tier policy: need 0 <= dormancy ({self.dormancy}) <= cold_after ({self.cold_after})"
                f" <= {SPAN_DAYS:,} days (the whole calendar)"
            )

    def record(self) -> dict[str, Any]:
        return {"dormancy_s": self.dormancy.total_seconds(), "cold_after_s": self.cold_after.total_seconds()}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> TierPolicy:
        return cls(
            dormancy=timedelta(seconds=float(record.get("dormancy_s", DEFAULT_DORMANCY.total_seconds()))),
            cold_after=timedelta(seconds=float(record.get("cold_after_s", DEFAULT_COLD_AFTER.total_seconds()))),
        )


@dataclass(frozen=True)
class Demotion:
    """What one subject's demotion did: events moved to warm and to cold, and the dormant
    hot events held back with why (``held_reason``; ``retention_logged`` if it went into
    the log now)."""

    tenant_id: str
    subject_id: str
    warm: tuple[str, ...] = ()
    cold: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    held_reason: str | None = None
    retention_logged: bool = False
    artifact_id: str | None = None


def policy(tx: ReadTx, tenant_id: str) -> TierPolicy:
    """The tenant's tier policy (the defaults if it never set one)."""
    return TierPolicy.from_record(tx.tenant_settings(tenant_id).get("tiers", {}))


def set_policy(tx: WriteTx, tenant_id: str, tiers: TierPolicy, *, now: datetime) -> None:
    """Store the tenant's tier policy (other settings kept)."""
    settings = tx.tenant_settings(tenant_id)
    settings["tiers"] = tiers.record()
    tx.save_tenant_settings(tenant_id, settings, at=now)


def _utc(at: datetime) -> datetime:
    return utc(at if at.tzinfo is not None else at.replace(tzinfo=UTC))


def _why_held(artifact_id: str | None, state: str | None, fresh: bool, tail: list[Attempt]) -> tuple[str, str | None]:
    """Why dormant hot events stay hot, and the log target if it is a retention extension
    (a failed attempt after the last publication, or a summary no longer fresh).
    ``artifact_id`` and ``state``: the summary the alias points at (``None``: none)."""
    failed = [a for a in tail if a.status in _FAILED and a.lane == "live"]  # a shadow's failures are its own
    if failed:
        a = failed[-1]
        why = a.reason or a.error or ", ".join(a.violations[:3]) or a.status
        return f"consolidation attempt {a.attempt_id} {a.status}: {why}", a.artifact_id or a.attempt_id
    if artifact_id is not None and not fresh:
        return (f"summary {artifact_id} is {state}, not fresh: it no longer stands in for them", artifact_id)
    if artifact_id is None:
        return "no gated summary yet", None
    return "beyond the published summary's coverage: waiting for consolidation", None


def _due(oldest: dict[Tier, datetime], tiers: TierPolicy, now: datetime) -> bool:
    """Whether a subject whose oldest valid event per tier is ``oldest`` has anything for
    :func:`demote_subject` at ``now``: a dormant hot event, or a warm one past the horizon."""
    hot, warm = oldest.get("hot"), oldest.get("warm")
    return (hot is not None and _utc(hot) <= before(now, tiers.dormancy)) or (
        warm is not None and _utc(warm) <= before(now, tiers.cold_after)
    )


def demote_subject(tx: WriteTx, tenant_id: str, subject_id: str, *, tiers: TierPolicy, now: datetime) -> Demotion:
    """Move one subject's events between tiers at ``now``, in ``tx`` (see the module).

    Reads only what may move (:meth:`~lossgate.store.protocol.ReadTx.tier_events`):
    the dormant hot events and the warm ones past the cold horizon, never the history."""
    now = _utc(now)
    clock = tx.lock_clock(tenant_id, subject_id)
    alias = tx.lock_alias(tenant_id, subject_id)
    dormant = tx.tier_events(tenant_id, subject_id, "hot", recorded_through=before(now, tiers.dormancy))
    aged = tx.tier_events(tenant_id, subject_id, "warm", recorded_through=before(now, tiers.cold_after))
    if not dormant and not aged:
        return Demotion(tenant_id=tenant_id, subject_id=subject_id, artifact_id=alias.artifact_id)
    # The summary's state and gate outcome only: its manifest and gate report may list
    # every event of the history.
    head = tx.artifact_gate(tenant_id, subject_id, alias.artifact_id) if alias.artifact_id else None
    artifact_id = alias.artifact_id if head is not None else None
    state, outcome = head if head is not None else (None, None)
    fresh = state == "published" and alias.source_epoch == clock.input_epoch
    warm: list[Event] = []
    if fresh:
        warm = [e for e in dormant if e.seq <= alias.covers_through]
    warm_ids = {e.event_id for e in warm}
    held = [e for e in dormant if e.event_id not in warm_ids]
    base = {
        "dormancy_s": tiers.dormancy.total_seconds(),
        "cold_after_s": tiers.cold_after.total_seconds(),
        "now": now.isoformat(),
    }
    if warm and artifact_id is not None:
        tx.set_tier(
            tenant_id, subject_id, through_seq=alias.covers_through, tier="warm", event_ids=[e.event_id for e in warm]
        )
        tx.add_log(
            tenant_id,
            subject_id,
            at=now,
            op="tier",
            target_id=artifact_id,
            detail={
                **base,
                "from": "hot",
                "to": "warm",
                "event_ids": [e.event_id for e in warm],
                "covers_through": alias.covers_through,
                "gate": outcome,
            },
        )
    reason: str | None = None
    logged = False
    if held:
        _, tail = tx.attempt_tail(tenant_id, subject_id)
        reason, target = _why_held(artifact_id, state, fresh, tail)
        if target is not None:
            reason = f"retention extended: {reason}"
            seen = any(
                e.op == "retention" and e.detail.get("reason") == reason
                for e in tx.log(tenant_id, subject_id, target_ids=[target])
            )
            if not seen:
                tx.add_log(
                    tenant_id,
                    subject_id,
                    at=now,
                    op="retention",
                    target_id=target,
                    detail={**base, "reason": reason, "tier": "hot", "event_ids": [e.event_id for e in held]},
                )
                logged = True
    # Warm past the horizon: those warm before, and those just moved that are as old.
    cold = sorted(aged + [e for e in warm if _utc(e.recorded_at) <= before(now, tiers.cold_after)], key=lambda e: e.seq)
    if cold:
        tx.set_tier(
            tenant_id, subject_id, through_seq=clock.high_water, tier="cold", event_ids=[e.event_id for e in cold]
        )
        tx.add_log(
            tenant_id,
            subject_id,
            at=now,
            op="tier",
            target_id=alias.artifact_id or subject_id,
            detail={**base, "from": "warm", "to": "cold", "event_ids": [e.event_id for e in cold]},
        )
    return Demotion(
        tenant_id=tenant_id,
        subject_id=subject_id,
        warm=tuple(e.event_id for e in warm),
        cold=tuple(e.event_id for e in cold),
        held=tuple(e.event_id for e in held),
        held_reason=reason,
        retention_logged=logged,
        artifact_id=alias.artifact_id,
    )


def demote(store: Store, tenant_id: str, *, subjects: Sequence[str] | None = None, now: datetime) -> list[Demotion]:
    """Demote the tenant's subjects (``subjects``, or all of them) at ``now``, one
    transaction per subject, under the tenant's :class:`TierPolicy`.

    A subject with nothing due at ``now`` (no dormant hot event, no warm one past the
    horizon: the oldest valid event of each tier says so, read from an index) gets an
    empty :class:`Demotion` and no write transaction: a worker demotes after every job,
    and most jobs find nothing dormant. That look is a read snapshot, taken before the
    writes, as the policy always was: an event made due by a write that commits after it
    is moved by the next demotion."""
    now = _utc(now)
    quiet: dict[str, Demotion] = {}
    with store.read() as rtx:
        tiers = policy(rtx, tenant_id)
        names = list(subjects) if subjects is not None else rtx.subjects(tenant_id)
        for subject_id in names:
            if not _due(rtx.tier_oldest(tenant_id, subject_id), tiers, now):
                quiet[subject_id] = Demotion(
                    tenant_id=tenant_id, subject_id=subject_id, artifact_id=rtx.alias(tenant_id, subject_id).artifact_id
                )
    out = []
    for subject_id in names:
        if subject_id in quiet:
            out.append(quiet[subject_id])
            continue
        with store.write() as tx:
            out.append(demote_subject(tx, tenant_id, subject_id, tiers=tiers, now=now))
    return out
