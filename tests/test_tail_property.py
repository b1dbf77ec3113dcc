"""Property: a hierarchy grown by its tail is the hierarchy a full plan would cut.

Random histories (sessions of random length, some cut by size, days split or sessions,
turns without a session among them, facts now and then) are appended in random batches,
each followed by a consolidation. After every one, the published root's parts have the
fingerprints of the parts a full plan of the same state would build and every valid event
is in exactly one of them; where every turn has its session, every job after the first
extended the published root instead of planning it all again.
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
from tests.support import REGISTRY_PATH
from tests.support.tail import fingerprints, full_plan
from tests.support.world import REFERENCE_AT, SMALL_TALK

pytestmark = pytest.mark.slow  # a property that consolidates many times per example

T, U = "acme", "user-17"

batches = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=2),  # sessions to move on by (0: the same one)
        st.integers(min_value=1, max_value=14),  # turns
        st.booleans(),  # a fact drawn from the batch's first turn
        st.booleans(),
    ),  # turns without a session (they fall back to their day)
    min_size=2,
    max_size=6,
)


@settings(max_examples=12)
@given(batches=batches, split=st.sampled_from(["session", "day"]))
def test_a_tail_grown_hierarchy_is_the_one_a_full_plan_cuts(batches, split):
    config = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", context_tokens=120, split_by=split))
    with tempfile.TemporaryDirectory() as d:
        memory = lossgate.open(f"sqlite:///{Path(d) / 'm.db'}")
        memory.admin.load_predicates(REGISTRY_PATH)
        session, minute, n = 1, 0, 0
        extended = 0
        for step, (move, turns, with_fact, sessionless) in enumerate(batches):
            session += move
            events = []
            for _ in range(turns):
                events.append(
                    NewEvent(
                        tenant_id=T,
                        subject_id=U,
                        event_id=f"e{n}",
                        actor="user",
                        text=f"{SMALL_TALK[n % len(SMALL_TALK)]} ({n})",
                        payload={} if sessionless else {"session": session},
                        occurred_at=REFERENCE_AT + timedelta(days=session, minutes=minute),
                    )
                )
                n += 1
                minute += 3
            memory.append(events)
            if with_fact:
                memory.assert_facts(
                    [
                        NewFact(
                            tenant_id=T,
                            subject_id=U,
                            fact_id=f"f{step}",
                            predicate="chat.topic",
                            value=f"topic {step}",
                            source_event_ids=[events[0].event_id],
                        )
                    ]
                )
            attempt = memory.consolidate(T, U, config=config)
            assert attempt.status == "published", (attempt.violations, attempt.error)
            root = memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)
            extended += root.manifest.extends is not None
            assert fingerprints(memory, root) == full_plan(memory, config)
            covered = [
                r.id
                for c in root.manifest.children
                for r in memory.admin.artifact(T, U, c).manifest.inputs[
                    : memory.admin.artifact(T, U, c).manifest.part.events
                ]
            ]
            assert sorted(covered) == sorted(e.event_id for e in memory.events(T, U))
        if not any(sessionless for *_, sessionless in batches):
            assert extended == len(batches) - 1  # every job after the first extended the published root
        memory.close()
