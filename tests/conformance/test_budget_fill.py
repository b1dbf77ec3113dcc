"""A budget fills with what fits: one long event leaves out itself, not what comes after it.

Recall without a query takes the newest events first, then the summary's recent
conversation; with a query, the hits in relevance order. An event longer than the room left
is skipped, and the shorter ones after it, the summary's lines and the facts still come in,
so a tool's 3,000-word result never empties the block an agent reads.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lossgate import NewEvent
from lossgate.consolidate.tokens import default_counter

T, S = "travel-co", "user-long"
AT = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)
LONG = "TOOL " + "x " * 3000 + "END"


def _append(memory, rows: list[tuple[str, str, str]]) -> None:
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=e, text=t, kind=kind, occurred_at=AT + timedelta(minutes=i))
            for i, (e, t, kind) in enumerate(rows)
        ]
    )


@pytest.fixture
def long_newest(memory):
    _append(
        memory,
        [
            ("e1", "I'm travelling to Lisbon in May.", "message"),
            ("e2", "Please book a window seat.", "message"),
            ("e3", LONG, "tool_result"),
        ],
    )
    return memory


@pytest.mark.parametrize("budget", [100, 500, 2000])
def test_raw_memory_keeps_the_shorter_events_beside_a_long_newest_one(long_newest, budget):
    found = long_newest.recall(T, S, budget=budget)
    assert found.mode == "raw_fallback"
    assert [e.event_id for e in found.events] == ["e1", "e2"]
    assert "window seat" in found.render()
    assert 0 < found.tokens <= budget


@pytest.mark.parametrize("budget", [100, 500, 2000])
def test_a_summary_keeps_its_recent_lines_beside_a_long_newest_event(long_newest, budget):
    assert long_newest.consolidate(T, S).status == "published"
    _append(long_newest, [("e4", LONG.replace("TOOL", "MORE"), "tool_result")])  # after the coverage: the hot tail
    found = long_newest.recall(T, S, budget=budget)
    assert found.mode == "summary"
    assert "window seat" in found.render()  # a line of the summary's recent conversation
    assert "MORE" not in found.render()
    assert 0 < found.tokens <= budget


def test_a_long_hit_leaves_room_for_the_next(long_newest):
    found = long_newest.recall(T, S, query="TOOL Lisbon", budget=200)
    ids = [e.event_id for e in found.events]
    assert "e1" in ids and "e3" not in ids
    assert found.tokens <= 200


@pytest.mark.parametrize("query", [None, "ok"])
@pytest.mark.parametrize("budget", [60, 300, 1000])
def test_the_block_an_agent_reads_stays_within_the_budget(memory, query, budget):
    # many short lines (each newline a token of the block) over days that alternate in seq
    # order (a backfilled history: a day's header printed at every change, not once a day)
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id=f"ok{i}",
                text=f"ok {i}",
                occurred_at=AT + timedelta(days=(i % 3) * 5, minutes=i),
            )
            for i in range(300)
        ]
    )
    for _ in range(2):
        found = memory.recall(T, S, query=query, budget=budget, k=300)
        rendered = default_counter()(found.render())
        assert rendered <= budget
        assert rendered <= found.tokens <= rendered + 1
        assert found.events or found.summary  # and the room is used, not left
        assert budget - found.tokens < 12
        assert memory.consolidate(T, S).status == "published"
