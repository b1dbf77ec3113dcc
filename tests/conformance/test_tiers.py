"""Tiers with a clock of their own (lossgate.ledger.tiers), on both stores.

Hot events go warm once dormant and covered by a gated, published, fresh summary; a
failed consolidation keeps them hot and the log says why; warm events go cold after the
cold horizon and a query still finds them. The clock is injected (``now=``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from lossgate import InvalidInput
from lossgate.model.records import utcnow
from lossgate.testing.compressors import LOSSY_COMPRESSORS
from tests.support.world import T, U, V, chatter, published, seed_world, tiers

DAY = timedelta(days=1)


def log_of(memory, op: str, subject: str = U):
    return [e for e in memory.admin.log(T, subject) if e.op == op]


def test_the_default_policy_is_days_and_a_tenant_sets_its_own(memory):
    assert memory.admin.tier_policy(T).dormancy == 7 * DAY
    memory.admin.set_tier_policy(T, dormancy=2 * DAY, cold_after=30 * DAY)
    assert (memory.admin.tier_policy(T).dormancy, memory.admin.tier_policy(T).cold_after) == (2 * DAY, 30 * DAY)
    assert memory.admin.tier_policy("globex").dormancy == 7 * DAY  # per tenant
    memory.admin.set_tier_policy(T, dormancy=3 * DAY)  # the other setting is kept
    assert (memory.admin.tier_policy(T).dormancy, memory.admin.tier_policy(T).cold_after) == (3 * DAY, 30 * DAY)
    with pytest.raises(InvalidInput):
        memory.admin.set_tier_policy(T, dormancy=40 * DAY)  # past the cold horizon


def test_hot_to_warm_only_after_the_dormancy_and_only_what_the_gated_summary_covers(memory):
    seed_world(memory)
    covered = set(tiers(memory))
    attempt = published(memory)
    tail = set(chatter(memory, "tail", 2))
    start = utcnow()

    (early,) = memory.admin.demote(T, U, now=start + 6 * DAY)  # default dormancy: 7 days
    assert early.warm == () and set(tiers(memory).values()) == {"hot"}

    (done,) = memory.admin.demote(T, U, now=start + 8 * DAY)
    assert set(done.warm) == covered and done.artifact_id == attempt.artifact_id
    assert {e: t for e, t in tiers(memory).items() if e in covered} == dict.fromkeys(covered, "warm")
    assert {tiers(memory)[e] for e in tail} == {"hot"}  # no summary covers them yet
    assert set(done.held) == tail and not done.retention_logged

    (move,) = log_of(memory, "tier")
    assert move.target_id == attempt.artifact_id and move.detail["from"] == "hot" and move.detail["to"] == "warm"
    assert set(move.detail["event_ids"]) == covered and move.detail["gate"] == "clean"
    view = memory.admin.lineage(T, U, attempt.artifact_id)  # tier moves go through lineage
    assert [(m.op, m.detail["to"]) for m in view.tier_moves] == [("tier", "warm")]

    (again,) = memory.admin.demote(T, U, now=start + 8 * DAY)  # idempotent
    assert again.warm == () and len(log_of(memory, "tier")) == 1


def test_a_failed_compression_demotes_nothing_and_records_the_extended_retention(memory):
    seed_world(memory)
    bad = memory.consolidate(T, U, compressor=LOSSY_COMPRESSORS[0]())
    assert bad.status == "rejected"
    later = utcnow() + 30 * DAY

    (held,) = memory.admin.demote(T, U, now=later)
    assert held.warm == () and set(tiers(memory).values()) == {"hot"}
    assert held.retention_logged and held.held_reason.startswith(
        f"retention extended: consolidation attempt {bad.attempt_id} rejected"
    )
    (entry,) = log_of(memory, "retention")
    assert entry.detail["reason"] == held.held_reason and set(entry.detail["event_ids"]) == set(held.held)
    assert entry.target_id == bad.artifact_id
    assert [m.op for m in memory.admin.lineage(T, U, bad.artifact_id).tier_moves] == ["retention"]

    (again,) = memory.admin.demote(T, U, now=later + DAY)  # recorded once per failure
    assert again.held_reason == held.held_reason and not again.retention_logged
    assert len(log_of(memory, "retention")) == 1

    published(memory)  # the gate passes: now they go
    (done,) = memory.admin.demote(T, U, now=later + DAY)
    assert set(done.warm) == set(held.held) and set(tiers(memory).values()) == {"warm"}


def test_a_stale_summary_keeps_them_hot_and_says_so(memory):
    seed_world(memory)
    attempt = published(memory)
    memory.revoke_event(T, U, "e-topic", reason="wrong")
    (held,) = memory.admin.demote(T, U, now=utcnow() + 8 * DAY)
    assert held.warm == () and "retention extended: summary" in (held.held_reason or "")
    assert [e.target_id for e in log_of(memory, "retention")] == [attempt.artifact_id]


def test_warm_to_cold_after_the_horizon_and_a_query_still_finds_cold_events(memory):
    memory.admin.set_tier_policy(T, dormancy=1 * DAY, cold_after=10 * DAY)
    seed_world(memory)
    seed_world(memory, subject=V, p="v-")
    published(memory)
    start = utcnow()
    memory.admin.demote(T, U, now=start + 2 * DAY)
    assert set(tiers(memory).values()) == {"warm"}
    assert set(tiers(memory, subject=V).values()) == {"hot"}  # one subject only

    (done,) = memory.admin.demote(T, U, now=start + 11 * DAY)
    assert set(tiers(memory).values()) == {"cold"} and set(done.cold) == set(tiers(memory))
    assert [m.detail["to"] for m in log_of(memory, "tier")] == ["warm", "cold"]

    result = memory.recall(T, U, query="peanuts allergic")
    assert "e-allergy" in {e.event_id for e in result.events}
    assert result.record.tiers["e-allergy"] == "cold"  # the recall record says which tier
    assert memory.admin.recalls(T, U, limit=1)[0].tiers["e-allergy"] == "cold"


def test_a_subject_with_nothing_due_is_demoted_without_a_write_transaction(memory, monkeypatch):
    """A worker demotes after every job; most find nothing dormant, and then the oldest event
    of each tier says so and no write transaction is opened."""
    from lossgate.ledger.tiers import Demotion

    memory.admin.set_tier_policy(T, dormancy=1 * DAY, cold_after=10 * DAY)
    seed_world(memory)
    attempt = published(memory)
    start = utcnow()
    writes: list[int] = []
    write = memory.store.write
    monkeypatch.setattr(memory.store, "write", lambda: writes.append(1) or write())

    assert memory.admin.demote(T, U, now=start) == [
        Demotion(tenant_id=T, subject_id=U, artifact_id=attempt.artifact_id)
    ]
    assert memory.admin.demote(T, "nobody", now=start) == [Demotion(tenant_id=T, subject_id="nobody")]
    assert writes == [] and set(tiers(memory).values()) == {"hot"}

    (done,) = memory.admin.demote(T, U, now=start + 2 * DAY)  # dormant now: one write transaction
    assert set(done.warm) == set(tiers(memory)) and writes == [1]
    (quiet,) = memory.admin.demote(T, U, now=start + 3 * DAY)  # all warm, none past the horizon
    assert quiet == Demotion(tenant_id=T, subject_id=U, artifact_id=attempt.artifact_id) and writes == [1]
    (cold,) = memory.admin.demote(T, U, now=start + 11 * DAY)
    assert set(cold.cold) == set(tiers(memory)) and writes == [1, 1]
    assert [m.detail["to"] for m in log_of(memory, "tier")] == ["warm", "cold"]


def test_demote_runs_over_every_subject_of_the_tenant(memory):
    seed_world(memory)
    seed_world(memory, subject=V, p="v-")
    published(memory)
    published(memory, subject=V)
    done = memory.admin.demote(T, now=utcnow() + 8 * DAY)
    assert sorted(d.subject_id for d in done) == sorted([U, V])
    assert set(tiers(memory).values()) == set(tiers(memory, subject=V).values()) == {"warm"}


def test_a_worker_demotes_the_subject_after_its_consolidation(memory, store_url):
    from lossgate.ops.worker import Worker, open_worker_memory

    memory.admin.set_tier_policy(T, dormancy=timedelta(0))  # everything is dormant at once
    seed_world(memory)
    assert memory.request_consolidation(T, U)
    with open_worker_memory(store_url, migrate=False) as worker_memory:
        assert Worker(worker_memory).run_once() is not None
    assert set(tiers(memory).values()) == {"warm"}
    assert [e.detail["to"] for e in log_of(memory, "tier")] == ["warm"]
