"""Subjects that used to get stuck after ordinary use, on every store.

Liveness (invariant 12 of docs/invariants.md): after any sequence of valid operations, consolidating
the current valid inputs with the default compressor publishes. The property-based
version is ``test_liveness.py``; these are the reproductions that found the holes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from lossgate import Money, NewEvent, NewFact
from lossgate.consolidate.chat import ChatCompressor, ChatConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.errors import InvalidInput, LifecycleError
from lossgate.ops.worker import drain, open_worker_memory
from lossgate.testing.chat_server import ScriptedChatServer, narrative

T, S = "t", "s"


@pytest.fixture
def shared_source(memory):
    """Fact ``f`` rests on events a and b; fact ``g`` (a home address) on a alone."""
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id="a", text="alpha, I live at 12 Lane"),
            NewEvent(tenant_id=T, subject_id=S, event_id="b", text="beta"),
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="g",
            predicate="contact.home_address",
            value="12 Lane",
            source_event_ids=["a"],
        )
    )
    memory.assert_fact(
        NewFact(tenant_id=T, subject_id=S, fact_id="f", predicate="chat.topic", value="x", source_event_ids=["a", "b"])
    )
    assert memory.consolidate(T, S).status == "published"
    return memory


def _claim(memory, attempt, fact_id):
    art = memory.admin.artifact(T, S, attempt.artifact_id)
    return next(c for c in art.body.claims if c.fact_id == fact_id)


@pytest.mark.parametrize(
    "lose_a",
    [
        lambda m: m.delete_fact(T, S, "g", reason="erasure request"),
        lambda m: m.delete_event(T, S, "a", reason="erasure request"),
        lambda m: m.revoke_event(T, S, "a", reason="wrong user"),
    ],
    ids=["delete_fact_of_same_event", "delete_event", "revoke_event"],
)
def test_a_fact_that_loses_one_of_two_sources_stands_on_the_other_and_publishes(shared_source, lose_a):
    memory = shared_source
    lose_a(memory)
    assert memory.recall(T, S).mode == "raw_fallback"
    attempt = memory.consolidate(T, S)
    assert attempt.status == "published", attempt.violations or attempt.error
    assert _claim(memory, attempt, "f").derived_from == ("f", "b")
    assert memory.fact(T, S, "f").status == "active"
    lost = [e for e in memory.admin.log(T, S) if e.op == "source_lost" and e.target_id == "f"]
    assert len(lost) == 1 and lost[0].detail["lost"] == ["a"] and lost[0].detail["standing"] == ["b"]
    assert memory.recall(T, S).mode == "summary"
    # and again, incrementally and directly: nothing is left behind that blocks a later run
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="c", text="gamma")])
    assert memory.consolidate(T, S).status == "published"
    assert memory.consolidate(T, S, config=ConsolidationConfig(incremental=False)).status == "published"


def test_the_worker_rebuilds_after_a_shared_source_is_erased(shared_source, store_url):
    memory = shared_source
    memory.delete_fact(T, S, "g", reason="erasure request")
    worker = open_worker_memory(store_url, migrate=False)
    try:
        assert drain(worker) >= 1
    finally:
        worker.close()
    assert memory.recall(T, S).mode == "summary"
    assert "alpha" not in (memory.recall(T, S).summary or "")


def test_a_fact_left_with_no_standing_source_leaves_the_active_set(shared_source):
    memory = shared_source
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="d", text="I like jazz and live at 3 Road")])
    memory.assert_fact(
        NewFact(tenant_id=T, subject_id=S, fact_id="h", predicate="chat.topic", value="jazz", source_event_ids=["d"])
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="g2",
            predicate="contact.home_address",
            value="3 Road",
            source_event_ids=["d"],
        )
    )
    memory.delete_fact(T, S, "g2", reason="erasure request")
    # d was deleted with g2 (its text states the address), so h rests on nothing left
    assert {e.event_id: e.state for e in memory.events(T, S)}["d"] == "deleted"
    assert memory.fact(T, S, "h").status == "deleted"
    assert [e for e in memory.history(T, S, "h").log if e.op == "deleted"][-1].detail["cause"] == "source_erased"
    attempt = memory.consolidate(T, S)
    assert attempt.status == "published", attempt.violations
    assert "h" not in {c.fact_id for c in memory.admin.artifact(T, S, attempt.artifact_id).body.claims}
    with pytest.raises(LifecycleError, match="deleted"):
        memory.assert_fact(
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="h2",
                predicate="chat.topic",
                value="jazz again",
                source_event_ids=["d"],
            )
        )


def test_a_fact_left_on_sources_below_its_authority_is_revoked(memory):
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id="u", text="I prefer email"),
            NewEvent(tenant_id=T, subject_id=S, event_id="bot", trust="untrusted", text="prefers email"),
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T, subject_id=S, fact_id="p", predicate="chat.topic", value="email", source_event_ids=["u", "bot"]
        )
    )
    memory.delete_event(T, S, "u")
    fact = memory.fact(T, S, "p")
    assert fact.status == "revoked"  # it claimed user authority; only untrusted text is left
    assert memory.consolidate(T, S).status == "published"


@pytest.mark.parametrize("budget", [2000, 500])
def test_a_negated_critical_fact_survives_its_source_leaving_the_budget_window(memory, budget):
    memory.append([NewEvent(tenant_id="c", subject_id=S, event_id="food", text="no peanuts")])
    memory.assert_fact(
        NewFact(
            tenant_id="c",
            subject_id=S,
            predicate="food.peanuts_allowed",
            value=False,
            qualifiers={"basis": "allergy", "severity": "critical"},
            source_event_ids=["food"],
        )
    )
    memory.append(
        [
            NewEvent(tenant_id="c", subject_id=S, text=f"filler line number {i} about the weather today")
            for i in range(400)
        ]
    )
    config = ConsolidationConfig(budget_tokens=budget)
    for incremental in (True, False):
        attempt = memory.consolidate("c", S, config=ConsolidationConfig(budget_tokens=budget, incremental=incremental))
        assert attempt.status == "published", attempt.violations
    summary = memory.recall("c", S).summary
    assert "- food.peanuts_allowed: false (basis=allergy, severity=critical)" in summary
    assert "no peanuts" not in summary  # the message itself left the window: the fact line carries it
    # The line still counts as prose when it does not render the claim: a flipped line is a
    # narrative sentence on the critical fact. Under the default policy it is left out (the
    # claim, and recall's fact line, say the fact); under "refuse" the attempt fails, and the
    # prose diff still reads the flip.
    flipped = "food.peanuts_allowed: true (basis=allergy, severity=critical)"
    published = memory.admin.alias("c", S).artifact_id

    def lie():
        return memory.consolidate(
            "c", S, config=config, compressor=_Rewrite("food.peanuts_allowed: false", "food.peanuts_allowed: true")
        )

    memory.admin.set_narrative_policy("c", "refuse")
    refused = lie()
    assert refused.status == "rejected", refused.details
    assert "narrative:narrative_touches_topic" in refused.violations
    assert "negation:is|peanuts_allowed:atom_changed" in refused.violations
    assert memory.admin.alias("c", S).artifact_id == published  # nothing new published

    memory.admin.set_narrative_policy("c", "omit")
    lying = lie()
    assert lying.status == "published", lying.violations
    # in the form of a fact line, it goes whole: only lossgate writes that form
    assert lying.details == (
        f"narrative_omitted: a line in the ledger's form that the summary does not claim: {'- ' + flipped!r}",
    )
    recalled = memory.recall("c", S)
    assert memory.admin.alias("c", S).artifact_id == lying.artifact_id != published
    assert "peanuts_allowed: true" not in recalled.summary
    assert [f.value for f in recalled.facts if f.predicate == "food.peanuts_allowed"] == [False]
    for text in (recalled.render(), memory.recall("c", S, query="peanuts").render()):
        assert "peanuts_allowed: true" not in text
        assert "- food.peanuts_allowed: false (basis=allergy, severity=critical)" in text


class _Rewrite:
    """The deterministic compressor, with one substitution in its summary."""

    name, version, prompt_version = "rewrite", "1", "rewrite-v1"

    def __init__(self, old: str, new: str) -> None:
        from lossgate.consolidate.deterministic import DeterministicCompressor

        self._inner, self._old, self._new = DeterministicCompressor(), old, new

    def compress(self, request):
        body = self._inner.compress(request)
        body["summary"] = body["summary"].replace(self._old, self._new)
        return body


AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)


def test_an_untrusted_contradiction_of_a_condition_does_not_block_a_faithful_narrative(memory):
    """A model narrative beside the deterministic fact lines: the untrusted ticket bot says the
    opposite of the critical refund limit's condition. The fact line is judged by the contract,
    the narrative by the prose diff; the untrusted text no longer pairs with the fact line."""
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="e-refund",
                occurred_at=AT,
                actor="supervisor",
                trust="system",
                text="You may refund up to 50.00 USD after supervisor review.",
            ),
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="e-bot",
                occurred_at=AT,
                actor="ticket-bot",
                trust="untrusted",
                text="Every refund is approved without review.",
            ),
            NewEvent(tenant_id=T, subject_id=S, event_id="e-chat", occurred_at=AT, text="the garden looks lovely"),
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="f-refund",
            predicate="refund.limit",
            value=Money(amount=Decimal("50.00"), currency="USD"),
            authority="system",
            qualifiers={"condition": "after supervisor review"},
            source_event_ids=["e-refund"],
        )
    )
    story = "The supervisor allows refunds up to 50.00 USD after supervisor review. The user likes the garden."
    with ScriptedChatServer(default=lambda body: narrative(story)) as server:
        chat = ChatCompressor(ChatConfig(base_url=server.url, model="scripted-1", backoff_s=0.0, max_backoff_s=0.0))
        attempt = memory.consolidate(T, S, compressor=chat)
    assert attempt.status == "published", attempt.violations
    assert "after supervisor review" in memory.recall(T, S).summary


def test_the_ledger_refuses_an_untrusted_preference_the_gate_would_always_refuse(memory):
    """Found by the liveness machine: an untrusted, speculative preference was stored, and every
    summary carrying it failed ``untrusted_elevated``. It can only be recorded as quoted."""
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id="w", trust="untrusted", actor="web", text="prefers aisle seats")]
    )
    with pytest.raises(InvalidInput, match="quoted"):
        memory.assert_fact(
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="p",
                predicate="travel.seat_preference",
                value="aisle",
                authority="untrusted",
                modality="speculative",
                source_event_ids=["w"],
            )
        )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="p",
            predicate="travel.seat_preference",
            value="aisle",
            authority="untrusted",
            modality="quoted",
            source_event_ids=["w"],
        )
    )
    assert memory.consolidate(T, S).status == "published"


def test_an_open_conflict_line_is_structure_not_a_statement(memory):
    """Found by the liveness machine: once "no peanuts" left the budget window, the summary's
    UNRESOLVED CONFLICT line was read as a positive statement about peanuts."""
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id="e1", text="no peanuts"),
            NewEvent(
                tenant_id=T, subject_id=S, event_id="e2", trust="tool", actor="crm", text="Peanuts are fine for me."
            ),
        ]
    )
    memory.assert_facts(
        [
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-no",
                predicate="food.peanuts_allowed",
                value=False,
                qualifiers={"basis": "allergy", "severity": "critical"},
                source_event_ids=["e1"],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-yes",
                predicate="food.peanuts_allowed",
                value=True,
                qualifiers={"basis": "preference"},
                authority="tool",
                source_event_ids=["e2"],
            ),
        ]
    )
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"c{i}", text="the weather is lovely today") for i in range(60)]
    )
    for incremental in (True, False):
        attempt = memory.consolidate(T, S, config=ConsolidationConfig(budget_tokens=300, incremental=incremental))
        assert attempt.status == "published", attempt.violations
    assert "UNRESOLVED CONFLICT on food.peanuts_allowed" in memory.recall(T, S).summary


def test_the_open_conflicts_take_their_room_before_disposable_facts(memory):
    """Found by the liveness machine: a disposable fact took the room the conflict line needed,
    and the compressor failed with BudgetExceeded although the must-keep content fits."""
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id="e1", text="Please show every time in UTC-05:00."),
            NewEvent(
                tenant_id=T, subject_id=S, event_id="e2", text="I am allergic to peanuts, not merely avoiding them."
            ),
            NewEvent(tenant_id=T, subject_id=S, event_id="e3", text="Peanuts are fine for me."),
        ]
    )
    memory.assert_facts(
        [
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-tz",
                predicate="timezone",
                value="UTC-05:00",
                source_event_ids=["e1"],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-no",
                predicate="food.peanuts_allowed",
                value=False,
                qualifiers={"basis": "allergy"},
                source_event_ids=["e2"],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-yes",
                predicate="food.peanuts_allowed",
                value=True,
                qualifiers={"basis": "preference"},
                source_event_ids=["e3"],
            ),
        ]
    )
    for budget in range(59, 70):
        attempt = memory.consolidate(T, S, config=ConsolidationConfig(budget_tokens=budget))
        assert attempt.status == "published" or "exceed the budget" in (attempt.error or ""), (budget, attempt)
    assert memory.consolidate(T, S, config=ConsolidationConfig(budget_tokens=70)).status == "published"
