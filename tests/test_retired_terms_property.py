"""Property: a job that looks up only the retired values its lines may state marks every line
as a job reading every retired fact would.

Random histories: turns that quote totals and timezones now and then (the current one, an
old one, one never asserted), totals and timezones superseded, a total revoked with its
source, topics asserted at the tail; a consolidation after each batch. After every one, the
published root's summary is the one :func:`~lossgate.gate.superseded.mark` writes from every
retired fact of the subject (each line that states one carries its marker, no other marker),
and jobs extending the root did run (the bounded lookup was exercised).
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.gate.prose import structured_lines
from lossgate.gate.superseded import check_markers, mark, retired_values
from tests.support import REGISTRY_PATH
from tests.support.world import REFERENCE_AT

T, U = "acme", "user-3"
ZONES = ["UTC-05:00", "UTC+01:00", "UTC+02:00", "UTC+09:00"]
TOTALS = ["120.00", "250.00", "999.50", "40.00"]

turn = st.one_of(
    st.just("we talked about the trip"),
    st.sampled_from(ZONES).map(lambda z: f"schedule calls in {z} please"),
    st.sampled_from(TOTALS).map(lambda a: f"the invoice came to ${a}"),
)
change = st.sampled_from(["none", "none", "topic", "zone", "total", "revoke"])
batches = st.lists(st.tuples(st.lists(turn, min_size=1, max_size=6), change), min_size=3, max_size=8)


@settings(max_examples=10)
@given(batches=batches, zone=st.integers(0, 3), total=st.integers(0, 3))
def test_a_bounded_job_marks_what_a_job_reading_every_retired_fact_marks(batches, zone, total):
    config = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", context_tokens=120, split_by="day"))
    with tempfile.TemporaryDirectory() as d:
        memory = lossgate.open(f"sqlite:///{Path(d) / 'm.db'}")
        memory.admin.load_predicates(REGISTRY_PATH)
        n, extended = 0, 0
        active: dict[str, str] = {}
        for step, (texts, what) in enumerate(batches):
            events = [
                NewEvent(
                    tenant_id=T,
                    subject_id=U,
                    event_id=f"e{n + i}",
                    actor="user",
                    text=text,
                    occurred_at=REFERENCE_AT + timedelta(minutes=3 * (n + i)),
                )
                for i, text in enumerate(texts)
            ]
            n += len(events)
            memory.append(events)
            source = [events[0].event_id]
            if what == "topic":
                memory.assert_facts(
                    [
                        NewFact(
                            tenant_id=T,
                            subject_id=U,
                            fact_id=f"t{step}",
                            predicate="chat.topic",
                            value=f"topic {step}",
                            source_event_ids=source,
                        )
                    ]
                )
            elif what in ("zone", "total") or (what == "revoke" and "total" not in active):
                key = "zone" if what == "zone" else "total"
                value = (
                    ZONES[(zone + step) % 4]
                    if key == "zone"
                    else {"amount": TOTALS[(total + step) % 4], "currency": "USD"}
                )
                new = NewFact(
                    tenant_id=T,
                    subject_id=U,
                    fact_id=f"{key}{step}",
                    predicate="timezone" if key == "zone" else "invoice.total",
                    value=value,
                    qualifiers={} if key == "zone" else {"invoice_id": "INV-1"},
                    source_event_ids=source,
                )
                if key in active:
                    memory.supersede(T, U, active[key], new)
                else:
                    memory.assert_facts([new])
                active[key] = new.fact_id or ""
            elif what == "revoke":
                memory.revoke_event(T, U, memory.fact(T, U, active["total"]).source_event_ids[0])
                active = {k: v for k, v in active.items() if memory.fact(T, U, v).status == "active"}
            attempt = memory.consolidate(T, U, config=config)
            assert attempt.status == "published", (attempt.violations, attempt.error)
            root = memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)
            extended += root.manifest.extends is not None
            facts, conflicts = memory.facts(T, U, statuses=None), memory.conflicts(T, U, unresolved_only=True)
            every = retired_values(facts, conflicts)
            own = structured_lines(root.body)
            assert check_markers(root.body.summary, every, own) == []
            assert mark(root.body.summary, every, own) == root.body.summary
        memory.close()
        assert extended > 0 or all(what != "none" for _, what in batches)


def test_a_subject_that_retired_values_before_terms_were_kept_is_read_whole_once(tmp_path):
    """A database migrated from before the store kept terms: the subject's first job reads
    every retired fact and keeps their terms; the next, extending the root, finds the old
    value its new turn quotes by them and marks it."""
    path = tmp_path / "m.db"
    memory = lossgate.open(f"sqlite:///{path}")
    memory.admin.load_predicates(REGISTRY_PATH)
    config = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", context_tokens=120, split_by="day"))

    def said(i: int, text: str) -> NewEvent:
        return NewEvent(
            tenant_id=T,
            subject_id=U,
            event_id=f"e{i}",
            actor="user",
            text=text,
            occurred_at=REFERENCE_AT + timedelta(minutes=3 * i),
        )

    memory.append([said(0, "my timezone is UTC-05:00"), said(1, "I moved, it is UTC+01:00 now")])
    memory.assert_facts(
        [
            NewFact(
                tenant_id=T,
                subject_id=U,
                fact_id="tz-1",
                predicate="timezone",
                value="UTC-05:00",
                source_event_ids=["e0"],
            )
        ]
    )
    memory.supersede(
        T,
        U,
        "tz-1",
        NewFact(
            tenant_id=T, subject_id=U, fact_id="tz-2", predicate="timezone", value="UTC+01:00", source_event_ids=["e1"]
        ),
    )
    with memory.store.write() as tx:  # as the migration leaves a subject that retired values before it
        tx._run("DELETE FROM retired_terms")
        tx._run(
            "INSERT INTO retired_terms_pending (tenant_id, subject_id) SELECT DISTINCT tenant_id, subject_id "
            "FROM facts WHERE status IN ('superseded', 'revoked')"
        )
    with memory.store.read() as tx:
        assert not tx.retired_terms_kept(T, U)
    assert memory.consolidate(T, U, config=config).status == "published"
    with memory.store.read() as tx:
        assert tx.retired_terms_kept(T, U)
        assert [f.fact_id for f in tx.retired_facts_stating(T, U, ["@utc"], through_seq=99)] == ["tz-1", "tz-2"]
    memory.append([said(2, "as I said, schedule calls in UTC-05:00 please")])
    assert memory.consolidate(T, U, config=config).status == "published"
    root = memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)
    assert root.manifest.extends is not None  # the job read what is new
    (line,) = [line for line in root.body.summary.splitlines() if "schedule calls" in line]
    assert line.startswith("- user: as I said") and line.endswith(": timezone is now UTC+01:00]"), line
    memory.close()
