"""Daily fidelity metrics and their blocking rules (:mod:`lossgate.ops.daily`), on
every store.

A fixture store with two tenants is measured through the CLI (``lossgate eval daily``):
clean, it exits 0 and its figures are stored and read back as a trend of two days; a
compressor that invents a fact or changes a value, and an artifact that recall would
serve although it is stale (planted two ways, behind the ledger's back), each make it
exit 1; bad input exits 2 and stores nothing. The rebuild publishes nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest
from typer.testing import CliRunner

from lossgate import NewEvent, NewFact
from lossgate.cli import app
from lossgate.ops.daily import run_daily, trend
from lossgate.testing.compressors import FlipBool

AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
DAY1, DAY2 = "2026-03-14", "2026-03-15"
runner = CliRunner(env={"FORCE_COLOR": None, "COLUMNS": None, "LOSSGATE_DB": None, "NO_COLOR": "1"})


def ev(tenant: str, subject: str, event_id: str, text: str) -> NewEvent:
    return NewEvent(tenant_id=tenant, subject_id=subject, event_id=event_id, text=text, occurred_at=AT)


def fact(tenant: str, subject: str, fact_id: str, predicate: str, value, source: str, **kw) -> NewFact:
    return NewFact(
        tenant_id=tenant,
        subject_id=subject,
        fact_id=fact_id,
        predicate=predicate,
        value=value,
        source_event_ids=(source,),
        **kw,
    )


@pytest.fixture
def fixture_store(memory, store_url):
    """acme/u1 (an allergy, a timezone, an open seats conflict), acme/u2 (its timezone
    superseded, then rebuilt), globex/u1 (an event deleted after publication: recall falls
    back to raw until a rebuild). Every subject was consolidated once."""
    for t, s in (("acme", "u1"), ("acme", "u2"), ("globex", "u1")):
        memory.append(
            [
                ev(t, s, f"{s}-e1", "I am allergic to peanuts, not merely avoiding them."),
                ev(t, s, f"{s}-e2", "My timezone is Europe/Paris."),
                ev(t, s, f"{s}-e3", "We need 5 seats. Actually make that 6 seats."),
            ]
        )
        memory.assert_facts(
            [
                fact(t, s, f"{s}-allergy", "food.peanuts_allowed", False, f"{s}-e1", qualifiers={"basis": "allergy"}),
                fact(t, s, f"{s}-tz", "timezone", "Europe/Paris", f"{s}-e2"),
            ]
        )
    memory.assert_facts(
        [
            fact("acme", "u1", "u1-seats5", "subscription.seats", 5, "u1-e3"),
            fact("acme", "u1", "u1-seats6", "subscription.seats", 6, "u1-e3"),
        ]
    )  # a conflict
    for t, s in (("acme", "u1"), ("acme", "u2"), ("globex", "u1")):
        assert memory.consolidate(t, s).status == "published"
    memory.supersede("acme", "u2", "u2-tz", fact("acme", "u2", "u2-tz2", "timezone", "Europe/Berlin", "u2-e2"))
    assert memory.consolidate("acme", "u2").status == "published"
    memory.delete_event("globex", "u1", "u1-e3")
    assert memory.recall("globex", "u1").mode == "raw_fallback"
    return store_url


def daily(url: str, *args: str):
    result = runner.invoke(app, ["--db", url, "eval", "daily", "--json", *args])
    doc = json.loads(result.stdout) if result.exit_code in (0, 1) else None
    return result, doc


def derived_state(memory) -> dict:
    """Everything a rebuild that published would change."""
    return {
        (t, s): (
            memory.admin.alias(t, s),
            [a.artifact_id for a in memory.admin.artifacts(t, s)],
            len(memory.admin.attempts(t, s)),
            [j.job_id for j in memory.admin.jobs(t, s)],
        )
        for t, s in (("acme", "u1"), ("acme", "u2"), ("globex", "u1"))
    }


def test_a_clean_store_exits_0_publishes_nothing_and_keeps_a_trend(memory, fixture_store):
    before = derived_state(memory)
    result, doc = daily(fixture_store, "-t", "acme", "-t", "globex", "--day", DAY1)
    assert result.exit_code == 0, result.output
    assert (doc["blocked"], doc["blocking"], doc["stored"]) == (False, [], True)
    acme, globex = doc["tenants"]["acme"], doc["tenants"]["globex"]
    # acme: 2 subjects rebuilt, 4 + 2 key facts (allergy, timezone, u1's two seats in conflict), all kept
    assert (acme["subjects"], acme["key_facts"], acme["key_facts_kept"], acme["key_fact_recall"]) == (2, 6, 6, 1.0)
    assert (acme["claims"], acme["erroneous_claims"], acme["erroneous_new_fact_rate"]) == (6, 0, 0.0)
    assert (acme["conflicts"], acme["conflicts_kept"], acme["conflict_retention"]) == (1, 1, 1.0)
    assert (acme["outcome_clean"] + acme["outcome_acceptable"], acme["failure_rate"]) == (2, 0.0)
    assert (acme["subjects_checked"], acme["stale_visible"], acme["raw_fallback"]) == (2, 0, 0)
    assert (globex["subjects_checked"], globex["stale_visible"], globex["raw_fallback"]) == (1, 0, 1)
    assert globex["conflict_retention"] is None and doc["overall"]["key_facts"] == 8
    assert 0 < doc["overall"]["source_tokens"] and doc["overall"]["token_reduction"] is not None
    assert derived_state(memory) == before  # nothing published, no attempt, no job

    # a second day, with a compressor that flips the allergy: a trend of two days, read back
    bad = run_daily(memory.store, ["acme", "globex"], day=date(2026, 3, 15), compressor=FlipBool())
    assert bad.blocked and bad.stored
    days = trend(memory.store, ["acme", "globex"])
    assert [d.day.isoformat() for d in days] == [DAY1, DAY2]
    assert [d.overall.rates()["erroneous_new_fact_rate"] for d in days] == [0.0, 3 / 8]
    assert [d.tenants["acme"].key_facts_kept for d in days] == [6, 4]
    assert days[0].runs["acme"] == doc["run_id"] and days[1].runs["globex"] == bad.run_id
    with memory.store.read() as tx:
        stored = {m.metric: m.value for m in tx.daily_metrics("acme", run_id=doc["run_id"]) if not m.dimension}
        by_version = tx.daily_metrics("acme", run_id=doc["run_id"], metrics=["key_fact_recall"])
    assert stored["key_fact_recall"] == 1.0 and stored["conflicts"] == 1.0 and "conflict_retention" in stored
    assert [m.dimension for m in by_version] == [{"registry_version": 1}, {}]


def test_a_planted_erroneous_fact_exits_1_whatever_the_averages(fixture_store):
    result, doc = daily(
        fixture_store,
        "-t",
        "acme",
        "-t",
        "globex",
        "--day",
        DAY1,
        "--compressor",
        "lossgate.testing.compressors:InventClaim",
    )
    assert result.exit_code == 1, result.output
    assert doc["blocked"] and doc["overall"]["key_fact_recall"] == 1.0  # every key fact kept, still blocked
    assert doc["overall"]["erroneous_claims"] == 3 and doc["tenants"]["acme"]["failure_rate"] == 1.0
    assert [f["kind"] for f in doc["findings"]] == ["erroneous_claim"] * 3
    assert all("no such fact" in f["detail"] for f in doc["findings"])
    assert doc["blocking"] == [
        "acme: erroneous-new-fact rate 2/8 claims is above 0",
        "globex: erroneous-new-fact rate 1/3 claims is above 0",
    ]


def test_a_stale_artifact_recall_would_serve_exits_1(memory, fixture_store):
    # 1. an input revoked behind the ledger's back: no stale propagation, no epoch move
    with memory.store.write() as tx:
        tx.set_event_state("acme", "u1", "u1-e2", "revoked", purge=False)
    assert memory.recall("acme", "u1").mode == "summary"  # recall serves it
    result, doc = daily(fixture_store, "-t", "acme", "--day", DAY1, "--no-store")
    assert result.exit_code == 1, result.output
    assert doc["tenants"]["acme"]["stale_visible"] == 1 and doc["stored"] is False
    (found,) = [f for f in doc["findings"] if f["kind"] == "stale_visible"]
    assert found["subject_id"] == "u1" and "no longer valid (event u1-e2)" in found["detail"]

    # 2. an alias forced onto a stale artifact at the current epoch: acme/u2's summary went stale
    #    when a source's trust changed (its inputs are all still valid: only the epoch tells)
    memory.set_trust("acme", "u2", "u2-e1", "tool")
    with memory.store.write() as tx:
        clock, alias = tx.lock_clock("acme", "u2"), tx.lock_alias("acme", "u2")
        assert tx.artifact_head("acme", "u2", alias.artifact_id).state == "stale"
        tx.set_artifact_state("acme", "u2", [alias.artifact_id], "published", reason="planted")
        assert tx.cas_alias(
            "acme",
            "u2",
            expected=alias.expected(),
            artifact_id=alias.artifact_id,
            source_epoch=clock.input_epoch,
            covers_through=alias.covers_through,
            at=AT,
        )
    assert memory.recall("acme", "u2").mode == "summary"
    result, doc = daily(fixture_store, "-t", "acme", "--day", DAY1, "--sample", "1")
    assert result.exit_code == 1, result.output
    assert doc["blocking"] == ["acme: 2 stale artifact(s) visible to recall"]
    assert doc["overall"]["erroneous_claims"] == 0  # the stale artifacts alone block
    found = {f["subject_id"]: f["detail"] for f in doc["findings"] if f["kind"] == "stale_visible"}
    assert "served at" in found["u2"] and "no longer valid" in found["u1"]
    with memory.store.read() as tx:
        assert {m.metric: m.value for m in tx.daily_metrics("acme") if not m.dimension}["stale_visible"] == 2.0


@pytest.mark.parametrize(
    "args",
    [
        ("--day", "2026-13-01"),
        ("--registry-version", "9"),
        ("--compressor", "nope"),
        ("--compressor", "lossgate.testing.compressors:Nothing"),
        ("--sample", "0"),
        (),
    ],
)
def test_bad_input_exits_2_and_stores_nothing(memory, store_url, args):
    memory.append([ev("acme", "u1", "e1", "I am allergic to peanuts.")])
    tenant = ("-t", "acme") if args else ()  # no tenant at all is bad input too
    result = runner.invoke(app, ["--db", store_url, "eval", "daily", *tenant, *args])
    assert result.exit_code == 2, result.output
    if args and args[0] != "--sample":  # ours: one line (click reports its own usage errors)
        assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    with memory.store.read() as tx:
        assert tx.daily_metrics("acme") == []
