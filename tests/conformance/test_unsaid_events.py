"""Recall without a query shows the newest message whenever the summary does not quote it.

A summary can cover events it does not say: a model's narrative tells the conversation in its
own words (and under the ``omit`` policy a sentence the gate cannot prove is left out, or
every one); a hierarchical root's period digest keeps a share of its period's lines, and a
long newest turn may not fit. Recall without a query then shows the covered events newer than
the newest one the summary quotes word for word, besides those after its coverage, within
its ``k`` and budget, deleted text never among them, and the recall attests. A summary that
quotes its newest turn keeps the hot tail after its coverage.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lossgate import NewEvent
from lossgate.consolidate.chat import ChatCompressor, ChatConfig
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.wording import event_line
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


def _said(memory, said=SAID, *, hours: int = 0):
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=e, text=t, occurred_at=AT + timedelta(hours=i * hours))
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


def test_a_narrative_pruned_part_way_or_not_at_all_leaves_the_newest_message_shown(memory):
    _said(memory)
    kept = "They talked about a trip."
    for text, left_out in ((f"{kept} {UNPROVEN}", 1), (kept, 0)):
        attempt = _consolidated(memory, text, incremental=False)
        assert attempt.status == "published", (attempt.violations, attempt.error)
        assert sum(d.startswith("narrative_omitted:") for d in attempt.details) == left_out, attempt.details
        got = memory.recall(T, S)
        assert got.mode == "summary" and kept in got.render() and "GRD-4471" not in got.render()
        assert [e.event_id for e in got.events] == ["e-trip", "e-cat"]  # the narrative quotes neither
        assert "Miso needs a sitter" in got.render()
        assert memory.verify_recall(T, S, got.record.recall_id).state == "unchanged"
    _said(memory, [("e-new", "The sitter can start on Monday.")])
    assert [e.event_id for e in memory.recall(T, S, k=2).events] == ["e-cat", "e-new"]


def test_a_period_digest_that_leaves_out_a_long_newest_turn_leaves_it_shown(memory):
    chatter = "we discussed the garden shed roof, the paint colour and the gutters again today"
    said = [(f"t{i}", f"turn {i}: {chatter}") for i in range(40)]
    newest = (
        "Please ship the parcel to the blue house on Friday, not the office, because nobody will be "
        "there to sign for it and the courier said they cannot leave it outside in the rain again."
    )
    _said(memory, [*said, ("t-last", newest)], hours=3)
    attempt = memory.consolidate(T, S, config=ConsolidationConfig(hierarchy=BY_DAY))
    assert attempt.status == "published", (attempt.violations, attempt.error)
    got = memory.recall(T, S)
    assert [e.event_id for e in got.events][-1] == "t-last" and "blue house" in got.render()
    # the turns the digest quotes are not shown again: only those after the newest it quotes
    summary = memory.admin.artifact(T, S, attempt.artifact_id).body.summary
    lines = summary.splitlines()
    assert got.events and all(event_line(e) not in lines for e in got.events)


def test_a_summary_that_quotes_its_newest_turn_keeps_the_hot_tail_after_its_coverage(memory):
    _said(memory)
    attempt = memory.consolidate(T, S)  # the deterministic compressor quotes the newest turns
    assert attempt.status == "published", (attempt.violations, attempt.error)
    got = memory.recall(T, S)
    assert "Miso needs a sitter" in got.render() and got.events == ()
    _said(memory, [("e-new", "The sitter can start on Monday.")])
    assert [e.event_id for e in memory.recall(T, S).events] == ["e-new"]


def test_a_deleted_event_a_summary_covers_never_returns(memory):
    _said(memory)
    assert _consolidated(memory).status == "published"
    memory.delete_event(T, S, "e-cat", reason="the user asked")
    seen = memory.recall(T, S).render() + memory.recall(T, S, query="Miso sitter").render()
    assert "Miso" not in seen
