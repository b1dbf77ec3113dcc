"""Taint policies: a tenant-level rule sets the trust of every event it matches.

Setting or upgrading one, in one transaction: the matching events change trust, facts that
now claim more than their sources are recorded again as quoted, every artifact derived
from those events goes stale, a rebuild is queued and the log says so. The rebuild
records them as quoted.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from lossgate import InvalidInput, NewEvent, NewFact

T, U, V, OTHER = "acme", "user-17", "user-22", "globex"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=timezone(timedelta(hours=-5)))
CRM = "tool:crm.lookup"


def ev(event_id: str, text: str, subject: str = U, tenant: str = T, **kw) -> NewEvent:
    return NewEvent(tenant_id=tenant, subject_id=subject, event_id=event_id, text=text, occurred_at=AT, **kw)


def tool(event_id: str, text: str, subject: str = U, actor: str = CRM, tenant: str = T) -> NewEvent:
    return ev(event_id, text, subject, tenant, kind="tool_result", actor=actor, trust="tool")


def i(name: str, subject: str = U) -> str:
    """An id of ``subject``'s (ids are unique per tenant)."""
    return name if subject == U else f"{name}-{subject}"


def seed(memory, subject: str = U, tenant: str = T) -> None:
    """A user message, a CRM tool result and a billing tool result, a fact on each."""
    memory.append(
        [
            ev(i("e1", subject), "We now need 45 seats.", subject, tenant),
            tool(i("t1", subject), "crm.lookup returned customer id CUST-4411", subject, tenant=tenant),
            tool(
                i("t2", subject),
                "billing.plan returned 45 seats on the plan",
                subject,
                actor="tool:billing.plan",
                tenant=tenant,
            ),
        ]
    )
    memory.assert_facts(
        [
            NewFact(
                tenant_id=tenant,
                subject_id=subject,
                fact_id=i("seats", subject),
                predicate="subscription.seats",
                value=45,
                source_event_ids=(i("e1", subject),),
            ),
            NewFact(
                tenant_id=tenant,
                subject_id=subject,
                fact_id=i("cust", subject),
                predicate="customer.id",
                value="CUST-4411",
                authority="tool",
                source_event_ids=(i("t1", subject),),
            ),
        ]
    )


def published(memory, subject: str = U, tenant: str = T) -> str:
    attempt = memory.consolidate(tenant, subject)
    assert attempt.status == "published", attempt.violations
    return attempt.artifact_id


def trusts(memory, subject: str = U, tenant: str = T) -> dict[str, str]:
    return {e.event_id: e.trust for e in memory.events(tenant, subject)}


def test_a_policy_marking_a_tools_results_untrusted_makes_their_artifacts_stale_and_the_rebuild_quotes_them(memory):
    seed(memory, U)
    seed(memory, V)
    seed(memory, U, tenant=OTHER)
    arts = {s: published(memory, s) for s in (U, V)}
    other = published(memory, U, OTHER)
    epochs = {s: memory.admin.clock(T, s).input_epoch for s in (U, V)}

    out = memory.admin.set_taint_policy(
        T, "crm", kind="tool_result", actor=CRM, trust="untrusted", reason="CRM answers are scraped"
    )

    assert out.changed and out.policy.version == 1
    assert sorted(out.events) == [(U, "t1"), (V, i("t1", V))]
    assert sorted(out.stale_artifacts) == sorted((s, a) for s, a in arts.items())
    for s in (U, V):
        # the events, the facts, the artifacts, the clock, the queue and the log: all moved together
        assert trusts(memory, s) == {i("e1", s): "authenticated_user", i("t1", s): "untrusted", i("t2", s): "tool"}
        assert memory.admin.artifact(T, s, arts[s]).state == "stale"
        assert memory.admin.clock(T, s).input_epoch == epochs[s] + 1
        assert [j.status for j in memory.admin.jobs(T, s)] == ["pending"]
        assert memory.fact(T, s, i("cust", s)).status == "revoked"
        quoted = memory.facts(T, s, predicate="customer.id")
        assert [(f.value, f.authority, f.modality, f.source_event_ids) for f in quoted] == [
            ("CUST-4411", "untrusted", "quoted", (i("t1", s),))
        ]
        assert memory.fact(T, s, i("seats", s)).status == "active"  # the user's own fact stands
        ops = [(e.op, e.target_id) for e in memory.admin.log(T, s)]
        assert {("set_trust", i("t1", s)), ("taint_policy", "crm"), ("demote", i("cust", s))} <= set(ops)
        assert memory.recall(T, s).mode != "summary"  # recall falls back until the rebuild
    # another tenant's events and memory are untouched
    assert trusts(memory, U, OTHER)["t1"] == "tool"
    assert memory.admin.artifact(OTHER, U, other).state == "published"

    # The rebuild records them as quoted.
    rebuilt = memory.admin.artifact(T, U, published(memory, U))
    claims = {c.predicate: c for c in rebuilt.body.claims}
    assert (claims["customer.id"].modality, claims["customer.id"].authority) == ("quoted", "untrusted")
    assert claims["subscription.seats"].modality == "asserted"
    assert "- customer.id: CUST-4411 [quoted, untrusted source]" in rebuilt.body.summary.splitlines()
    assert "t1" in claims["customer.id"].derived_from
    assert memory.recall(T, U).mode == "summary"


