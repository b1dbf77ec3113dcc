"""The invariants of docs/invariants.md under random operation sequences (hypothesis stateful testing).

A state machine drives two subjects through random appends, fact assertions,
supersessions, deletions, revocations, consolidations and recalls, keeping its
own model of which events are valid and which facts are active. After every step,
for both subjects, recall must:

* return a summary only from the artifact the alias points at, published, built
  at the clock's current input_epoch (invariant 2), every claim of which is an
  active fact of that subject;
* never return another subject's facts or events (invariant 7);
* never show the text of a deleted or revoked event (invariants 1 and 11);
* never return a fact that is not active, and always every active critical fact;

and the alias's covers_through never decreases (invariant 3).

It runs against the ``memory`` fixture's store (SQLite, and PostgreSQL when
configured); each hypothesis example gets a tenant of its own, so examples never
see each other's rows and no database has to be emptied in between.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from lossgate import NewEvent, NewFact
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.wording import fact_line

pytestmark = pytest.mark.slow  # a hypothesis state machine on every store

AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
SUBJECTS = ("alice", "bob")
_tenants = itertools.count()

# predicate -> (values to pick from, qualifiers). Two cardinality-one predicates, so
# random assertions also create conflicts; two "many" ones, one critical.
PREDICATES = {
    "food.peanuts_allowed": ([False, True], {"basis": "allergy"}),
    "timezone": (["UTC-05:00", "UTC+01:00", "UTC+09:00"], {}),
    "account.scope": (["billing:read", "billing:write"], {"environment": "staging"}),
    "chat.topic": (None, {}),  # a value naming the subject: leaks are visible as text
}
CRITICAL = {"food.peanuts_allowed", "account.scope"}


@dataclass
class SubjectModel:
    events: dict[str, str] = field(default_factory=dict)  # id -> valid | revoked | deleted
    texts: dict[str, str] = field(default_factory=dict)  # id -> unique token in its text
    facts: dict[str, tuple[str, str, bool]] = field(default_factory=dict)  # id -> (predicate, source, active)
    covers: int = 0

    def valid(self) -> list[str]:
        return sorted(e for e, s in self.events.items() if s == "valid")

    def active(self, predicate: str | None = None) -> list[str]:
        return sorted(f for f, (p, _, on) in self.facts.items() if on and predicate in (None, p))

    def retire_facts_of(self, event_id: str) -> None:
        for fid, (p, src, on) in list(self.facts.items()):  # noqa: B007 - unpacked for its shape
            if src == event_id:
                self.facts[fid] = (p, src, False)


class MemoryMachine(RuleBasedStateMachine):
    memory = None  # set by the test: the fixture's Memory

    def __init__(self) -> None:
        super().__init__()
        self.tenant = f"inv{next(_tenants)}"
        self.model = {s: SubjectModel() for s in SUBJECTS}
        self.n = itertools.count()

    # -- helpers ------------------------------------------------------------------------
    def token(self, subject: str) -> str:
        return f"{subject}x{next(self.n)}x"  # 'x' fences the number: alicex1x is not in alicex10x

    def event(self, subject: str, text: str, **kw) -> NewEvent:
        return NewEvent(
            tenant_id=self.tenant,
            subject_id=subject,
            event_id=f"{subject}-e{next(self.n)}",
            text=text,
            occurred_at=AT,
            **kw,
        )

    def new_fact(self, subject: str, predicate: str, source: str, data) -> NewFact:
        values, quals = PREDICATES[predicate]
        value = f"topic {self.token(subject)}" if values is None else data.draw(st.sampled_from(values))
        return NewFact(
            tenant_id=self.tenant,
            subject_id=subject,
            fact_id=f"{subject}-f{next(self.n)}",
            predicate=predicate,
            value=value,
            qualifiers=quals,
            source_event_ids=(source,),
        )

    # -- rules --------------------------------------------------------------------------
    @initialize()
    def twin_histories(self):
        """Both subjects start alike: two events and a critical fact, so every rule has material."""
        for subject in SUBJECTS:
            self.append(subject, 2)
            source = self.model[subject].valid()[0]
            f = self.memory.assert_fact(
                NewFact(
                    tenant_id=self.tenant,
                    subject_id=subject,
                    fact_id=f"{subject}-f{next(self.n)}",
                    predicate="food.peanuts_allowed",
                    value=False,
                    qualifiers={"basis": "allergy"},
                    source_event_ids=(source,),
                )
            )
            self.model[subject].facts[f.fact_id] = ("food.peanuts_allowed", source, True)

    @rule(subject=st.sampled_from(SUBJECTS), count=st.integers(1, 3))
    def append(self, subject, count):
        m = self.model[subject]
        batch = []
        for _ in range(count):
            tok = self.token(subject)
            e = self.event(subject, f"memo {tok} about the garden")
            batch.append(e)
            m.events[e.event_id], m.texts[e.event_id] = "valid", tok
        self.memory.append(batch)

    @rule(subject=st.sampled_from(SUBJECTS), predicate=st.sampled_from(sorted(PREDICATES)), data=st.data())
    def assert_fact(self, subject, predicate, data):
        m = self.model[subject]
        if not m.valid():
            return
        source = data.draw(st.sampled_from(m.valid()))
        f = self.memory.assert_fact(self.new_fact(subject, predicate, source, data))
        m.facts[f.fact_id] = (predicate, source, True)

    @rule(subject=st.sampled_from(SUBJECTS), data=st.data())
    def supersede(self, subject, data):
        m = self.model[subject]
        if not m.active() or not m.valid():
            return
        old = data.draw(st.sampled_from(m.active()))
        predicate = m.facts[old][0]
        source = data.draw(st.sampled_from(m.valid()))
        new = self.memory.supersede(self.tenant, subject, old, self.new_fact(subject, predicate, source, data))
        m.facts[old] = (predicate, m.facts[old][1], False)
        m.facts[new.fact_id] = (predicate, source, True)

    @rule(subject=st.sampled_from(SUBJECTS), data=st.data())
    def delete_event(self, subject, data):
        m = self.model[subject]
        alive = sorted(e for e, s in m.events.items() if s != "deleted")
        if not alive:
            return
        target = data.draw(st.sampled_from(alive))
        self.memory.delete_event(self.tenant, subject, target)
        m.events[target] = "deleted"
        m.retire_facts_of(target)

    @rule(subject=st.sampled_from(SUBJECTS), data=st.data())
    def revoke_event(self, subject, data):
        m = self.model[subject]
        if not m.valid():
            return
        target = data.draw(st.sampled_from(m.valid()))
        self.memory.revoke_event(self.tenant, subject, target)
        m.events[target] = "revoked"
        m.retire_facts_of(target)

    @rule(subject=st.sampled_from(SUBJECTS), incremental=st.booleans())
    def consolidate(self, subject, incremental):
        if not self.model[subject].events:
            return  # a subject with no history: see test_consolidating_a_subject_with_no_history_*
        attempt = self.memory.consolidate(self.tenant, subject, config=ConsolidationConfig(incremental=incremental))
        assert attempt.status in ("published", "rejected", "error"), attempt  # one worker: no conflicts
        if attempt.status == "published":
            assert attempt.covers_through == self.memory.admin.clock(self.tenant, subject).high_water

    @precondition(lambda self: any(m.events for m in self.model.values()))
    @rule(subject=st.sampled_from(SUBJECTS), query=st.sampled_from([None, "memo garden", "topic"]))
    def recall_with_query(self, subject, query):
        self.check_recall(subject, query)

    # -- invariants ---------------------------------------------------------------------
    @invariant()
    def recall_is_fresh_scoped_and_clean(self):
        for subject in SUBJECTS:
            self.check_recall(subject, None)

    def check_recall(self, subject: str, query: str | None) -> None:
        mem, t, m = self.memory, self.tenant, self.model[subject]
        r = mem.recall(t, subject, query=query)
        alias, clock = mem.admin.alias(t, subject), mem.admin.clock(t, subject)  # read independently of the record
        assert (r.record.alias, r.record.clock) == (alias, clock)  # ... which must tell the truth

        if r.mode == "summary":
            art = mem.admin.artifact(t, subject, r.artifact_id)
            assert art.state == "published" and alias.artifact_id == art.artifact_id
            assert alias.source_epoch == clock.input_epoch == art.manifest.input_epoch
            assert {c.fact_id for c in art.body.claims} <= set(m.active())  # fresh: nothing retired in it
            assert (art.body.tenant_id, art.body.subject_id) == (t, subject)
        else:
            assert (r.summary, r.artifact_id) == (None, None)

        assert all((f.tenant_id, f.subject_id, f.status) == (t, subject, "active") for f in r.facts)
        assert {f.fact_id for f in r.facts} <= set(m.active())
        critical = {f for f in m.active() if m.facts[f][0] in CRITICAL}
        assert critical <= {f.fact_id for f in r.facts}
        assert all((e.tenant_id, e.subject_id, e.state) == (t, subject, "valid") for e in r.events)
        assert {e.event_id for e in r.events} <= set(m.valid())

        shown = "\n".join([r.summary or ""] + [e.text or "" for e in r.events] + [fact_line(f) for f in r.facts])
        gone = [m.texts[e] for e, s in m.events.items() if s != "valid"]
        assert not [tok for tok in gone if tok in shown], "a deleted or revoked event's text was recalled"
        other = next(s for s in SUBJECTS if s != subject)
        assert f"{other}x" not in shown, "another subject's content was recalled"

        assert alias.covers_through >= m.covers, "coverage regressed"
        m.covers = alias.covers_through


def test_recall_invariants_hold_under_random_operation_sequences(memory):
    # Sized to stay well under 30 s: a PostgreSQL round trip costs several times SQLite's.
    examples, steps = (40, 30) if memory.store.url.startswith("sqlite") else (15, 20)
    MemoryMachine.memory = memory
    try:
        run_state_machine_as_test(
            MemoryMachine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=steps,
                database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )
    finally:
        MemoryMachine.memory = None
