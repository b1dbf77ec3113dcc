"""A superseded value is never shown as current, flat, by periods or grown by the tail.

After ``timezone: UTC-05:00`` is superseded by ``UTC+01:00``, a conversation line that no
fact cites ("As I said, schedule calls in UTC-05:00 please.") stays in the summary only
with lossgate's marker, and recall states ``UTC+01:00`` as the timezone. The gate refuses
a summary that states the old value without its marker, or that carries a marker lossgate
would not write.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lossgate import NewEvent, NewFact
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.consolidate.selection import snapshot_at
from lossgate.gate import check
from lossgate.gate.superseded import retired_values
from lossgate.model.records import ArtifactBody

T, U = "acme", "traveller"
MARK = "[superseded {day}: timezone is now UTC+01:00]"
SHAPES = {
    "flat": ConsolidationConfig(hierarchy=HierarchyConfig(mode="never")),
    "by-day": ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day")),
}


def at(day: int) -> datetime:
    return datetime(2026, 3, day, 9, 0, tzinfo=UTC)


def said(event_id: str, text: str, day: int) -> NewEvent:
    return NewEvent(tenant_id=T, subject_id=U, event_id=event_id, text=text, occurred_at=at(day))


def move_to_lisbon(memory, config) -> str:
    """The timezone case: published with UTC-05:00, then superseded; returns the marker."""
    memory.append(
        [
            said("e1", "I'm in New York, my timezone is UTC-05:00.", 1),
            said("e2", "As I said, schedule calls in UTC-05:00 please.", 2),
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T, subject_id=U, fact_id="tz-1", predicate="timezone", value="UTC-05:00", source_event_ids=["e1"]
        )
    )
    assert memory.consolidate(T, U, config=config).status == "published"
    memory.append([said("e3", "I moved to Lisbon, use UTC+01:00 from now on.", 4)])
    new = memory.supersede(
        T,
        U,
        "tz-1",
        NewFact(
            tenant_id=T, subject_id=U, fact_id="tz-2", predicate="timezone", value="UTC+01:00", source_event_ids=["e3"]
        ),
    )
    return MARK.format(day=(new.valid_from or new.recorded_at).date().isoformat())


def lines_with_old_value(text: str) -> list[str]:
    return [line for line in text.splitlines() if "UTC-05:00" in line]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_rebuilt_summary_shows_the_superseded_value_only_with_its_marker(memory, shape):
    marker = move_to_lisbon(memory, SHAPES[shape])

    attempt = memory.consolidate(T, U, config=SHAPES[shape])
    assert attempt.status == "published", attempt.violations
    summary = memory.admin.artifact(T, U, attempt.artifact_id).body.summary
    old = lines_with_old_value(summary)
    assert old and all(line.endswith(marker) for line in old), summary
    rendered = memory.recall(T, U).render()
    assert "timezone: UTC+01:00" in rendered
    assert all(line.endswith(marker) for line in lines_with_old_value(rendered)), rendered

    # grown by the tail: the carried line keeps its marker, the new one needs none
    memory.append([said("e4", "Thanks, talk soon.", 5)])
    grown = memory.consolidate(T, U, config=SHAPES[shape])
    assert grown.status == "published", grown.violations
    again = memory.admin.artifact(T, U, grown.artifact_id).body.summary
    assert lines_with_old_value(again) == old


def test_what_holds_now_moves_with_the_ledger(memory):
    move_to_lisbon(memory, SHAPES["flat"])
    memory.consolidate(T, U, config=SHAPES["flat"])
    memory.append([said("e5", "Back in New York after all: UTC-04:00 for the summer.", 6)])
    memory.supersede(
        T,
        U,
        "tz-2",
        NewFact(
            tenant_id=T, subject_id=U, fact_id="tz-3", predicate="timezone", value="UTC-04:00", source_event_ids=["e5"]
        ),
    )

    attempt = memory.consolidate(T, U, config=SHAPES["flat"])
    assert attempt.status == "published", attempt.violations
    summary = memory.admin.artifact(T, U, attempt.artifact_id).body.summary
    for line in lines_with_old_value(summary) + [ln for ln in summary.splitlines() if "UTC+01:00 from" in ln]:
        assert line.endswith("timezone is now UTC-04:00]"), summary


def test_the_gate_refuses_an_unmarked_old_value_and_a_forged_marker(memory):
    marker = move_to_lisbon(memory, SHAPES["flat"])
    attempt = memory.consolidate(T, U, config=SHAPES["flat"])
    published = memory.admin.artifact(T, U, attempt.artifact_id).body
    registry, high_water = memory.admin.registry, memory.admin.clock(T, U).high_water
    with memory.store.read() as tx:
        snapshot = snapshot_at(tx, T, U, registry, through_seq=high_water)
    retired = retired_values(snapshot.facts)

    def gate(summary: str) -> list[str]:
        body = ArtifactBody.model_validate({**published.model_dump(), "summary": summary})
        return check(snapshot, body, registry, retired=retired).lines()

    assert gate(published.summary) == []
    assert "tz-1:superseded_unmarked" in gate(published.summary.replace(" " + marker, ""))
    forged = published.summary.replace(marker, "[superseded 2026-03-04: timezone is now UTC-05:00]")
    assert "summary:marker_forged" in gate(forged)
    elsewhere = published.summary + "\n- user: Thanks! " + marker  # a marker on a line that states no old value
    assert "summary:marker_forged" in gate(elsewhere)


def test_a_line_stating_one_side_of_an_open_conflict_carries_the_other(memory):
    memory.append(
        [
            said("c1", "My timezone is UTC+01:00.", 1),
            said("c2", "My timezone is UTC+02:00.", 2),
            said("c3", "Either UTC+01:00 or UTC+02:00, I forget which.", 3),
        ]
    )
    memory.assert_facts(
        [
            NewFact(tenant_id=T, subject_id=U, fact_id=f"tz-{n}", predicate="timezone", value=v, source_event_ids=[e])
            for n, (v, e) in enumerate((("UTC+01:00", "c1"), ("UTC+02:00", "c2")))
        ]
    )
    (conflict,) = memory.conflicts(T, U)

    attempt = memory.consolidate(T, U, config=SHAPES["flat"])
    assert attempt.status == "published", attempt.violations
    lines = memory.admin.artifact(T, U, attempt.artifact_id).body.summary.splitlines()
    day = conflict.detected_at.date().isoformat()
    assert f"- user: My timezone is UTC+01:00. [in conflict {day}: timezone is also UTC+02:00]" in lines
    assert f"- user: My timezone is UTC+02:00. [in conflict {day}: timezone is also UTC+01:00]" in lines
    assert "- user: Either UTC+01:00 or UTC+02:00, I forget which." in lines  # states both: settles nothing
