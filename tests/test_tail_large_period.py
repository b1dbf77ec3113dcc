"""Property: a period larger than one compressor request grows by its last chunk.

One endless session, a bulk import dated on one day, and a history with no dates at all
are appended in random batches (some of long turns, some opening with a turn dated before
all the others) to a subject whose context holds a few turns, so that its one period is
cut into many chunks. After every consolidation the published root extends
the one before (unless a turn dated earlier reordered the parts), its parts
have the fingerprints a full plan of the same state cuts, every
valid event is in exactly one of them, and the job read and built only the root and parts of the
batch's events and the last chunk's (and read the period's first events, which set where
its chunks end), however many chunks the period already had. A full
rebuild of the final state publishes, as the tail-grown roots did, with the same parts.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.store import rows
from tests.support import REGISTRY_PATH
from tests.support.tail import fingerprints, full_plan
from tests.support.world import REFERENCE_AT, SMALL_TALK

T, U = "acme", "user-17"
CONTEXT = 160


def _event(n: int, shape: str, *, long: bool = False, earlier: bool = False) -> NewEvent:
    """Turn ``n`` of ``shape``: ``long`` six times the words, ``earlier`` dated before every
    turn so far (the same day, the same session)."""
    text = f"{SMALL_TALK[n % len(SMALL_TALK)]} (ref INV-{n % 13}, turn {n})"
    text = " ".join([text] * 6) if long else text
    if shape == "session":
        return NewEvent(
            tenant_id=T,
            subject_id=U,
            event_id=f"e{n}",
            actor="user",
            text=text,
            payload={"session": 1},
            occurred_at=REFERENCE_AT + timedelta(minutes=-n if earlier else n),
        )
    if shape == "one day":
        return NewEvent(
            tenant_id=T,
            subject_id=U,
            event_id=f"e{n}",
            actor="user",
            text=text,
            occurred_at=REFERENCE_AT + timedelta(seconds=-n if earlier else n),
        )
    return NewEvent(tenant_id=T, subject_id=U, event_id=f"e{n}", actor="user", text=text)


@pytest.mark.slow
@settings(max_examples=10)
@given(
    shape=st.sampled_from(["session", "one day", "undated"]),
    batches=st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=12),
            st.booleans(),  # turns, a fact
            st.booleans(),
            st.booleans(),
        ),  # long turns, the first dated earlier
        min_size=3,
        max_size=7,
    ),
    opening=st.integers(min_value=90, max_value=160),
)
def test_a_large_period_grows_by_its_last_chunk_as_a_full_plan_cuts_it(shape, batches, opening):
    config = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", context_tokens=CONTEXT))
    with tempfile.TemporaryDirectory() as d:
        memory = lossgate.open(f"sqlite:///{Path(d) / 'm.db'}")
        memory.admin.load_predicates(REGISTRY_PATH)
        memory.append([_event(n, shape) for n in range(opening)])
        memory.assert_facts(
            [
                NewFact(
                    tenant_id=T,
                    subject_id=U,
                    fact_id="peanuts",
                    predicate="food.peanuts_allowed",
                    value=False,
                    source_event_ids=["e0"],
                )
            ]
        )
        assert memory.consolidate(T, U, config=config).status == "published"
        n = opening
        dated_earlier = False
        for step, (turns, with_fact, long, earlier) in enumerate(batches):
            earlier = earlier and shape != "undated"
            memory.append([_event(n + j, shape, long=long, earlier=earlier and j == 0) for j in range(turns)])
            if with_fact:
                memory.assert_facts(
                    [
                        NewFact(
                            tenant_id=T,
                            subject_id=U,
                            fact_id=f"f{step}",
                            predicate="chat.topic",
                            value=f"topic {step}",
                            source_event_ids=[f"e{n}"],
                        )
                    ]
                )
            n += turns
            parent = memory.admin.alias(T, U).artifact_id
            last = memory.admin.artifact(
                T, U, memory.admin.artifact(T, U, parent).manifest.children[-1]
            ).manifest.part.events
            before = {a.artifact_id for a in memory.admin.artifacts(T, U)}
            read = []
            with pytest.MonkeyPatch.context() as patched:
                patched.setattr(
                    rows,
                    "event_from_row",
                    lambda row, real=rows.event_from_row: read.append(1) or real(row),  # noqa: B023
                )
                attempt = memory.consolidate(T, U, config=config)
            assert attempt.status == "published", (attempt.violations, attempt.error)
            root = memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)
            # it extended the published root, unless a turn dated earlier reordered the parts
            # (its chunk goes first in time: the full plan, until that chunk is closed)
            dated_earlier = dated_earlier or earlier
            assert root.manifest.extends == parent or dated_earlier
            assert fingerprints(memory, root) == full_plan(memory, config)
            covered = [
                r.id
                for c in root.manifest.children
                for r in memory.admin.artifact(T, U, c).manifest.inputs[
                    : memory.admin.artifact(T, U, c).manifest.part.events
                ]
            ]
            assert sorted(covered) == sorted(e.event_id for e in memory.events(T, U))
            built = [a.manifest.part for a in memory.admin.artifacts(T, U) if a.artifact_id not in before]
            # the root, and the parts of the last chunk's events and the batch's, no others
            assert built.count(None) == 1
            if root.manifest.extends == parent:
                assert turns <= sum(p.events for p in built if p is not None) <= last + turns
                # what it read: the batch, the last chunk, the period's first events (as far
                # as they first exceed the context: they set where chunks end), the facts' sources
                assert len(read) <= 2 * (last + turns) + 30 < opening
        kept = fingerprints(memory, root)
        rebuilt = memory.consolidate(
            T, U, config=ConsolidationConfig(hierarchy=config.hierarchy, incremental=False, reuse_parts=False)
        )
        assert rebuilt.status == "published"
        assert fingerprints(memory, memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)) == kept
        memory.close()


def test_an_endless_session_keeps_growing_by_its_tail_after_a_turn_without_a_session():
    config = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", context_tokens=CONTEXT))
    with tempfile.TemporaryDirectory() as d:
        memory = lossgate.open(f"sqlite:///{Path(d) / 'm.db'}")
        memory.admin.load_predicates(REGISTRY_PATH)
        memory.append([_event(n, "session") for n in range(120)])
        assert memory.consolidate(T, U, config=config).status == "published"
        # a tool's result, in no session: a part of its own (its day) among the session's chunks
        memory.append(
            [
                NewEvent(
                    tenant_id=T,
                    subject_id=U,
                    event_id="tool",
                    actor="tool",
                    text="lookup: 3 results",
                    occurred_at=REFERENCE_AT + timedelta(minutes=120),
                )
            ]
        )
        memory.append([_event(n, "session") for n in range(121, 130)])
        assert memory.consolidate(T, U, config=config).status == "published"
        for start in (130, 140, 150):
            parent = memory.admin.alias(T, U).artifact_id
            memory.append([_event(n, "session") for n in range(start, start + 10)])
            assert memory.consolidate(T, U, config=config).status == "published"
            root = memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)
            assert root.manifest.extends == parent
            assert fingerprints(memory, root) == full_plan(memory, config)
        memory.close()
