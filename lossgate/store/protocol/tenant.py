"""The tenant tier: what a tenant sets and what operations keep of it: its taint policies
(and the events one reaches), its settings record (the tier clock, the narrative policy,
retention), the tier reads and moves demotion makes, and the daily fidelity metrics."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Protocol

from lossgate.model.derived_records import DailyMetric
from lossgate.model.records import Event, TaintPolicy, Tier
from lossgate.store.protocol.scope import tenant_of

__all__ = ["TenantReadTx", "TenantWriteTx"]


class TenantReadTx(Protocol):
    """Reads of a tenant's policies, settings and metrics, and of the events a policy or
    demotion reaches."""

    @tenant_of("tenant_id")
    def taint_policies(self, tenant_id: str) -> list[TaintPolicy]:
        """Every stored version of the tenant's taint policies, by policy id (bytewise), then
        version (the last of a policy's versions is the one in force)."""

    @tenant_of("tenant_id")
    def tenant_settings(self, tenant_id: str) -> dict[str, Any]:
        """The tenant's settings record (a JSON object: today its tier policy), ``{}`` if
        none was ever saved."""

    def events_matching(
        self, tenant_id: str, subject_id: str, *, kind: str | None, actor: str | None
    ) -> list[tuple[str, str, str, str]]:
        """The subject's valid events of ``kind`` by ``actor`` (either ``None``: any) as
        ``(event_id, kind, actor, trust)``, in seq order (what a taint policy reaches)."""

    def tier_events(self, tenant_id: str, subject_id: str, tier: Tier, *, recorded_through: datetime) -> list[Event]:
        """The subject's valid events in ``tier`` recorded at or before the instant
        ``recorded_through``, in seq order: what demotion may move (:mod:`lossgate.ledger.tiers`).
        Read through an index (tenant, subject, tier, ``recorded_at`` of valid events), so
        that its cost follows the answer, not the subject's history."""

    def tier_oldest(self, tenant_id: str, subject_id: str) -> dict[Tier, datetime]:
        """For each tier that holds any of the subject's valid events, the ``recorded_at`` of
        its oldest (in UTC); a tier with none is absent. One index probe per tier: whether
        anything is due for demotion, without reading an event."""

    @tenant_of("tenant_id")
    def daily_metrics(
        self,
        tenant_id: str,
        *,
        since: date | None = None,
        until: date | None = None,
        metrics: Sequence[str] | None = None,
        run_id: str | None = None,
    ) -> list[DailyMetric]:
        """The tenant's stored daily metrics (:mod:`lossgate.ops.daily`) with ``since <= day <=
        until`` (either ``None``: unbounded), only the ``metrics`` named and the run ``run_id``
        if given; oldest first: by day, then ``recorded_at`` (an instant), then run id, metric
        and dimension (its canonical JSON), the last three compared bytewise. Values come
        back as floats, days as dates, dimensions as they were stored. Never waits for a
        subject's writers."""


class TenantWriteTx(TenantReadTx, Protocol):
    """Writes of a tenant's policies, settings and metrics, and the tier moves."""

    @tenant_of("policy")
    def save_taint_policy(self, policy: TaintPolicy) -> None:
        """Store a new version of a taint policy. Raises
        :class:`~lossgate.errors.IdempotencyConflict` if that version is already stored."""

    @tenant_of("tenant_id")
    def save_tenant_settings(self, tenant_id: str, record: dict[str, Any], *, at: datetime) -> None:
        """Store the tenant's settings record (a JSON object), replacing the previous one."""

    def set_tier(
        self, tenant_id: str, subject_id: str, *, through_seq: int, tier: str, event_ids: Sequence[str] | None = None
    ) -> int:
        """Move the subject's events with seq <= ``through_seq`` (and, with ``event_ids``,
        among those ids) to ``tier`` (``hot``, ``warm``, ``cold``); return how many moved."""

    @tenant_of("tenant_id")
    def save_daily_metrics(self, tenant_id: str, metrics: Sequence[DailyMetric]) -> int:
        """Store one run's figures for the tenant; returns how many. Every metric must name
        ``tenant_id`` (:class:`~lossgate.errors.InvalidInput` otherwise, before anything is written). ``(tenant,
        run_id, metric, dimension)`` is a key: storing one again raises
        :class:`~lossgate.errors.IdempotencyConflict`. Rows are never updated or deleted."""
