"""Retention on every store: a tenant's policy gives raw events a time to live; a worker
expires them as deletions (content gone, to the bytes on SQLite after compact), the summary
built on them goes stale and is rebuilt without them, a source of an active critical fact is
kept, the log names the policy, and a policy change is a new version."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

from lossgate import NewEvent, NewFact
from lossgate.errors import InvalidInput
from lossgate.model.records import utcnow
from lossgate.ops.worker import drain, open_worker_memory

T, S = "acme", "u1"
SECRET = "the old boarding code is QX-7781-ZETA"


def remember(memory) -> None:
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id="e-allergy", text="I am allergic to peanuts."),
            NewEvent(tenant_id=T, subject_id=S, event_id="e-old", text=f"By the way, {SECRET}."),
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="e-tool",
                kind="tool_result",
                actor="crm",
                trust="tool",
                text="crm lookup: plan enterprise",
            ),
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="allergy",
            predicate="food.peanuts_allowed",
            value=False,
            qualifiers={"basis": "allergy"},
            source_event_ids=["e-allergy"],
        )
    )


def test_a_policy_is_versioned_and_a_bad_rule_is_refused(memory) -> None:
    assert memory.admin.retention(T).version == 0 and memory.admin.retention(T).events == ()
    one = memory.admin.set_retention(T, [{"kind": "message", "ttl": timedelta(days=30)}])
    two = memory.admin.set_retention(
        T, [{"kind": "tool_result", "actor": "crm", "ttl": timedelta(days=7)}, {"ttl": timedelta(days=365)}]
    )
    assert (one.version, two.version) == (1, 2) and memory.admin.retention(T) == two
    assert (
        memory.admin.set_retention(T, [{"actor": "*", "ttl": timedelta(days=1)}]).events[0].actor is None
    )  # any actor
    two = memory.admin.set_retention(T, list(two.events))
    with memory.store.read() as tx:
        history = tx.tenant_settings(T)["retention"]["history"]
    assert [h["version"] for h in history] == [1, 2, 3]
    for bad in (
        {"ttl": timedelta(0)},
        {"kind": "email", "ttl": timedelta(days=1)},
        {"ttl": "soon"},
        {"kind": "message"},
        {"ttl": timedelta(days=1), "colour": "red"},
        {"ttl": True},
        {"ttl": 5},
        {"actor": "a\x00b", "ttl": timedelta(days=1)},
    ):
        with pytest.raises(InvalidInput, match="retention rule"):
            memory.admin.set_retention(T, [bad])
    assert memory.admin.retention(T) == two  # nothing half-written


def test_expiry_erases_what_lived_too_long_and_keeps_a_critical_facts_source(memory, store_url) -> None:
    remember(memory)
    assert memory.consolidate(T, S).status == "published"
    before = memory.admin.alias(T, S).artifact_id
    memory.admin.set_retention(
        T,
        [{"kind": "tool_result", "ttl": timedelta(days=365)}, {"kind": "message", "ttl": timedelta(milliseconds=300)}],
    )
    time.sleep(0.4)

    worker = open_worker_memory(store_url, migrate=False)
    try:
        assert memory.request_consolidation(T, S)
        assert drain(worker) >= 1
    finally:
        worker.close()

    events = {e.event_id: e for e in memory.events(T, S, states=None)}
    assert events["e-old"].state == "deleted" and events["e-old"].text is None
    assert events["e-allergy"].state == "valid"  # an active critical fact rests on it
    assert events["e-tool"].state == "valid"  # its rule gives it a year
    # the summary that held the secret went stale; the rebuilt one never saw it
    after = memory.admin.alias(T, S).artifact_id
    assert after != before and memory.admin.artifact(T, S, before).state == "stale"
    assert (
        SECRET not in memory.recall(T, S).render() and SECRET not in memory.recall(T, S, query="boarding code").render()
    )
    (line,) = [entry for entry in memory.admin.log(T, S) if entry.op == "delete_event" and entry.target_id == "e-old"]
    assert line.detail["reason"] == "retention: policy v1 (message: 0:00:00.300000)"
    if store_url.startswith("sqlite:///"):
        memory.admin.compact()
        assert b"QX-7781-ZETA" not in Path(store_url.removeprefix("sqlite:///")).read_bytes()


def test_a_run_expires_a_whole_tenant_and_nothing_without_a_policy(memory) -> None:
    remember(memory)
    memory.append([NewEvent(tenant_id=T, subject_id="u2", event_id="x-1", text="hello there")])
    assert all(not x.expired for x in memory.admin.expire(T, now=utcnow() + timedelta(days=9999)))  # no policy
    memory.admin.set_retention(T, [{"ttl": timedelta(days=30)}])
    assert all(not x.expired for x in memory.admin.expire(T))  # nothing is 30 days old yet
    done = {x.subject_id: x for x in memory.admin.expire(T, now=utcnow() + timedelta(days=31))}
    assert done["u1"].expired == ["e-old", "e-tool"] and done["u1"].kept_for_critical_facts == ["e-allergy"]
    assert done["u2"].expired == ["x-1"]
    # once the allergy is superseded, its source expires too
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="e-new", text="The allergy test was negative.")])
    memory.supersede(
        T,
        S,
        "allergy",
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="allergy-2",
            predicate="food.peanuts_allowed",
            value=True,
            source_event_ids=["e-new"],
        ),
    )
    assert memory.admin.expire(T, S, now=utcnow() + timedelta(days=31))[0].expired == ["e-allergy"]


def test_the_cli_sets_shows_and_runs_retention(cli, memory) -> None:
    remember(memory)
    r = cli("retention", "set", "-t", T, "--rule", "tool_result@crm=P7D", "--rule", "*=P30D")
    assert r.exit_code == 0, r.output
    assert "version 1" in r.stdout and "crm" in r.stdout
    assert cli("retention", "show", "-t", T, "--json").exit_code == 0
    assert (
        "records live"
        in cli(
            "retention", "set", "-t", T, "--rule", "tool_result@crm=P7D", "--rule", "*=P30D", "--records", "P90D"
        ).stdout
    )
    assert cli("retention", "set", "-t", T, "--records", "soon").exit_code == 2
    ran = cli("retention", "run", "-t", T, "--now", "2999-01-01T00:00:00Z")
    assert ran.exit_code == 0 and "2 events expired" in ran.stdout and "1 kept" in ran.stdout
    for bad in ("message", "email=P1D", "message=30 days", "message@=P1D"):
        assert cli("retention", "set", "-t", T, "--rule", bad).exit_code == 2, bad
    assert cli("retention", "run", "-t", T, "--now", "yesterday").exit_code == 2


def test_recall_guard_and_response_records_live_only_as_long_as_the_policy_says(memory) -> None:
    remember(memory)
    old = memory.recall(T, S, query="boarding code")
    checked = memory.guard(
        T, S, {"items": [{"dish": "satay", "ingredients": ["peanut sauce"]}]}, recall_id=old.record.recall_id
    )
    memory.respond(T, S, old.record.recall_id, answer=f"Your code: {SECRET}", guard_id=checked.guard_id)
    memory.admin.set_retention(T, [], records=timedelta(days=30))
    assert memory.admin.expire(T, S)[0].records_forgotten == 0  # too young
    (done,) = memory.admin.expire(T, S, now=utcnow() + timedelta(days=31))
    assert done.records_forgotten == 3 and done.expired == []  # no rule for events: they stay
    assert (
        memory.admin.recalls(T, S) == []
        and memory.admin.responses(T, S) == []
        and memory.admin.guard_results(T, S) == []
    )
    with pytest.raises(InvalidInput, match="records"):
        memory.admin.set_retention(T, [], records=timedelta(0))
