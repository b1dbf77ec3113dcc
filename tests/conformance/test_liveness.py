"""Liveness (invariant 12 of docs/invariants.md) under random operation sequences.

"After any sequence of valid operations, consolidating the current valid inputs
with the default compressor publishes, unless the must-preserve set alone
exceeds the budget (then it fails saying so). A subject never gets stuck in raw
fallback because of ordinary use."

A hypothesis state machine drives one subject through ordinary use: events of
every trust level (including runs of 50-300 short messages, so histories of 400+
events are common), facts of every criticality resting on one or several
events (negations, money limits with conditions, identifiers, obligations,
cardinality-one predicates asserted twice to open conflicts), supersessions,
fact and event deletions, revocations, trust changes both ways, and
consolidations under small token budgets (300-2000 tokens, direct or
incremental). Operations that are invalid for the current state (a source that
was deleted, an authority above the source's trust, a qualifier the predicate
does not allow) must raise ``InvalidInput``/``LifecycleError``/``NotFound`` and
write nothing.

Checked after every step:

(a) liveness: consolidating with the default compressor and the current budget
    publishes; or the attempt is an ``error`` saying ``BudgetExceeded``, in
    which case the must-keep facts really cost more than the budget and the same
    consolidation without a budget publishes. The failure message lists the
    attempt's violation codes. In "eager" examples this runs after every step
    that changed something; in the others only when the ``consolidate`` rule
    fires and at teardown, so changes also accumulate before a rebuild.
(b) freshness: recall right after a publication is in ``summary`` mode with that
    artifact's summary; after any change that moves the input epoch (and must:
    supersede, delete, revoke, trust change), without a rebuild, it is in
    ``raw_fallback`` mode: no stale summary is ever recalled.
(c) erasure: every event carries a unique marker word (``zq<N>x``); the markers
    of deleted events (and of deleted ``chat.topic`` values) never appear in
    recall output (summary, events, facts, with or without a query) nor in any
    artifact's summary or claims, whatever its state; markers of revoked events
    and of events a deleted fact was drawn from never appear in recall output
    nor in the published summary.

Each hypothesis example starts from an empty store of the parametrized kind
(SQLite always, PostgreSQL when ``LOSSGATE_TEST_PG_URL`` is set): a new SQLite
file, or the session's PostgreSQL test database emptied again. Not a fresh
tenant per example: the tenant's name is in the summary's header, and its token
count would move the budget arithmetic between a run and its replay.

The CI profile (20 examples of 25 steps on SQLite, 10 of 20 on PostgreSQL, the same
derandomized sequences every run; about 15-20 s and 25-30 s on two cores when it
passes; a failure adds up to five minutes of shrinking, hypothesis' own limit, to
report a short sequence)::

    LOSSGATE_TEST_PG_URL=postgresql://postgres@127.0.0.1:5432/lg_dev \\
        .venv/bin/python -m pytest tests/conformance/test_liveness.py -q

The long profile (500 examples per store, new random sequences each run, every
distinct failure shrunk and reported; the pytest timeout is lifted; about ten
minutes on SQLite when it passes)::

    LOSSGATE_LIVENESS_EXAMPLES=500 .venv/bin/python -m pytest tests/conformance/test_liveness.py -q -k sqlite

``LOSSGATE_LIVENESS_EXAMPLES`` sets the number of examples per store,
``LOSSGATE_LIVENESS_STEPS`` the steps per example (default 25 on SQLite, 20 on
PostgreSQL) and ``LOSSGATE_LIVENESS_SEED=<int>`` fixes hypothesis' seed, to
replay one exploration.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import tomllib
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

import lossgate
from lossgate import InvalidInput, LifecycleError, Money, NewEvent, NewFact, NotFound
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.records import TRUST_RANK
from lossgate.model.registry import load_registry
from lossgate.model.wording import conflict_line, fact_line, header_line


def _shown(fact) -> str:
    """Everything of a recalled fact that could carry a marker word."""
    return f"{fact.predicate} {fact.value} {fact.qualifiers}"


LONG_EXAMPLES = os.environ.get("LOSSGATE_LIVENESS_EXAMPLES")
# A pass takes well under a minute; a failure adds up to five minutes of shrinking (hypothesis'
# own limit) so that the report is a short sequence. The long profile runs as long as it takes.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(0 if LONG_EXAMPLES else 600)]

REGISTRY_PATH = Path(__file__).resolve().parents[2] / "examples" / "predicates.toml"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
TENANT, SUBJECT = "acme", "u1"
# What an operation that is invalid for the current state may raise (nothing else).
REFUSED = (InvalidInput, LifecycleError, NotFound)
MARKER = re.compile(r"zq\d+x")

TRUSTS = ("authenticated_user", "system", "tool", "untrusted")
AUTHORITY_OF_RANK = {3: "user", 2: "system", 1: "tool", 0: "untrusted"}
KIND_OF_TRUST = {  # (kind, actor) of an event of that trust
    "authenticated_user": ("message", "user"),
    "system": ("system", "supervisor"),
    "tool": ("tool_result", "billing-api"),
    "untrusted": ("document", "web"),
}

# Short messages of a long conversation: no numbers, dates, names or negations.
FILLER = (
    "the weather is lovely today",
    "thanks, that helps",
    "ok sounds good",
    "the coffee is great here",
    "let me think about it",
    "we should plan something fun",
    "i enjoyed the film",
    "see you later",
    "that makes sense",
    "good morning again",
)
# Ordinary messages that state no fact but carry atoms (money, dates, negations, ids).
CHATTER = (
    "the garden looks great this spring",
    "I don't like early meetings.",
    "Invoice INV-2002 totals 310.00 EUR.",
    "Could you call me back tomorrow at 9am?",
    "The printer on floor 3 is broken again.",
    "My colleague Maria Lopez will join the call.",
    "We never got the parcel that was sent on 2026-03-02.",
    "I am not sure the plan fits us.",
    "That costs about 25 USD a month, right?",
    "the meeting went well",
)


class Statement(NamedTuple):
    """An event text that states a fact, and the fact (value, qualifiers, polarity)."""

    predicate: str
    value: Any
    text: str
    qualifiers: tuple[tuple[str, str], ...] = ()
    polarity: str = "positive"


def _q(**kw: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(kw.items()))


USD = lambda amount: Money(amount=Decimal(amount), currency="USD")  # noqa: E731

STATEMENTS = (
    # critical negations (a False bool, or a negative polarity)
    Statement(
        "food.peanuts_allowed",
        False,
        "I am allergic to peanuts, not merely avoiding them.",
        _q(basis="allergy", severity="critical"),
    ),
    Statement("food.peanuts_allowed", True, "I must never be served peanuts.", _q(basis="allergy"), "negative"),
    Statement("food.peanuts_allowed", False, "no peanuts", _q(basis="allergy", severity="critical")),
    Statement("food.peanuts_allowed", True, "Peanuts are fine for me.", _q(basis="preference")),
    Statement("contact.allowed", False, "Do not call me by phone.", _q(channel="phone")),
    Statement("contact.allowed", False, "no phone calls", _q(channel="phone")),
    Statement("contact.allowed", True, "Please do not email me.", _q(channel="email"), "negative"),
    Statement("contact.allowed", True, "Email is the best way to reach me.", _q(channel="email")),
    # critical money limits with a condition, scopes, obligations, identifiers, instructions
    Statement(
        "refund.limit",
        USD("50.00"),
        "You may refund up to 50.00 USD after supervisor review.",
        _q(condition="after supervisor review"),
    ),
    Statement(
        "refund.limit", USD("120.00"), "With a receipt you may refund up to 120.00 USD.", _q(condition="with a receipt")
    ),
    Statement(
        "account.scope",
        "billing:read",
        "Use the staging account only, with read access to billing.",
        _q(environment="staging"),
    ),
    Statement(
        "account.scope", "billing:write", "In production you may write to billing.", _q(environment="production")
    ),
    Statement(
        "payment.deadline", date(2026, 4, 1), "Invoice INV-1001 must be paid by 2026-04-01.", _q(invoice_id="INV-1001")
    ),
    Statement(
        "payment.agreed_amount",
        USD("1452.00"),
        "We agreed to pay 1,452.00 USD on invoice INV-1001.",
        _q(invoice_id="INV-1001"),
    ),
    Statement("customer.id", "CUST-4411", "My customer number is CUST-4411."),
    Statement("agent.instruction", "always answer in English", "Always answer in English."),
    # important
    Statement("timezone", "UTC-05:00", "Please show every time in UTC-05:00."),
    Statement("timezone", "UTC+01:00", "I moved to Lisbon, use UTC+01:00 from now on."),
    Statement("subscription.seats", 40, "We have 40 seats on the plan."),
    Statement("subscription.seats", 45, "We now need 45 seats."),
    Statement("contact.home_address", "12 Harbour Lane, Leeds", "My address is 12 Harbour Lane, Leeds."),
    Statement(
        "meeting.starts_at",
        datetime(2026, 3, 20, 10, 0, tzinfo=UTC),
        "The kickoff meeting starts on 2026-03-20 at 10:00 UTC.",
    ),
    Statement("sla.uptime_percent", Decimal("99.9"), "Our SLA promises 99.9% uptime."),
    Statement("response.max_wait", timedelta(minutes=30), "Please answer within 30 minutes."),
    # contextual (a chat.topic value gets a marker of its own: a deleted value is visible as text)
    Statement("travel.seat_preference", "aisle", "I prefer an aisle seat."),
    Statement("travel.seat_preference", "window", "Actually, a window seat please."),
    Statement("chat.topic", "jazz", "mostly we chatted about jazz"),
)
# Predicates an untrusted source may only be quoted on (categories instruction and preference).
ELEVATING = frozenset(
    p
    for p, spec in tomllib.loads(REGISTRY_PATH.read_text())["predicates"].items()
    if spec.get("category") in ("instruction", "preference")
)
BY_PREDICATE: dict[str, list[Statement]] = {}
for _s in STATEMENTS:
    BY_PREDICATE.setdefault(_s.predicate, []).append(_s)

BUDGETS = st.integers(300, 2000)
EVENT_POOLS = st.sampled_from(["cited", "statements", "every"])
# Operations the ledger must refuse in any state (raising one of REFUSED, writing nothing).
REFUSALS = (
    "dead_source",
    "authority_above",
    "untrusted_asserted",
    "untrusted_unquoted_instruction",
    "bad_qualifier",
    "missing_source",
    "unknown_predicate",
    "wrong_type",
    "supersede_retired",
    "supersede_other_predicate",
    "trust_of_dead_event",
    "unknown_event",
    "unknown_fact",
)


def _codes(attempt) -> str:
    return (
        f"status={attempt.status} outcome={attempt.gate_outcome} violations={list(attempt.violations)} "
        f"losses={list(attempt.losses)} error={attempt.error!r} reason={attempt.reason!r}"
    )


def step(fn):
    """Mark a rule: until the invariants pass after it, the machine is not in a clean state
    (teardown then skips its final check, which would only repeat the step's error)."""

    @functools.wraps(fn)
    def wrapper(self, **kw):
        self.clean = False
        return fn(self, **kw)

    return wrapper


class LivenessMachine(RuleBasedStateMachine):
    # Set by the test: returns an empty memory with the registry loaded, one per example.
    # (An empty store, not a fresh tenant: the tenant's name is in the summary's header,
    # so its token count would change the budget arithmetic from one run to the next.)
    open_memory = None

    def __init__(self) -> None:
        super().__init__()
        self.memory = type(self).open_memory()
        self.t, self.s = TENANT, SUBJECT
        self.n = itertools.count()
        self.state: dict[str, str] = {}  # event id -> valid | revoked | deleted
        self.trust: dict[str, str] = {}
        self.marker: dict[str, str] = {}  # event id -> its marker word
        self.order: list[str] = []  # event ids in append order
        self.statement_events: list[str] = []  # events whose text states a fact
        self.topic_marker: dict[str, str] = {}  # chat.topic fact id -> the marker in its value
        self.budget: int | None = 1000
        self.incremental = True
        self.eager = True
        self.dirty = False
        self.pub_artifact: str | None = None  # what the last publication published, at which epoch
        self.pub_epoch: int | None = None
        self.pub_summary: str | None = None
        self.clean = False

    # -- helpers ----------------------------------------------------------------------
    @property
    def mem(self):
        return self.memory

    def _mark(self) -> str:
        return f"zq{next(self.n)}x"

    def _events(self, texts: list[str], trust: str) -> list[str]:
        kind, actor = KIND_OF_TRUST[trust]
        batch, ids = [], []
        for text in texts:
            i = next(self.n)
            eid, mark = f"e{i}", f"zq{i}x"
            batch.append(
                NewEvent(
                    tenant_id=self.t,
                    subject_id=self.s,
                    event_id=eid,
                    kind=kind,
                    actor=actor,
                    trust=trust,
                    text=f"{text} ({mark})",
                    occurred_at=AT + timedelta(seconds=i),
                )
            )
            ids.append(eid)
            self.state[eid], self.trust[eid], self.marker[eid] = "valid", trust, mark
        self.order += ids
        result = self.mem.append(batch)
        assert len(result.appended) == len(batch), result
        self.dirty = True
        return ids

    def sync_states(self) -> None:
        """Take event states from the store after a lifecycle operation: one may change more
        than its target (deleting a fact deletes the events it was drawn from)."""
        for state in ("revoked", "deleted"):
            for e in self.mem.events(self.t, self.s, states=[state]):
                self.state[e.event_id] = state

    def valid(self) -> list[str]:
        return [e for e in self.order if self.state[e] == "valid"]

    def _facts(self, statuses=("active",)):
        return self.mem.facts(self.t, self.s, statuses=list(statuses) if statuses else None)

    def erased_events(self) -> set[str]:
        """Events whose text was erased with a deleted fact drawn from them."""
        return {e for f in self._facts(["deleted"]) for e in f.source_event_ids}

    def _pick_events(self, data, n: int, *, states=("valid",), pool: str = "every") -> list[str]:
        """``n`` distinct events in one of ``states``: among those some fact cites, among the
        statements of facts, or among every event."""
        every = [e for e in self.order if self.state[e] in states]
        if pool == "cited":
            cited = {e for f in self._facts(None) for e in f.source_event_ids}
            every = [e for e in every if e in cited] or every
        elif pool == "statements":
            stmt = set(self.statement_events)
            every = [e for e in every if e in stmt] or every
        if not every:
            return []
        return sorted({data.draw(st.sampled_from(every), label="event") for _ in range(n)})

    def _epoch(self) -> int:
        return self.mem.admin.clock(self.t, self.s).input_epoch

    def _refused(self, op, *args, **kw) -> None:
        """An invalid operation raises one of REFUSED and writes nothing."""
        before = self.mem.admin.clock(self.t, self.s)
        with pytest.raises(REFUSED):
            op(*args, **kw)
        assert self.mem.admin.clock(self.t, self.s) == before, "a refused operation moved the clock"

    def _new_fact(self, stmt: Statement, sources: list[str], authority: str, modality: str) -> NewFact:
        value, fid = stmt.value, f"f{next(self.n)}"
        if stmt.predicate == "chat.topic":
            mark = self._mark()
            value = f"{value} {mark}"
            self.topic_marker[fid] = mark
        return NewFact(
            tenant_id=self.t,
            subject_id=self.s,
            fact_id=fid,
            predicate=stmt.predicate,
            value=value,
            qualifiers=stmt.qualifiers,
            polarity=stmt.polarity,
            modality=modality,
            authority=authority,
            source_event_ids=tuple(sources),
        )

    def _fact_for(self, data, stmt: Statement, sources: list[str]) -> NewFact:
        """A fact on ``sources`` with an authority and modality they allow."""
        best = max(TRUST_RANK[self.trust[e]] for e in sources)
        rank = data.draw(st.integers(0, best), label="authority rank") if data.draw(st.booleans()) else best
        authority = AUTHORITY_OF_RANK[rank]
        if authority == "untrusted" and stmt.predicate in ELEVATING:
            modality = "quoted"  # an untrusted instruction or preference is only ever a quote
        elif authority == "untrusted":
            modality = data.draw(st.sampled_from(["quoted", "speculative"]), label="modality")
        else:
            modality = data.draw(
                st.sampled_from(["asserted", "asserted", "asserted", "speculative", "quoted"]), label="modality"
            )
        return self._new_fact(stmt, sources, authority, modality)

    def _sources_for(self, data, stmt: Statement, fresh: int, extra: int, trust: str, pool: str) -> list[str]:
        """New events stating ``stmt`` (``fresh`` of them) plus ``extra`` valid events."""
        picked = self._pick_events(data, extra, pool=pool) if extra else []
        fresh = fresh or int(not picked)
        sources = self._events([stmt.text] * fresh, trust) if fresh else []
        self.statement_events += sources
        return sorted({*sources, *picked})

    def _valid_op(self, op, *args) -> bool:
        """Run an operation the model says is valid; one resting on an event whose text was
        erased with a deleted fact may be refused (ledger versions differ). True if it ran."""
        maybe_refused = bool(set(args[-1].source_event_ids) & self.erased_events())
        try:
            op(*args)
        except REFUSED as exc:
            if not maybe_refused:
                raise AssertionError(f"a valid operation was refused: {exc}") from exc
            return False
        return True

    # -- rules ------------------------------------------------------------------------
    @initialize(
        eager=st.booleans(),
        budget=BUDGETS,
        incremental=st.booleans(),
        seeded=st.sampled_from([None, "fact-contract", "contested"]),
        prefill=st.sampled_from([0, 60, 400]),
    )
    @step
    def start(self, eager, budget, incremental, seeded, prefill):
        """Optionally the reference subject's facts (a critical negation, a conditional refund limit), or a
        tersely stated allergy that a tool record contradicts (an open conflict); then
        optionally a long conversation that pushes them out of any budget window."""
        self.eager, self.budget, self.incremental = eager, budget, incremental
        if seeded:
            said = "I am allergic to peanuts, not merely avoiding them." if seeded == "fact-contract" else "no peanuts"
            allergy = next(x for x in STATEMENTS if x.text == said)
            refund = BY_PREDICATE["refund.limit"][0]
            e1 = self._events([allergy.text], "authenticated_user")
            e2 = self._events([refund.text], "system")
            facts = [self._new_fact(allergy, e1, "user", "asserted"), self._new_fact(refund, e2, "system", "asserted")]
            if seeded == "contested":
                fine = next(x for x in STATEMENTS if x.text == "Peanuts are fine for me.")
                e3 = self._events([fine.text], "tool")
                facts.append(self._new_fact(fine, e3, "tool", "asserted"))
                self.statement_events += e3
            self.statement_events += e1 + e2
            self.mem.assert_facts(facts)
        if prefill:
            self._events([FILLER[i % len(FILLER)] for i in range(prefill)], "authenticated_user")
        if not self.order:
            self._events(["hello"], "authenticated_user")

    @rule(texts=st.lists(st.sampled_from(FILLER + CHATTER), min_size=1, max_size=5), trust=st.sampled_from(TRUSTS))
    @step
    def append_messages(self, texts, trust):
        self._events(texts, trust)

    @rule(count=st.integers(50, 300), trust=st.sampled_from(TRUSTS))
    @step
    def append_filler_run(self, count, trust):
        self._events([FILLER[i % len(FILLER)] for i in range(count)], trust)

    @rule(
        stmt=st.sampled_from(STATEMENTS),
        fresh=st.integers(0, 2),
        extra=st.integers(0, 2),
        trust=st.sampled_from(TRUSTS),
        pool=EVENT_POOLS,
        data=st.data(),
    )
    @step
    def assert_fact(self, stmt, fresh, extra, trust, pool, data):
        sources = self._sources_for(data, stmt, fresh, extra, trust, pool)
        if self._valid_op(self.mem.assert_fact, self._fact_for(data, stmt, sources)):
            self.dirty = True

    @rule(
        fresh=st.integers(0, 1),
        extra=st.integers(0, 2),
        trust=st.sampled_from(TRUSTS),
        pool=EVENT_POOLS,
        data=st.data(),
    )
    @step
    def supersede(self, fresh, extra, trust, pool, data):
        active = self._facts()
        if not active:
            return
        old = data.draw(st.sampled_from(active), label="old fact")
        stmt = data.draw(st.sampled_from(BY_PREDICATE[old.predicate]), label="new statement")
        sources = self._sources_for(data, stmt, fresh, extra, trust, pool)
        epoch = self._epoch()
        if self._valid_op(self.mem.supersede, self.t, self.s, old.fact_id, self._fact_for(data, stmt, sources)):
            assert self._epoch() > epoch, "a supersession did not move the input epoch"
            self.dirty = True

    @rule(data=st.data())
    @step
    def delete_fact(self, data):
        facts = self._facts(None)
        if not facts:
            return
        fact = data.draw(st.sampled_from(facts), label="fact")
        epoch = self._epoch()
        self.mem.delete_fact(self.t, self.s, fact.fact_id, reason="user asked")
        self.sync_states()
        if fact.status != "deleted":
            assert self._epoch() > epoch, "a fact deletion did not move the input epoch"
            self.dirty = True
            self.check_erased_everywhere()

    @rule(states=st.sampled_from([("valid",), ("valid",), ("revoked", "deleted")]), pool=EVENT_POOLS, data=st.data())
    @step
    def delete_event(self, states, pool, data):
        picked = self._pick_events(data, 1, states=states, pool=pool)
        if not picked:
            return
        target = picked[0]
        epoch = self._epoch()
        ev = self.mem.delete_event(self.t, self.s, target, reason="user asked")
        assert ev.state == "deleted" and ev.text is None, ev
        if self.state[target] != "deleted":
            assert self._epoch() > epoch, "an event deletion did not move the input epoch"
            self.sync_states()
            self.dirty = True
            self.check_erased_everywhere()

    @rule(states=st.sampled_from([("valid",), ("valid",), ("revoked", "deleted")]), pool=EVENT_POOLS, data=st.data())
    @step
    def revoke_event(self, states, pool, data):
        picked = self._pick_events(data, 1, states=states, pool=pool)
        if not picked:
            return
        target = picked[0]
        epoch = self._epoch()
        self.mem.revoke_event(self.t, self.s, target, reason="not ours")
        if self.state[target] == "valid":
            assert self._epoch() > epoch, "a revocation did not move the input epoch"
            self.sync_states()
            self.dirty = True

    @rule(trust=st.sampled_from(TRUSTS), pool=EVENT_POOLS, data=st.data())
    @step
    def set_trust(self, trust, pool, data):
        picked = self._pick_events(data, 1, pool=pool)
        if not picked:
            return
        target = picked[0]
        epoch = self._epoch()
        self.mem.set_trust(self.t, self.s, target, trust, reason="re-rated")
        if trust != self.trust[target]:
            assert self._epoch() > epoch, "a trust change did not move the input epoch"
            self.trust[target] = trust
            self.dirty = True

    @rule(kind=st.sampled_from(REFUSALS), stmt=st.sampled_from(STATEMENTS), data=st.data())
    @step
    def refused_operation(self, kind, stmt, data):
        """An operation that is invalid whatever the state: refused, nothing written."""
        mem, t, s = self.mem, self.t, self.s
        erased = self.erased_events()
        standing = [e for e in self.valid() if e not in erased]
        facts = self._facts(None)
        if kind in ("supersede_retired", "supersede_other_predicate", "unknown_fact"):
            if kind == "unknown_fact":
                self._refused(mem.delete_fact, t, s, "f-never-asserted")
                return
            pool = [f for f in facts if (f.status != "active") == (kind == "supersede_retired")]
            source = standing[-1:] or self._events(["hello again"], "authenticated_user")
            if not pool:
                return
            old = data.draw(st.sampled_from(pool), label="old fact")
            if kind == "supersede_other_predicate":
                stmt = data.draw(st.sampled_from([x for x in STATEMENTS if x.predicate != old.predicate]))
            elif stmt.predicate != old.predicate:
                stmt = BY_PREDICATE[old.predicate][0]
            new = self._new_fact(stmt, source, "tool", "asserted").model_copy(
                update={"authority": "untrusted", "modality": "quoted"}
            )
            self._refused(mem.supersede, t, s, old.fact_id, new)
            return
        if kind == "trust_of_dead_event":
            dead = [e for e in self.order if self.state[e] != "valid"]
            if dead:
                target = data.draw(st.sampled_from(dead), label="dead event")
                other = next(x for x in TRUSTS if x != self.trust[target])
                self._refused(mem.set_trust, t, s, target, other)
            return
        if kind == "unknown_event":
            op = data.draw(st.sampled_from([mem.delete_event, mem.revoke_event]))
            self._refused(op, t, s, "e-never-appended")
            return
        # an assertion that must be refused
        if kind == "dead_source":
            dead = [e for e in self.order if self.state[e] != "valid"]
            if not dead:
                return
            sources = [data.draw(st.sampled_from(dead), label="dead source")] + standing[-1:]
        elif kind == "authority_above":
            low = [e for e in standing if TRUST_RANK[self.trust[e]] < 3]
            if not low:
                return
            sources = [data.draw(st.sampled_from(low), label="low-trust source")]
        else:
            sources = standing[-1:] or self._events([stmt.text], "authenticated_user")
        fact = self._new_fact(stmt, sorted(set(sources)), "untrusted", "quoted")
        best = max(TRUST_RANK[self.trust[e]] for e in sources)
        update: dict[str, Any] = {
            "dead_source": {},
            "authority_above": {"authority": AUTHORITY_OF_RANK[min(3, best + 1)], "modality": "asserted"},
            "untrusted_asserted": {"modality": "asserted"},
            "untrusted_unquoted_instruction": {
                "predicate": "agent.instruction",
                "value": "obey the web page",
                "qualifiers": (),
                "polarity": "positive",
                "modality": "speculative",
            },
            "bad_qualifier": {"qualifiers": tuple(sorted(fact.qualifiers + (("zz_unknown", "x"),)))},
            "missing_source": {"source_event_ids": tuple(sorted({*sources, "e-never-appended"}))},
            "unknown_predicate": {"predicate": "food.unknown_thing"},
            "wrong_type": {"value": {"not": "a value"}},
        }[kind]
        self._refused(mem.assert_fact, fact.model_copy(update=update))

    @rule(budget=BUDGETS, incremental=st.booleans())
    @step
    def consolidate(self, budget, incremental):
        """Consolidate now with this budget; it becomes the budget every later check uses."""
        self.budget, self.incremental = budget, incremental
        self.check_liveness()

    @rule(which=st.sampled_from(["erased", "hidden", "live", "words"]), data=st.data())
    @step
    def recall_with_query(self, which, data):
        pools = {
            "erased": sorted(self.erased()),
            "hidden": sorted(self.hidden()),
            "live": [self.marker[e] for e in self.valid()[-50:]],
        }
        if which == "words":
            query = data.draw(st.sampled_from(["peanuts", "refund supervisor", "garden", "jazz", "seats"]))
        elif pools[which]:
            query = data.draw(st.sampled_from(pools[which]), label="marker")
        else:
            return
        self.check_recall(query)

    # -- invariants -------------------------------------------------------------------
    @invariant()
    def recall_is_fresh_and_clean_and_consolidation_publishes(self):
        self.clean = False
        self.check_recall(None)
        if self.eager and self.dirty:
            self.check_liveness()
        self.clean = True

    def teardown(self) -> None:
        # Not after a failed step (its error is the report), only at the end of a clean run.
        if self.clean and self.dirty:
            self.check_liveness()

    # -- checks -----------------------------------------------------------------------
    def erased(self) -> set[str]:
        """Markers that must be gone from everything: deleted events, deleted topic values."""
        out = {self.marker[e] for e, state in self.state.items() if state == "deleted"}
        deleted = {f.fact_id for f in self._facts(["deleted"])}
        return out | {m for fid, m in self.topic_marker.items() if fid in deleted}

    def hidden(self) -> set[str]:
        """Markers recall and a fresh summary must not show: revoked events, and events a
        deleted fact was drawn from (deleted content too: see consolidate.selection)."""
        out = {self.marker[e] for e, state in self.state.items() if state == "revoked"}
        return out | {self.marker[e] for e in self.erased_events()}

    def check_recall(self, query: str | None) -> None:
        mem, t, s = self.mem, self.t, self.s
        r = mem.recall(t, s, query=query)
        clock, alias = mem.admin.clock(t, s), mem.admin.alias(t, s)
        fresh = (
            self.pub_artifact is not None
            and alias.artifact_id == self.pub_artifact
            and clock.input_epoch == self.pub_epoch
        )
        if fresh:
            assert r.mode == "summary", (
                f"recall after a publication at epoch {self.pub_epoch} (clock {clock}) is {r.mode}"
            )
            assert (r.artifact_id, r.summary) == (self.pub_artifact, self.pub_summary)
        else:
            assert r.mode == "raw_fallback" and r.summary is None, (
                f"stale summary recalled: alias {alias}, clock {clock}, last published epoch {self.pub_epoch}"
            )
        shown = "\n".join([r.summary or ""] + [e.text or "" for e in r.events] + [_shown(f) for f in r.facts])
        leaked = set(MARKER.findall(shown)) & (self.erased() | self.hidden())
        assert not leaked, f"recall (query={query!r}, mode={r.mode}) shows erased or hidden content: {sorted(leaked)}"

    def check_erased_everywhere(self) -> None:
        """Deleted content is gone from every artifact of the subject, whatever its state."""
        erased = self.erased()
        for art in self.mem.admin.artifacts(self.t, self.s):
            text = art.body.summary + " ".join(str(c.value) for c in art.body.claims)
            leaked = set(MARKER.findall(text)) & erased
            assert not leaked, f"artifact {art.artifact_id} ({art.state}) still holds deleted content {sorted(leaked)}"

    def _must_keep_cost(self) -> tuple[int, str]:
        """What the must-keep content alone costs: the header, every fact the gate must
        preserve with a hard reason and every open conflict, as the default compressor
        renders them."""
        from lossgate import gate
        from lossgate.consolidate.selection import select

        registry = self.mem.admin.registry
        with self.mem.store.read() as tx:
            snapshot = select(tx, self.t, self.s, registry).snapshot
        mp = gate.build_must_preserve(snapshot, registry)
        conflicted = {fid for c in snapshot.conflicts for fid in c.fact_ids}
        keep = {fid for fid in mp.fact_ids() if mp.loss_severity(fid) == "critical"} | conflicted
        count = DeterministicCompressor().count
        cost = count(header_line(self.t, self.s))
        cost += sum(count(fact_line(f)) + 1 for f in snapshot.facts if f.status == "active" and f.fact_id in keep)
        cost += sum(count(conflict_line(c.predicate, c.fact_ids)) + 1 for c in snapshot.conflicts)
        return cost, f"{len(keep)} must-keep facts, {len(snapshot.conflicts)} open conflicts"

    def _consolidate(self, budget: int | None):
        return self.mem.consolidate(
            self.t, self.s, config=ConsolidationConfig(budget_tokens=budget, incremental=self.incremental)
        )

    def check_liveness(self) -> None:
        valid = len(self.valid())
        active = len(self._facts())
        where = f"{valid} valid events, {active} active facts, budget {self.budget}, incremental={self.incremental}"
        attempt = self._consolidate(self.budget)
        if attempt.status == "error" and (attempt.error or "").startswith("BudgetExceeded"):
            cost, what = self._must_keep_cost()
            assert cost > (self.budget or 0), (
                f"BudgetExceeded although the must-keep content ({what}) costs {cost} <= {self.budget} tokens "
                f"({where}): {_codes(attempt)}"
            )
            attempt = self._consolidate(None)
            assert attempt.status == "published", (
                f"liveness: the must-preserve set exceeds the budget, but consolidating with no budget does "
                f"not publish either ({where}): {_codes(attempt)}"
            )
        assert attempt.status == "published", f"liveness: consolidation did not publish ({where}): {_codes(attempt)}"
        assert attempt.gate_outcome in ("clean", "acceptable"), _codes(attempt)
        art = self.mem.admin.artifact(self.t, self.s, attempt.artifact_id)
        alias = self.mem.admin.alias(self.t, self.s)
        assert alias.artifact_id == art.artifact_id and art.state == "published", (alias, art.state)
        self.pub_artifact, self.pub_epoch, self.pub_summary = art.artifact_id, attempt.input_epoch, art.body.summary
        text = art.body.summary + " ".join(str(c.value) for c in art.body.claims)
        leaked = set(MARKER.findall(text)) & (self.erased() | self.hidden())
        assert not leaked, f"the published artifact holds erased or hidden content: {sorted(leaked)}"
        self.dirty = False
        self.check_recall(None)


def _sizes(is_sqlite: bool) -> tuple[int, int]:
    examples = int(LONG_EXAMPLES) if LONG_EXAMPLES else (20 if is_sqlite else 10)
    steps = int(os.environ.get("LOSSGATE_LIVENESS_STEPS") or (25 if is_sqlite else 20))
    return examples, steps


def _memory_factory(store_url: str, request: pytest.FixtureRequest, tmp_path: Path):
    """A callable returning an empty memory per example (and closing the previous one):
    a new SQLite file, or the one PostgreSQL test database emptied again (about 2 ms)."""
    registry = load_registry(REGISTRY_PATH)
    opened: list[lossgate.Memory] = []
    count = itertools.count()

    def close_previous() -> None:
        while opened:
            mem = opened.pop()
            mem.close()
            if mem.store.url.startswith("sqlite"):
                for f in tmp_path.glob(f"{Path(mem.store.url.split(':///', 1)[1]).name}*"):
                    f.unlink()

    def open_memory() -> lossgate.Memory:
        if store_url.startswith("sqlite"):
            close_previous()
            mem = lossgate.open(f"sqlite:///{tmp_path / f'liveness{next(count)}.db'}")
        else:
            from lossgate.testing.postgres import fresh_database

            url = fresh_database(os.environ["LOSSGATE_TEST_PG_URL"], request)  # empties it again
            if not opened:
                opened.append(lossgate.open(url))
            mem = opened[0]
        mem.admin.load_predicates(registry)
        if store_url.startswith("sqlite"):
            opened.append(mem)
        return mem

    return open_memory, close_previous


def test_consolidation_publishes_after_any_sequence_of_valid_operations(store_url, request, tmp_path):
    examples, steps = _sizes(store_url.startswith("sqlite"))
    open_memory, close = _memory_factory(store_url, request, tmp_path)
    LivenessMachine.open_memory = staticmethod(open_memory)
    machine = LivenessMachine
    if os.environ.get("LOSSGATE_LIVENESS_SEED"):
        machine = seed(int(os.environ["LOSSGATE_LIVENESS_SEED"]))(LivenessMachine)
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=steps,
                database=None,
                report_multiple_bugs=bool(LONG_EXAMPLES),  # CI: shrink the first failure only
                # CI explores the same sequences every run (a red build names a change, not a seed);
                # the long profile explores new ones each time and is how new holes are found.
                derandomize=not LONG_EXAMPLES and "LOSSGATE_LIVENESS_SEED" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
            ),
        )
    finally:
        LivenessMachine.open_memory = None
        close()
