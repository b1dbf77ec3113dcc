"""A returned fact on one side of an open conflict is never printed as if settled.

Raw memory (no fresh summary: a new conflict makes it stale) states each open conflict
between the facts a recall returns. When a query matches one side only, or ``k`` or the
budget keeps one side only, the other side comes back too, with the conflict's line, never
trimmed; the attestation rebuilds the same block; once the conflict resolves, neither the
line nor the loser returns.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lossgate import NewEvent, NewFact
from lossgate.consolidate.tokens import default_counter
from lossgate.model.wording import conflict_line, fact_line

T, U = "acme", "user-40"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)


def _fact(fact_id: str, value: str, source: str) -> NewFact:
    return NewFact(
        tenant_id=T,
        subject_id=U,
        fact_id=fact_id,
        predicate="travel.seat_preference",
        value=value,
        source_event_ids=(source,),
    )


@pytest.fixture
def contested(memory):
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=U, event_id=e, text=text, occurred_at=AT)
            for e, text in (
                ("e-window", "I like a window seat on long flights."),
                ("e-chat", "the garden looks lovely this week"),
                ("e-aisle", "Book me an aisle seat from now on."),
            )
        ]
    )
    memory.assert_fact(_fact("f-window", "window", "e-window"))
    memory.assert_fact(_fact("f-aisle", "aisle", "e-aisle"))
    (conflict,) = memory.conflicts(T, U)
    return memory, conflict


def _says_both(memory, r, conflict) -> None:
    line = conflict_line(conflict.predicate, conflict.fact_ids)
    assert r.mode == "raw_fallback" and r.conflicts == (conflict,)
    assert {"f-window", "f-aisle"} <= {f.fact_id for f in r.facts}
    lines = r.render().split("\n")
    assert lines.count(line) == 1
    assert "- travel.seat_preference: window" in lines and "- travel.seat_preference: aisle" in lines
    assert {fact_line(f) for f in r.facts} <= set(lines)
    assert set(r.record.selected_ids) <= set(r.record.candidate_ids)  # the record says what it read
    verified = memory.verify_recall(T, U, r.record.recall_id)
    assert (verified.state, verified.rendered_matches) == ("unchanged", True)


@pytest.mark.parametrize(
    ("query", "k"),
    [("window", 20), ("aisle", 20), ("window seat long flights", 20), (None, 1)],
)
def test_the_other_side_comes_back_with_the_conflict(contested, query, k):
    memory, conflict = contested
    r = memory.recall(T, U, query=query, k=k)
    _says_both(memory, r, conflict)
    assert r.tokens == default_counter()(r.render())


def test_a_tight_budget_never_trims_the_other_side(contested):
    memory, conflict = contested
    for query in ("window", None):
        whole = memory.recall(T, U, query=query, k=1)
        lines = whole.render().split("\n")
        first = next(ln for ln in lines if ln.startswith("- travel.seat_preference"))
        # room for the header and one side's line only: the other side and the conflict come anyway
        room = default_counter()("\n".join((lines[0], "Facts:", first)) + "\n")
        r = memory.recall(T, U, query=query, k=1, budget=room)
        assert r.events == ()
        _says_both(memory, r, conflict)
        assert r.tokens >= default_counter()(r.render())  # line by line, each with its newline


def test_once_the_conflict_resolves_neither_the_line_nor_the_loser_returns(contested):
    memory, conflict = contested
    memory.supersede(T, U, "f-window", _fact("f-aisle-2", "aisle", "e-window"))
    assert memory.conflicts(T, U) == []
    for query in ("window", "aisle", None):
        r = memory.recall(T, U, query=query)
        block = r.render()
        assert r.conflicts == () and "UNRESOLVED CONFLICT" not in block
        assert "travel.seat_preference: window" not in block
        verified = memory.verify_recall(T, U, r.record.recall_id)
        assert (verified.state, verified.rendered_matches) == ("unchanged", True)


def test_a_budget_that_trims_one_side_of_two_read_brings_it_back(contested):
    memory, conflict = contested
    whole = memory.recall(T, U, k=20)
    lines = whole.render().split("\n")
    assert {"f-window", "f-aisle"} <= set(whole.record.candidate_ids)  # both sides read
    first = next(ln for ln in lines if ln.startswith("- travel.seat_preference"))
    room = default_counter()("\n".join((lines[0], "Facts:", first)) + "\n")
    r = memory.recall(T, U, k=20, budget=room)
    _says_both(memory, r, conflict)
