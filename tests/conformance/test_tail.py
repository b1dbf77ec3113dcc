"""A hierarchy that grows by its tail (lossgate.consolidate.tail), on both stores.

While the published root is fresh, a consolidation of new events extends it: it reads the
new events and the last period's parts, cuts them as a full plan would, carries the other
parts by reference and chains its input root to its parent's. What must not move:

* the parts it builds are those a full plan of the same state would build (same
  fingerprints), so a later full rebuild reuses them;
* revoking an input covered ten generations back makes the head, every root of the chain
  and the part that covered it stale in the revoking transaction, recall falls back to the
  raw layer, and the rebuild leaves the input out and reuses every other part;
* anything that is not a tail append takes the full plan.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from lossgate import NewEvent
from lossgate.consolidate import pipeline
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.wording import PERIODS_TITLE
from tests.support.hierarchy import CONTEXT, day, world
from tests.support.tail import consolidated, fingerprints, full_plan, turns
from tests.support.world import SMALL_TALK, T, U, fact

SECRET = "The gate code for the north warehouse is 8812."


def secret_session(memory):
    world(memory)
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=U,
                event_id="e-secret",
                actor="user",
                text=SECRET,
                payload={"session": 1},
                occurred_at=day(1) + timedelta(minutes=40),
            )
        ]
    )


def history_read(*args, **kw):
    raise AssertionError("a tail job read the whole history")


@pytest.mark.slow
def test_ten_tail_generations_then_a_revocation_ten_generations_back(memory, monkeypatch):
    secret_session(memory)
    first = consolidated(memory)
    assert first.manifest.extends is None and SECRET in first.body.summary
    chain = [first]
    for g in range(1, 11):  # ten sessions, one per generation, each on a later day
        memory.append(turns(4 + g, 6))
        before = {a.artifact_id for a in memory.admin.artifacts(T, U)}
        with monkeypatch.context() as patched:  # it never reads the whole history
            patched.setattr(pipeline, "select", history_read)
            root = consolidated(memory)
        assert root.manifest.extends == chain[-1].artifact_id  # it extended the published root
        # it built the new session's part alone (the last period, cut again, was reused)
        built = [a for a in memory.admin.artifacts(T, U) if a.artifact_id not in before and a.manifest.path == "part"]
        assert built and all(a.manifest.part.key.split(" #")[0] == f"session {4 + g}" for a in built)
        assert set(root.manifest.new_parts) <= {*chain[-1].manifest.children, *(a.artifact_id for a in built)}
        # its children are the parent's, then its own; the chain commits to everything covered
        assert root.manifest.children[: len(root.manifest.carried)] == root.manifest.carried
        assert root.manifest.input_root != chain[-1].manifest.input_root
        chain.append(root)
    assert fingerprints(memory, chain[-1]) == full_plan(memory)
    # the audit read walks the chain back to the first root, nearest first
    ancestors = memory.admin.lineage(T, U, chain[-1].artifact_id).ancestors
    assert [a for a, _ in ancestors] == [r.artifact_id for r in reversed(chain[:-1])]
    assert {state for _, state in ancestors} == {"retired"}
    part_of_secret = next(
        c
        for c in chain[-1].manifest.children
        if "e-secret" in {r.id for r in memory.admin.artifact(T, U, c).manifest.inputs}
    )

    with memory.transaction() as led:
        led.revoke_event(T, U, "e-secret", reason="said by mistake")
        # in the same transaction: the head, every root it extends and the part are stale
        for root in chain:
            assert led.tx.artifact_head(T, U, root.artifact_id).state == "stale"
        assert led.tx.artifact_head(T, U, part_of_secret).state == "stale"

    recalled = memory.recall(T, U)
    assert recalled.mode != "summary" and recalled.summary is None
    assert all(e.event_id != "e-secret" for e in recalled.events)

    before = {a.artifact_id for a in memory.admin.artifacts(T, U)}
    rebuilt = consolidated(memory)
    assert rebuilt.manifest.extends is None  # the head was stale: the full plan
    assert SECRET not in rebuilt.body.summary and "8812" not in rebuilt.body.summary
    covered = {r.id for c in rebuilt.manifest.children for r in memory.admin.artifact(T, U, c).manifest.inputs}
    assert "e-secret" not in covered and part_of_secret not in rebuilt.manifest.children
    # the rebuild redid the secret's period alone: every other part was reused
    built = [a for a in memory.admin.artifacts(T, U) if a.artifact_id not in before and a.manifest.path == "part"]
    assert len(built) == 1
    assert fingerprints(memory, rebuilt) == full_plan(memory)


def test_a_tail_in_the_same_period_cuts_the_last_period_again_as_a_full_plan_would(memory):
    world(memory)
    consolidated(memory)
    for start in (12, 24, 36):  # the last session grows past the context: it is cut by size
        memory.append(turns(4, 12, start=100 + start))
        root = consolidated(memory)
        assert root.manifest.extends is not None
        assert fingerprints(memory, root) == full_plan(memory)
    keys = [memory.admin.artifact(T, U, c).manifest.part.key for c in root.manifest.children]
    assert sum(k.startswith("session 4") for k in keys) > 1


def test_what_is_not_a_tail_append_takes_the_full_plan(memory):
    world(memory)
    consolidated(memory)
    # a new event of an earlier period: the full plan puts it in its period
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=U,
                event_id="late",
                actor="user",
                text=SMALL_TALK[0],
                payload={"session": 2},
                occurred_at=day(2) + timedelta(minutes=50),
            )
        ]
    )
    root = consolidated(memory)
    assert root.manifest.extends is None
    assert fingerprints(memory, root) == full_plan(memory)
    # a new fact drawn from an earlier period changes that period's part: the full plan
    memory.append(turns(5, 4))
    memory.assert_facts([fact("f-more", "subscription.seats", 41, ["e-seats"])])
    root = consolidated(memory)
    assert root.manifest.extends is None
    # a plain tail append again extends
    memory.append(turns(6, 4))
    root = consolidated(memory)
    assert root.manifest.extends is not None
    # an event of an earlier session, said after everything else: it joins its session
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=U,
                event_id="later",
                actor="user",
                text=SMALL_TALK[1],
                payload={"session": 3},
                occurred_at=day(9),
            )
        ]
    )
    root = consolidated(memory)
    assert root.manifest.extends is None
    assert fingerprints(memory, root) == full_plan(memory)
    # and after it, a new session is cut with it as a full plan would
    memory.append(turns(10, 4))
    assert fingerprints(memory, consolidated(memory)) == full_plan(memory)


def test_the_root_inlines_the_newest_digests_that_fit_its_window(memory):
    config = ConsolidationConfig(hierarchy=HierarchyConfig(context_tokens=CONTEXT, window_tokens=64))
    world(memory)
    for g in range(5, 9):
        memory.append(turns(g, 6))
    root = consolidated(memory, config)
    lines = root.body.summary.split("\n")
    periods = [ln for ln in lines[lines.index(PERIODS_TITLE) + 1 :] if ln.startswith("[")]
    parts = [memory.admin.artifact(T, U, c) for c in root.manifest.children]
    assert 1 <= len(periods) < len(parts)  # the newest, not all: the rest stay its parts
    assert periods[-1].startswith(f"[{day(8).date().isoformat()}")
    assert {p.state for p in parts} == {"published"}
    memory.append(turns(9, 6))
    grown = consolidated(memory, config)
    assert grown.manifest.extends == root.artifact_id
    assert len(grown.body.summary) < 2 * len(root.body.summary) + 200


def test_an_event_of_a_carried_period_after_a_day_without_session_takes_the_full_plan(memory):
    world(memory)
    consolidated(memory)
    # a turn with no session falls back to its day: a period of its own, after the sessions
    memory.append(
        [
            NewEvent(
                tenant_id=T, subject_id=U, event_id="no-session", actor="user", text=SMALL_TALK[2], occurred_at=day(7)
            )
        ]
    )
    assert consolidated(memory).manifest.extends is not None
    # then a turn of session 3, said later still: it belongs to session 3's period
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=U,
                event_id="back-to-3",
                actor="user",
                text=SMALL_TALK[3],
                payload={"session": 3},
                occurred_at=day(8),
            )
        ]
    )
    root = consolidated(memory)
    assert root.manifest.extends is None
    assert fingerprints(memory, root) == full_plan(memory)
    keys = [memory.admin.artifact(T, U, c).manifest.part.key for c in root.manifest.children]
    assert len(keys) == len(set(keys))


def test_a_last_period_wider_than_the_window_still_grows_by_its_tail(memory):
    config = ConsolidationConfig(hierarchy=HierarchyConfig(context_tokens=CONTEXT, window_tokens=64))
    world(memory)
    consolidated(memory, config)
    for start in (100, 140, 180):  # session 4 grows to several parts, more than the window inlines
        memory.append(turns(4, 30, start=start))
        root = consolidated(memory, config)
        assert root.manifest.extends is not None
        assert fingerprints(memory, root) == full_plan(memory, config)
    parts = [memory.admin.artifact(T, U, c) for c in root.manifest.children]
    inlined = [ln for ln in root.body.summary.split("\n") if ln.startswith("[")]
    assert sum(p.manifest.part.key.startswith("session 4") for p in parts) > len(inlined)


def test_a_whole_number_digest_ratio_is_kept_as_the_ratio_it_is(memory):
    config = ConsolidationConfig(hierarchy=HierarchyConfig(context_tokens=CONTEXT, digest_ratio=1))
    world(memory)
    root = consolidated(memory, config)
    assert root.manifest.tree.digest_ratio == 1.0
    memory.append(turns(5, 4))
    assert consolidated(memory, config).manifest.extends == root.artifact_id