def test_the_policy_and_its_effects_commit_in_one_transaction(memory):
    seed(memory)
    art = published(memory)
    before = (trusts(memory), memory.admin.clock(T, U), memory.facts(T, U, statuses=None), memory.admin.log(T, U))
    with pytest.raises(RuntimeError), memory.transaction() as led:
        assert led.set_taint_policy(T, "crm", kind="tool_result", actor=CRM, trust="untrusted").events
        raise RuntimeError("the transaction fails after the policy was applied")
    assert (
        trusts(memory),
        memory.admin.clock(T, U),
        memory.facts(T, U, statuses=None),
        memory.admin.log(T, U),
    ) == before
    assert memory.admin.artifact(T, U, art).state == "published" and memory.admin.taint_policies(T) == []
    assert [j for j in memory.admin.jobs(T, U) if j.status == "pending"] == []


def test_new_events_get_the_policys_trust_and_a_replay_stays_a_no_op(memory):
    seed(memory)
    memory.admin.set_taint_policy(T, "crm", actor=CRM, trust="untrusted")
    memory.append([tool("t3", "crm.lookup returned nothing"), ev("e2", "thanks")])
    assert trusts(memory)["t3"] == "untrusted" and trusts(memory)["e2"] == "authenticated_user"
    again = memory.append(
        [tool("t1", "crm.lookup returned customer id CUST-4411"), tool("t3", "crm.lookup returned nothing")]
    )
    assert again.appended == () and set(again.duplicates) == {"t1", "t3"}


def test_upgrading_a_policy_stores_a_new_version_and_reaches_what_it_now_matches(memory):
    seed(memory)
    first = memory.admin.set_taint_policy(T, "tools", actor=CRM, trust="untrusted")
    epoch = memory.admin.clock(T, U).input_epoch
    same = memory.admin.set_taint_policy(T, "tools", actor=CRM, trust="untrusted")
    assert not same.changed and same.policy == first.policy and memory.admin.clock(T, U).input_epoch == epoch

    up = memory.admin.set_taint_policy(T, "tools", kind="tool_result", trust="untrusted", reason="all tools")
    assert up.policy.version == 2 and up.events == ((U, "t2"),)
    assert trusts(memory) == {"e1": "authenticated_user", "t1": "untrusted", "t2": "untrusted"}
    assert [(p.policy_id, p.version, p.kind, p.actor) for p in memory.admin.taint_policies(T)] == [
        ("tools", 2, "tool_result", None)
    ]
    assert [p.version for p in memory.admin.taint_policies(T, history=True)] == [1, 2]
    assert memory.admin.clock(T, U).input_epoch == epoch + 1


def test_where_policies_overlap_the_lowest_trust_wins(memory):
    seed(memory)
    memory.admin.set_taint_policy(T, "crm", actor=CRM, trust="untrusted")
    out = memory.admin.set_taint_policy(T, "tools", kind="tool_result", trust="system")
    assert trusts(memory) == {"e1": "authenticated_user", "t1": "untrusted", "t2": "system"}
    assert out.events == ((U, "t2"),)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.admin.set_taint_policy(T, "p", trust="untrusted"),  # matches nothing said
        lambda m: m.admin.set_taint_policy(T, "p", actor=CRM, trust="admin"),
        lambda m: m.admin.set_taint_policy(T, "p", kind="email", trust="untrusted"),
        lambda m: m.admin.set_taint_policy(T, "p", actor="", trust="untrusted"),
        lambda m: m.admin.set_taint_policy(T, "p q", actor=CRM, trust="untrusted"),
        lambda m: m.admin.set_taint_policy(T, "p", actor=f"{CRM}\x00", trust="untrusted"),
    ],
    ids=["no-match", "trust", "kind", "empty-actor", "space-in-id", "nul"],
)
def test_a_bad_policy_is_invalid_input_and_writes_nothing(memory, call):
    seed(memory)
    before = (trusts(memory), memory.admin.clock(T, U))
    with pytest.raises(InvalidInput):
        call(memory)
    assert (trusts(memory), memory.admin.clock(T, U)) == before and memory.admin.taint_policies(T) == []
