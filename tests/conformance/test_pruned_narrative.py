"""A summary whose narrative was pruned still leaves its newest events in reach of recall.

Under the ``omit`` policy a model sentence the gate cannot prove is left out; the published
summary covers the conversation but may no longer say what that sentence told (when every
sentence goes, nothing of it). Recall without a query then shows the newest events whatever
the coverage (a query finds them anyway), within its ``k`` and budget, deleted text never
among them, and the recall attests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lossgate import NewEvent
from lossgate.consolidate.chat import ChatCompressor, ChatConfig
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.testing.chat_server import ScriptedChatServer, narrative

T, S = "travel-co", "user-31"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
UNPROVEN = "The garden got 3 new rose bushes, delivered on ticket GRD-4471."  # no source says so
SAID = [
    ("e-trip", "I am planning a trip to Lisbon next month."),
    ("e-cat", "My cat Miso needs a sitter while I travel."),
]


BY_DAY = HierarchyConfig(mode="always", split_by="day")


def _consolidated(memory, text: str = UNPROVEN, **config):
    with ScriptedChatServer(default=narrative(text)) as server:
        compressor = ChatCompressor(
            ChatConfig(base_url=server.url, model="scripted-1", api_key="sk-test", backoff_s=0.0, max_backoff_s=0.0)
        )
        return memory.consolidate(T, S, compressor=compressor, config=ConsolidationConfig(max_attempts=1, **config))


def _said(memory, said=SAID, *, days: bool = False):
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=e, text=t, occurred_at=AT + timedelta(days=i if days else 0))
            for i, (e, t) in enumerate(said)
        ]
    )


def test_recall_without_a_query_shows_what_a_narrative_pruned_to_nothing_covers(memory):
    _said(memory)
    attempt = _consolidated(memory)
    assert attempt.status == "published", (attempt.violations, attempt.error)
    assert any(d.startswith("narrative_omitted:") for d in attempt.details), attempt.details

    got = memory.recall(T, S)
    assert got.mode == "summary"
    assert [e.event_id for e in got.events] == ["e-trip", "e-cat"]
    block = got.render()
    assert "Miso needs a sitter" in block and "GRD-4471" not in block
    assert memory.verify_recall(T, S, got.record.recall_id).state == "unchanged"
    assert memory.verify_recall(T, S, got.record.recall_id).rendered_matches is True
    # k and the budget still bound it: the newest first
    assert [e.event_id for e in memory.recall(T, S, k=1).events] == ["e-cat"]
    tight = memory.recall(T, S, budget=got.tokens - 1)
    assert tight.tokens <= got.tokens - 1 and [e.event_id for e in tight.events] == ["e-cat"]


def test_recall_without_a_query_shows_the_newest_events_when_a_narrative_was_pruned_part_way(memory):
    _said(memory)
    kept = "They talked about a trip."
    attempt = _consolidated(memory, f"{kept} {UNPROVEN}")
    assert attempt.status == "published", (attempt.violations, attempt.error)
    assert sum(d.startswith("narrative_omitted:") for d in attempt.details) == 1, attempt.details
    assert memory.admin.artifact(T, S, attempt.artifact_id).manifest.narrative_omitted == 1

    got = memory.recall(T, S)
    assert got.mode == "summary"
    block = got.render()
    assert kept in block and "GRD-4471" not in block
    assert [e.event_id for e in got.events] == ["e-trip", "e-cat"]
    assert "Miso needs a sitter" in block
    assert memory.verify_recall(T, S, got.record.recall_id).state == "unchanged"
    # the newest first under k, and a newer event joins them
    assert [e.event_id for e in memory.recall(T, S, k=1).events] == ["e-cat"]
    _said(memory, [("e-new", "The sitter can start on Monday.")])
    assert [e.event_id for e in memory.recall(T, S, k=2).events] == ["e-cat", "e-new"]


def test_a_hierarchy_whose_parts_were_pruned_shows_the_newest_events_until_a_rebuild_says_them(memory):
    _said(memory, days=True)
    attempt = _consolidated(memory, f"They talked about a trip. {UNPROVEN}", hierarchy=BY_DAY)
    assert attempt.status == "published", (attempt.violations, attempt.error)
    root = memory.admin.artifact(T, S, attempt.artifact_id).manifest
    assert root.path == "hierarchical" and root.narrative_omitted == 2  # a sentence out of each day's digest
    assert [e.event_id for e in memory.recall(T, S).events] == ["e-trip", "e-cat"]

    # a rebuild that reuses the stored parts keeps their count; one that builds them again from
    # a narrative it can publish whole says the conversation, and the hot tail is empty again
    reused = _consolidated(memory, "They talked about a trip.", hierarchy=BY_DAY, incremental=False)
    assert memory.admin.artifact(T, S, reused.artifact_id).manifest.narrative_omitted == 2
    assert [e.event_id for e in memory.recall(T, S).events] == ["e-trip", "e-cat"]
    rebuilt = _consolidated(memory, "They talked about a trip.", hierarchy=BY_DAY, incremental=False, reuse_parts=False)
    assert rebuilt.status == "published", (rebuilt.violations, rebuilt.error)
    assert memory.admin.artifact(T, S, rebuilt.artifact_id).manifest.narrative_omitted == 0
    assert memory.recall(T, S).events == ()


def test_a_deleted_event_a_pruned_summary_covers_never_returns(memory):
    _said(memory)
    assert _consolidated(memory).status == "published"
    memory.delete_event(T, S, "e-cat", reason="the user asked")
    seen = memory.recall(T, S).render() + memory.recall(T, S, query="Miso sitter").render()
    assert "Miso" not in seen


def test_a_summary_that_says_its_conversation_keeps_the_hot_tail_after_its_coverage(memory):
    _said(memory)
    kept = "They talked about a trip."
    attempt = _consolidated(memory, kept)
    assert attempt.status == "published", (attempt.violations, attempt.error)
    got = memory.recall(T, S)
    assert kept in got.render() and got.events == ()
    _said(memory, [("e-new", "The sitter can start on Monday.")])
    assert [e.event_id for e in memory.recall(T, S).events] == ["e-new"]
