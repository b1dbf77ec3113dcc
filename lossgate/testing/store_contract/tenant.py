"""The tenant tier (:mod:`lossgate.store.protocol.tenant`): taint policies, tenant settings
and daily metrics, each kept per tenant, in their stated order, with their types; the events a
policy reaches; the tier reads and moves demotion makes."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest

from lossgate.errors import IdempotencyConflict, InvalidInput
from lossgate.model.derived_records import DailyMetric
from lossgate.model.records import NewEvent, TaintPolicy
from lossgate.store.protocol import Store
from lossgate.testing.store_contract.support import NOW, Contract, S, T, append, check_signatures, event

__all__ = ["TenantContract"]


class TenantContract(Contract):
    """The tenant tier's tests (see the module); a subclass provides the ``store`` fixture,
    as for :class:`~lossgate.testing.store_contract.StoreContract`."""

    def test_the_tenant_tier_is_implemented_with_its_exact_signatures(self, store: Store) -> None:
        assert check_signatures(store, ("tenant",)) == []

    def test_taint_policies_keep_every_version_of_their_tenant_in_order(self, store: Store) -> None:
        def policy(policy_id: str, version: int, tenant: str = T) -> TaintPolicy:
            return TaintPolicy(
                tenant_id=tenant,
                policy_id=policy_id,
                version=version,
                kind="tool_result",
                actor=f"tool:{version}",
                trust="untrusted",
                created_at=NOW,
            )

        with store.write() as tx:
            for p in (policy("b", 1), policy("a", 2), policy("a", 1), policy("a", 1, tenant="other")):
                tx.save_taint_policy(p)
        with store.read() as tx:
            assert tx.taint_policies(T) == [policy("a", 1), policy("a", 2), policy("b", 1)]
            assert tx.taint_policies("other") == [policy("a", 1, tenant="other")]
            assert tx.taint_policies("nobody") == []
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.save_taint_policy(policy("a", 2).model_copy(update={"trust": "tool"}))
        with store.read() as tx:
            assert [p.trust for p in tx.taint_policies(T)] == ["untrusted"] * 3

    def test_tenant_settings_are_one_record_per_tenant_replaced_whole(self, store: Store) -> None:
        with store.read() as tx:
            assert tx.tenant_settings(T) == {}
        with store.write() as tx:
            tx.save_tenant_settings(T, {"tiers": {"dormancy_s": 60}}, at=NOW)
            tx.save_tenant_settings("other", {"tiers": {"dormancy_s": 5}}, at=NOW)
        with store.write() as tx:
            tx.save_tenant_settings(T, {"tiers": {"dormancy_s": 120, "cold_after_s": 600}}, at=NOW)
        with store.read() as tx:
            assert tx.tenant_settings(T) == {"tiers": {"dormancy_s": 120, "cold_after_s": 600}}
            assert tx.tenant_settings("other") == {"tiers": {"dormancy_s": 5}}

    def test_set_tier_moves_named_events_to_hot_warm_or_cold(self, store: Store) -> None:
        with store.write() as tx:
            tx.lock_clock(T, S)
            tx.insert_events([(event(f"e{n}"), n, f"sha256:e{n}", NOW.isoformat()) for n in (1, 2, 3)], recorded_at=NOW)
            assert tx.set_tier(T, S, through_seq=9, tier="warm", event_ids=["e1", "e3", "nope"]) == 2
            assert tx.set_tier(T, S, through_seq=2, tier="cold", event_ids=["e1", "e3"]) == 1
            assert tx.set_tier(T, S, through_seq=9, tier="cold", event_ids=[]) == 0
        with store.read() as tx:
            assert [e.tier for e in tx.events(T, S)] == ["cold", "hot", "warm"]

    def test_tier_reads_find_the_valid_events_of_a_tier_recorded_by_an_instant(self, store: Store) -> None:
        """What demotion may move: the subject's valid events of one tier recorded at or before
        an instant (given with any UTC offset), in seq order whatever order they were recorded
        in; and the oldest valid event of each tier."""
        day = timedelta(days=1)
        with store.write() as tx:
            append(tx, event("e1"), recorded_at=NOW - day)
            append(tx, event("e2"), event("e3"), recorded_at=NOW - 3 * day)
            append(tx, event("e4"), recorded_at=NOW)
            append(tx, event("e5"), recorded_at=NOW - 4 * day)
            append(tx, event("other", subject="u2"), recorded_at=NOW - 9 * day)
            tx.set_event_state(T, S, "e5", "revoked", purge=False)
            tx.set_tier(T, S, through_seq=9, tier="warm", event_ids=["e3"])
        with store.read() as tx:

            def ids(tier: Any, through: datetime) -> list[str]:
                return [e.event_id for e in tx.tier_events(T, S, tier, recorded_through=through)]

            assert ids("hot", NOW) == ["e1", "e2", "e4"]  # e5 is revoked, e3 warm
            assert ids("hot", (NOW - day).astimezone(timezone(timedelta(hours=2)))) == ["e1", "e2"]  # at it counts
            assert ids("hot", NOW - day - timedelta(microseconds=1)) == ["e2"]
            assert ids("warm", NOW) == ["e3"] and ids("cold", NOW) == []
            first = tx.tier_events(T, S, "hot", recorded_through=NOW)[0]
            assert (first.event_id, first.seq, first.tier, first.recorded_at) == ("e1", 1, "hot", NOW - day)
            assert tx.tier_oldest(T, S) == {"hot": NOW - 3 * day, "warm": NOW - 3 * day}
            assert tx.tier_events(T, "nobody", "hot", recorded_through=NOW) == [] and tx.tier_oldest(T, "nobody") == {}

    def test_events_matching_names_the_valid_events_of_a_kind_and_actor_in_seq_order(self, store: Store) -> None:
        def tool(event_id: str, actor: str, kind: str = "tool_result") -> NewEvent:
            return event(event_id).model_copy(update={"kind": kind, "actor": actor, "trust": "tool"})

        with store.write() as tx:
            append(
                tx,
                tool("e1", "tool:a"),
                event("e2"),
                tool("e3", "tool:b"),
                tool("e4", "tool:a"),
                tool("e5", "tool:a", "document"),
            )
            tx.set_event_state(T, S, "e4", "revoked", purge=False)
        with store.read() as tx:
            assert tx.events_matching(T, S, kind="tool_result", actor=None) == [
                ("e1", "tool_result", "tool:a", "tool"),
                ("e3", "tool_result", "tool:b", "tool"),
            ]
            assert tx.events_matching(T, S, kind=None, actor="tool:a") == [
                ("e1", "tool_result", "tool:a", "tool"),
                ("e5", "document", "tool:a", "tool"),
            ]
            assert tx.events_matching(T, S, kind="message", actor="user") == [
                ("e2", "message", "user", "authenticated_user")
            ]
            assert tx.events_matching(T, "nobody", kind="tool_result", actor=None) == []

    def test_daily_metrics_are_kept_per_tenant_in_order_with_their_types(self, store: Store) -> None:
        plus2 = timezone(timedelta(hours=2))
        march13, march14 = date(2026, 3, 13), date(2026, 3, 14)

        def metric(
            run: str,
            day: date,
            name: str,
            value: float,
            *,
            dimension: dict[str, str | int] | None = None,
            at: datetime = NOW,
            tenant: str = T,
        ) -> DailyMetric:
            return DailyMetric(
                tenant_id=tenant,
                run_id=run,
                day=day,
                metric=name,
                dimension=dimension or {},
                value=value,
                recorded_at=at,
            )

        # r-b is stored first but recorded at noon UTC; r-a at 11:30 UTC, given with a +02:00 offset.
        late = [
            metric("r-b", march14, "key_facts", 4),
            metric("r-b", march14, "key_facts", 3, dimension={"v": 2}),
            metric("r-b", march14, "key_fact_recall", 0.75),
        ]
        early = [metric("r-a", march14, "key_facts", 5, at=datetime(2026, 3, 14, 13, 30, tzinfo=plus2))]
        before = [metric("r-0", march13, "key_facts", 1.5, at=NOW + timedelta(days=1))]
        with store.write() as tx:
            assert tx.save_daily_metrics(T, late) == 3
            assert tx.save_daily_metrics("other", [metric("r-x", march14, "key_facts", 9, tenant="other")]) == 1
            assert tx.save_daily_metrics(T, early + before) == 2
            assert tx.save_daily_metrics(T, []) == 0
        with store.read() as tx:
            got = tx.daily_metrics(T)  # day, recorded_at as an instant, run, metric, dimension (bytewise)
            assert [(m.run_id, m.day.isoformat(), m.metric, m.dimension, m.value) for m in got] == [
                ("r-0", "2026-03-13", "key_facts", {}, 1.5),
                ("r-a", "2026-03-14", "key_facts", {}, 5.0),
                ("r-b", "2026-03-14", "key_fact_recall", {}, 0.75),
                ("r-b", "2026-03-14", "key_facts", {"v": 2}, 3.0),
                ("r-b", "2026-03-14", "key_facts", {}, 4.0),
            ]
            first = got[0]
            assert (type(first.day), type(first.value), first.recorded_at) == (date, float, NOW + timedelta(days=1))
            assert type(got[3].dimension["v"]) is int
            assert [m.run_id for m in tx.daily_metrics(T, since=march14)] == ["r-a", "r-b", "r-b", "r-b"]
            assert [m.run_id for m in tx.daily_metrics(T, until=march13)] == ["r-0"]
            assert [m.value for m in tx.daily_metrics(T, metrics=["key_fact_recall", "nope"])] == [0.75]
            assert [m.metric for m in tx.daily_metrics(T, run_id="r-a", since=march13, until=march14)] == ["key_facts"]
            assert [(m.tenant_id, m.value) for m in tx.daily_metrics("other")] == [("other", 9.0)]
            assert tx.daily_metrics("nobody") == []
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.save_daily_metrics(T, [metric("r-c", march14, "key_facts", 1)])
            tx.save_daily_metrics(T, [metric("r-b", march14, "key_facts", 7)])  # (tenant, run, metric, dimension) again
        with pytest.raises(InvalidInput), store.write() as tx:
            tx.save_daily_metrics(
                T, [metric("r-d", march14, "key_facts", 1), metric("r-d", march14, "claims", 1, tenant="other")]
            )
        with store.read() as tx:
            assert sorted({m.run_id for m in tx.daily_metrics(T)}) == ["r-0", "r-a", "r-b"]  # nothing of r-c, r-d
            assert len(tx.daily_metrics("other")) == 1
