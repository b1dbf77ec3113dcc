"""Loss-aware recall, on every store: what the published summary dropped is what a query brings back first.

When an artifact is built, the events holding an atom its gate found in neither the summary
nor its claims (``atom_missing``) are recorded on its manifest (``Manifest.dropped``). A query
recall then moves those of its hits up by :data:`~lossgate.recall.read.DROPPED_LEAD` places, past
hits the summary kept, while the published summary is fresh; in raw fallback (before any
summary, or once it is stale) nothing changes. Deleted and revoked events never come back.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import lossgate
from lossgate import NewEvent
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.registry import load_registry
from lossgate.recall import read as recall_module
from lossgate.recall.read import dropped_events, recall
from tests.support import REGISTRY_PATH
from tests.support.hierarchy import day, world
from tests.support.tail import consolidated, turns
from tests.support.world import T, U

S = "u-loss"
AT = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)
CHATTER = [
    "the weather was lovely on the walk",
    "we talked about the garden again",
    "did you see the game last night",
    "what time is dinner tonight",
]
QUERY = "parcel garden shed"
# Two hits that say the same; only the first holds a number (the summary will drop both
# lines for its budget, and only the first loses an atom). BM25 ranks the shorter first.
HELD = "The parcel for the garden shed weighs 37 kg"
PLAIN = "The parcel for the garden shed is heavy"


def ev(event_id: str, text: str, at: datetime = AT) -> NewEvent:
    return NewEvent(tenant_id=T, subject_id=S, event_id=event_id, occurred_at=at, text=text)


def two_hits(memory) -> None:
    memory.append([ev("held", HELD), ev("plain", PLAIN)])
    memory.append([ev(f"c{i}", f"{CHATTER[i % 4]} ({i})", AT + timedelta(days=1 + i // 20)) for i in range(60)])


def consolidate(memory) -> None:
    attempt = memory.consolidate(T, S, config=ConsolidationConfig(budget_tokens=300))
    assert attempt.status == "published", (attempt.status, attempt.violations, attempt.error)


def ranked(memory, **kw) -> list[str]:
    """The event hits of a query recall, best first (the record keeps them in rank order)."""
    got = recall(memory.store, T, S, query=QUERY, context=False, **kw)
    ids = [i for i in got.record.candidate_ids if i in ("held", "plain")]
    assert set(ids) == {"held", "plain"} or "held" not in ids, ids
    return ids


def test_an_event_whose_number_the_summary_dropped_is_ranked_ahead_after_consolidation(memory):
    two_hits(memory)
    assert ranked(memory) == ["plain", "held"]  # raw fallback: the store's ranking, the shorter first
    consolidate(memory)
    summary = memory.recall(T, S).summary
    assert "37 kg" not in summary and PLAIN not in summary
    artifact = memory.admin.artifact(T, S, memory.admin.alias(T, S).artifact_id)
    assert "held" in artifact.manifest.dropped and "plain" not in artifact.manifest.dropped
    assert "held" in dropped_events(memory.store, T, S)
    assert ranked(memory) == ["held", "plain"]
    assert ranked(memory, loss_aware=False) == ["plain", "held"]
    # under the smallest budget that returns the held one, it comes back alone: a recall
    # without the preference spends that budget on the other
    budget = next(b for b in range(10, 2000) if "held" in returned(memory, b))
    assert returned(memory, budget) == ["held"]
    assert returned(memory, budget, loss_aware=False) == ["plain"]


def returned(memory, budget: int, **kw) -> list[str]:
    """Of the two hits, those a query recall returns under ``budget``."""
    got = recall(memory.store, T, S, query=QUERY, context=False, budget=budget, **kw)
    return [e.event_id for e in got.events if e.event_id in ("held", "plain")]


def test_a_stale_summary_changes_nothing(memory):
    two_hits(memory)
    consolidate(memory)
    assert ranked(memory) == ["held", "plain"]
    memory.revoke_event(T, S, "c7", reason="not said")  # the epoch moves: the summary is stale
    got = recall(memory.store, T, S, query=QUERY, context=False)
    assert got.mode == "raw_fallback"
    assert dropped_events(memory.store, T, S) == frozenset()
    assert ranked(memory) == ["plain", "held"]


def test_a_deleted_dropped_event_never_comes_back(memory, monkeypatch):
    two_hits(memory)
    consolidate(memory)
    assert ranked(memory) == ["held", "plain"]
    memory.delete_event(T, S, "held")
    consolidate(memory)
    # even a dropped list that still named it (an artifact stored before the deletion) resurrects nothing
    monkeypatch.setattr(recall_module, "_tree_dropped", lambda *a: frozenset({"held", "plain"}))
    for context in (True, False):
        for budget in (None, 2000):
            got = recall(memory.store, T, S, query="parcel garden shed kg 37", context=context, budget=budget)
            assert got.mode == "summary"
            assert "held" not in {e.event_id for e in got.events} and "37 kg" not in got.render()
            assert "held" not in got.record.candidate_ids


def test_the_dropped_list_survives_a_read_back_and_a_restart(store_url):
    memory = lossgate.open(store_url)
    memory.admin.load_predicates(load_registry(REGISTRY_PATH))
    two_hits(memory)
    consolidate(memory)
    alias = memory.admin.alias(T, S)
    written = memory.admin.artifact(T, S, alias.artifact_id).manifest.dropped
    assert "held" in written and list(written) == sorted(written)
    memory.close()
    recall_module._trees.clear()
    recall_module._parts.clear()
    again = lossgate.open(store_url)
    try:
        assert again.admin.artifact(T, S, alias.artifact_id).manifest.dropped == written
        with again.store.read() as tx:
            assert tx.artifact_drops(T, S, [alias.artifact_id]) == {alias.artifact_id: (written, ())}
        assert ranked(again) == ["held", "plain"]
    finally:
        again.close()


def test_a_tree_ranks_by_the_union_of_its_root_and_parts_and_reads_each_part_once(memory, monkeypatch):
    world(memory)
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=U,
                event_id=f"n{i}",
                actor="user",
                payload={"session": 2},
                text=f"parcel {4410 + i} left the depot with {i + 2} boxes",
                occurred_at=day(2) + timedelta(minutes=40 + i),
            )
            for i in range(12)
        ]
    )
    first = consolidated(memory)
    assert first.manifest.path == "hierarchical" and len(first.manifest.children) >= 4
    parts = {c: memory.admin.artifact(T, U, c).manifest.dropped for c in first.manifest.children}
    assert any(parts.values()), parts
    # a root's own list holds every part's it brings (and what its own gate found)
    assert set().union(*parts.values()) <= set(first.manifest.dropped)
    assert dropped_events(memory.store, T, U) == frozenset(first.manifest.dropped)

    read: list[list[str]] = []
    with memory.store.read() as tx:
        reader = type(tx)
    original = reader.artifact_drops

    def counting(self, tenant_id, subject_id, artifact_ids):
        read.append(list(artifact_ids))
        return original(self, tenant_id, subject_id, artifact_ids)

    for session in (5, 6, 7):
        memory.append(turns(session, 6))
        root = consolidated(memory)
        assert root.manifest.extends is not None and root.manifest.carried
        with monkeypatch.context() as patched:
            patched.setattr(reader, "artifact_drops", counting)
            read.clear()
            union = dropped_events(memory.store, T, U)
            again = dropped_events(memory.store, T, U)
        expected = set(root.manifest.dropped).union(
            *(memory.admin.artifact(T, U, c).manifest.dropped for c in root.manifest.carried)
        )
        assert union == again == frozenset(expected)
        assert (
            set(first.manifest.dropped)
            - {e for c in root.manifest.new_parts for e in memory.admin.artifact(T, U, c).manifest.dropped}
            <= union
        )
        # the root once, then only the carried parts never read before; the second read is cached
        asked = [i for batch in read for i in batch]
        assert asked[0] == root.artifact_id and root.artifact_id not in asked[1:]
        if session > 5:
            assert len(asked) <= 1 + 2, asked  # not every part again
        else:
            assert len(asked) == 1 + len(root.manifest.carried)


def test_dropped_hits_move_up_a_bounded_number_of_places():
    first = recall_module._dropped_first
    hits = [f"h{i}" for i in range(40)]
    assert first(hits, frozenset()) == hits
    assert first(hits, frozenset({"h3"}), lead=20) == ["h3", *[h for h in hits if h != "h3"]]
    moved = first(hits, frozenset({"h30", "h31"}), lead=20)
    # each passes the kept hits up to twenty places above it, never another dropped hit
    assert moved.index("h30") == 10 and moved.index("h31") == 12
    assert [h for h in moved if h not in ("h30", "h31")] == [h for h in hits if h not in ("h30", "h31")]
    assert first(hits, frozenset({"nowhere"}), lead=20) == hits  # nothing is added
    assert sorted(first(hits, frozenset(hits[::3]), lead=5)) == sorted(hits)


def test_with_no_budget_a_dropped_hit_just_past_k_moves_in_through_the_public_api(memory):
    two_hits(memory)
    consolidate(memory)

    def first(**kw) -> list[str]:
        got = memory.recall(T, S, query=QUERY, k=1, context=False, **kw)
        return [e.event_id for e in got.events]

    assert first() == ["held"]  # the store ranks "plain" first; "held" was read past k and moved in
    assert first(loss_aware=False) == ["plain"]
