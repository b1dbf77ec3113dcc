"""A flat incremental consolidation that reads what is new (selection.select_delta), on both stores.

With ``hierarchy="never"`` and a fresh published summary, a job reads the events after the
summary's coverage, the active facts and what they cite, never the history. Its gate reads
the new events' quotes and the structured part against that snapshot and the parent's
conversation lines by reference; a summary with any line of its own (a changed number, an
invented turn, a rewritten narrative) is gated against the whole snapshot instead, so the
shortcut can only ever accept what the full gate accepts of verbatim lines.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from lossgate import NewEvent
from lossgate.consolidate import pipeline
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from tests.support.world import AT, SMALL_TALK, T, U, fact

FLAT = ConsolidationConfig(hierarchy=HierarchyConfig(mode="never"))


def turns(start: int, n: int, *, text: str | None = None) -> list[NewEvent]:
    return [
        NewEvent(
            tenant_id=T,
            subject_id=U,
            event_id=f"e{i}",
            actor="user",
            text=text or f"{SMALL_TALK[i % len(SMALL_TALK)]} ({i})",
            occurred_at=AT + timedelta(minutes=i),
        )
        for i in range(start, start + n)
    ]


def history(memory) -> None:
    memory.append(turns(0, 40))
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=U,
                event_id="e-seats",
                actor="user",
                occurred_at=AT,
                text="We have 40 seats on the plan.",
            )
        ]
    )
    memory.assert_facts([fact("f-seats", "subscription.seats", 40, ["e-seats"])])
    first = memory.consolidate(T, U, config=FLAT)
    assert first.status == "published"


class _Rewriting(DeterministicCompressor):
    """Writes what the deterministic compressor writes, then changes one line of it."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def compress(self, request):
        body = super().compress(request)
        body["summary"] = body["summary"].replace(self.old, self.new)
        return body


def whole_reads(monkeypatch) -> list[int]:
    """Count the reads of the whole snapshot a job makes (the gate's fallback)."""
    calls: list[int] = []
    real = pipeline.snapshot_at

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(pipeline, "snapshot_at", counted)
    return calls


def test_a_tail_job_reads_what_is_new_and_the_parent_by_reference(memory, monkeypatch):
    history(memory)
    memory.append(turns(100, 5))

    def never(*args, **kw):
        raise AssertionError("the whole history was read")

    monkeypatch.setattr(pipeline, "select", never)
    monkeypatch.setattr(pipeline, "snapshot_at", never)
    attempt = memory.consolidate(T, U, config=FLAT)
    assert attempt.status == "published" and attempt.gate_outcome in ("clean", "acceptable")
    art = memory.admin.artifact(T, U, attempt.artifact_id)
    assert art.manifest.path == "incremental"
    # what it read: the parent, the five new events and the active fact, not the history
    assert set(attempt.selected_ids) == {art.manifest.inputs[0].id, *(f"e{i}" for i in range(100, 105)), "f-seats"}
    assert {r.kind for r in art.manifest.inputs} == {"artifact", "event", "fact"}
    assert all(f"e{i}" not in {r.id for r in art.manifest.inputs} for i in range(40))
    # the parent's lines it kept are in the summary as they were
    parent = memory.admin.artifact(T, U, art.manifest.inputs[0].id)
    kept = set(parent.body.summary.split("\n")) & set(art.body.summary.split("\n"))
    assert any(SMALL_TALK[39 % len(SMALL_TALK)] in line for line in kept)


@pytest.mark.parametrize("policy", ["omit", "refuse"])
def test_a_changed_carried_line_is_gated_against_the_whole_history(memory, monkeypatch, policy):
    history(memory)
    memory.append(turns(100, 5))
    memory.admin.set_narrative_policy(T, policy)
    calls = whole_reads(monkeypatch)
    # the parent's conversation says "(39)": a line of the compressor's own, not a verbatim one
    attempt = memory.consolidate(T, U, config=FLAT, compressor=_Rewriting("(39)", "(93)"))
    # under omit the line, a quote of no event, is left out before the gate reads anything
    assert calls or policy == "omit"
    refused_or_left_out(memory, attempt, policy, "(93)", ("atom_added", "atom_changed"))


@pytest.mark.parametrize("policy", ["omit", "refuse"])
def test_an_invented_turn_is_gated_against_the_whole_history(memory, monkeypatch, policy):
    history(memory)
    memory.append(turns(100, 5))
    memory.admin.set_narrative_policy(T, policy)
    calls = whole_reads(monkeypatch)
    attempt = memory.consolidate(
        T, U, config=FLAT, compressor=_Rewriting("(104)", "(104)\n- user: the door code is 7731")
    )
    assert calls or policy == "omit"
    refused_or_left_out(memory, attempt, policy, "7731", ("atom_added",))


def refused_or_left_out(memory, attempt, policy: str, said: str, codes: tuple[str, ...]) -> None:
    """Under ``refuse`` the attempt is refused for what the line says; under ``omit`` (the
    default) the line is left out, the attempt says why, and what is published never says it."""
    if policy == "refuse":
        assert attempt.status == "rejected", attempt
        assert any(v.endswith(codes) for v in attempt.violations), attempt.violations
        return
    assert attempt.status == "published", (attempt.violations, attempt.error)
    # a changed or invented quote of an event is no quote: it goes whole
    assert any(
        d.startswith("narrative_omitted: a line in the form of a quote that quotes no event") and said in d
        for d in attempt.details
    ), attempt.details
    assert said not in memory.admin.artifact(T, U, attempt.artifact_id).body.summary


def test_a_revoked_old_input_takes_the_whole_snapshot_again(memory):
    history(memory)
    memory.append(turns(100, 5))
    assert memory.consolidate(T, U, config=FLAT).status == "published"
    memory.revoke_event(T, U, "e3", reason="a mistake")
    memory.append(turns(200, 2))
    attempt = memory.consolidate(T, U, config=FLAT)
    art = memory.admin.artifact(T, U, attempt.artifact_id)
    assert attempt.status == "published" and art.manifest.path == "direct"
    assert f"{SMALL_TALK[3]} (3)" not in art.body.summary
