"""Daily metrics see the prose (:mod:`lossgate.ops.daily`, ``prose_drift_rate``), on every store.

A chat model (a scripted OpenAI-compatible server, over real HTTP) whose claims are all
right but whose narrative says "The user can eat peanuts now." of a subject allergic to
peanuts: the sentence never reaches recall (the narrative rule leaves it out), yet the
model under test is wrong, and ``lossgate eval daily`` exits 1 naming the prose-drift rule,
where the erroneous-new-fact rate alone said 0. A faithful model exits 0 with a drift of 0,
though the narrative rule leaves its restatement of the allergy out too. A model that
restates a superseded timezone in its own words, without lossgate's marker, drifts; a
verbatim quote of the conversation, or the marker lossgate would write, does not. A model
judge's findings count; a judge that fails makes the summary an error.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest
from typer.testing import CliRunner

from lossgate import NewEvent, NewFact
from lossgate.cli import app
from lossgate.consolidate.chat import ChatCompressor, ChatConfig
from lossgate.errors import InvalidInput
from lossgate.gate.superseded import retired_values
from lossgate.judge import JudgeConfig, ModelJudge
from lossgate.ops.daily import run_daily, trend
from lossgate.testing.chat_server import Reply, ScriptedChatServer, completion, echo_conversation, narrative

T = "acme"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
DAY = "2026-03-14"
PEANUTS = "The user can eat peanuts now."
FAST = {"backoff_s": 0.0, "max_backoff_s": 0.0}
runner = CliRunner(
    env={
        "FORCE_COLOR": None,
        "COLUMNS": None,
        "LOSSGATE_DB": None,
        "NO_COLOR": "1",
        "LOSSGATE_JUDGE_URL": None,
        "LOSSGATE_JUDGE_MODEL": None,
    }
)


def ev(subject: str, event_id: str, text: str, day: int = 14) -> NewEvent:
    return NewEvent(tenant_id=T, subject_id=subject, event_id=event_id, text=text, occurred_at=AT.replace(day=day))


def fact(subject: str, fact_id: str, predicate: str, value, source: str, **kw) -> NewFact:
    return NewFact(
        tenant_id=T,
        subject_id=subject,
        fact_id=fact_id,
        predicate=predicate,
        value=value,
        source_event_ids=(source,),
        **kw,
    )


@pytest.fixture
def allergic(memory, store_url):
    """acme/u1 and acme/u2, each allergic to peanuts (food.peanuts_allowed = false)."""
    for s in ("u1", "u2"):
        memory.append(
            [
                ev(s, f"{s}-e1", "I am allergic to peanuts, not merely avoiding them."),
                ev(s, f"{s}-e2", "We talked about the garden, it looks lovely."),
            ]
        )
        memory.assert_fact(
            fact(s, f"{s}-allergy", "food.peanuts_allowed", False, f"{s}-e1", qualifiers={"basis": "allergy"})
        )
    return store_url


@pytest.fixture
def traveller(memory, store_url):
    """acme/traveller: timezone UTC-05:00, superseded by UTC+01:00; a line of the conversation
    that no fact cites still says UTC-05:00. Returns the marker lossgate writes on such a line."""
    memory.append(
        [
            ev("traveller", "t1", "I'm in New York, my timezone is UTC-05:00.", 1),
            ev("traveller", "t2", "As I said, schedule calls in UTC-05:00 please.", 2),
        ]
    )
    memory.assert_fact(fact("traveller", "tz-1", "timezone", "UTC-05:00", "t1"))
    memory.append([ev("traveller", "t3", "I moved to Lisbon, use UTC+01:00 from now on.", 4)])
    memory.supersede(T, "traveller", "tz-1", fact("traveller", "tz-2", "timezone", "UTC+01:00", "t3"))
    with memory.store.read() as tx:
        (retired,) = retired_values(tx.facts(T, "traveller"))
    return retired.marker


def daily(url: str, server: ScriptedChatServer, *args: str, env: dict | None = None):
    """``lossgate eval daily --compressor chat`` against ``server``; the JSON document with --json."""
    result = runner.invoke(
        app,
        ["--db", url, "eval", "daily", "-t", T, "--day", DAY, "--compressor", "chat", *args],
        env={"LOSSGATE_LLM_URL": server.url, "LOSSGATE_LLM_MODEL": "scripted-1", **(env or {})},
    )
    doc = json.loads(result.stdout) if "--json" in args and result.exit_code in (0, 1) else None
    return result, doc


def chat(server: ScriptedChatServer) -> ChatCompressor:
    return ChatCompressor(ChatConfig(base_url=server.url, model="scripted-1", **FAST))


def says(text: str):
    return lambda body: narrative(text)


def test_a_model_that_lets_the_allergic_user_eat_peanuts_blocks_the_day(memory, allergic):
    with ScriptedChatServer(default=says(PEANUTS)) as server:
        result, doc = daily(allergic, server, "--json")
        assert len(server.requests) == 2  # one request per subject rebuilt, over HTTP
        table, _ = daily(allergic, server, "--no-store")
    assert result.exit_code == 1, result.output
    acme = doc["tenants"][T]
    # what the day used to see: every claim right, every key fact kept
    assert (acme["erroneous_new_fact_rate"], acme["key_fact_recall"], acme["failure_rate"]) == (0.0, 1.0, 0.0)
    # what it sees now: the sentence, left out of what would be published, refused by the fence
    assert (acme["summaries_read"], acme["summaries_drifted"], acme["prose_drift_rate"]) == (2, 2, 1.0)
    assert (acme["narrative_sentences"], acme["narrative_omitted"], acme["narrative_refused"]) == (2, 2, 2)
    assert (acme["judge_findings"], acme["superseded_unmarked"]) == (0, 0)
    assert doc["blocking"] == [
        "acme: prose-drift rate 2/2 summaries is above 0 (2 sentence(s) the fence refuses, "
        "0 the prose diff refuses, 0 judge finding(s), 0 line(s) restating a superseded value "
        "unmarked)"
    ]
    assert doc["tenants"][T]["by_registry_version"]["1"]["prose_drift_rate"] == 1.0
    found = {f["subject_id"]: f["detail"] for f in doc["findings"] if f["kind"] == "prose_drift"}
    assert sorted(found) == ["u1", "u2"]
    assert "narrative_unsupported u1-allergy" in found["u1"] and "1 of 1 narrative sentence(s) left out" in found["u1"]
    assert "peanuts now" not in json.dumps(doc["findings"])  # ids and codes, never memory's text
    # people read the same rule
    assert table.exit_code == 1 and "BLOCKED: acme: prose-drift rate 2/2 summaries is above 0" in table.stdout
    assert "prose drift" in table.stdout

    # stored beside the counts that make it, per registry version too, and read back as a trend
    with memory.store.read() as tx:
        rows = tx.daily_metrics(T, run_id=doc["run_id"])
    whole = {m.metric: m.value for m in rows if not m.dimension}
    assert (whole["prose_drift_rate"], whole["summaries_drifted"], whole["summaries_read"]) == (1.0, 2.0, 2.0)
    assert (whole["narrative_refused"], whole["narrative_omitted"], whole["narrative_omission_rate"]) == (2.0, 2.0, 1.0)
    assert {m.metric: m.value for m in rows if m.dimension == {"registry_version": 1}}["summaries_drifted"] == 2.0
    (day,) = trend(memory.store, [T])
    assert day.overall.summaries_drifted == 2 and day.overall.rates()["prose_drift_rate"] == 1.0


def test_a_faithful_model_exits_0_with_no_prose_drift(memory, allergic):
    with ScriptedChatServer(default=echo_conversation) as server:
        result, doc = daily(allergic, server, "--json")
    assert result.exit_code == 0, result.output
    acme = doc["tenants"][T]
    assert (doc["blocked"], doc["blocking"]) == (False, [])
    assert (acme["prose_drift_rate"], acme["summaries_drifted"], acme["narrative_refused"]) == (0.0, 0, 0)
    assert acme["superseded_unmarked"] == 0 and acme["summaries_read"] == 2
    # its restatement of the allergy is left out all the same: omission is no drift
    assert acme["narrative_omitted"] == 2 and acme["narrative_sentences"] == 4
    assert not [f for f in doc["findings"] if f["kind"] == "prose_drift"]


def test_a_model_inventing_a_number_drifts_though_what_it_would_publish_passes(memory, allergic):
    # under omit the sentence is left out and the summary passes, as the pipeline publishes it;
    # the model under test still wrote what no source says
    with ScriptedChatServer(default=says("The garden got 12 new rose bushes.")) as server:
        result, doc = daily(allergic, server, "--json")
    assert result.exit_code == 1, result.output
    acme = doc["tenants"][T]
    assert (acme["failure_rate"], acme["narrative_unproven"], acme["summaries_drifted"]) == (0.0, 2, 2)
    assert "2 the prose diff refuses" in doc["blocking"][0]


@pytest.mark.parametrize(
    "told, drifts",
    [
        ("The user's timezone is UTC-05:00.", True),  # left out, and unmarked in what the model wrote
        ("They talked about UTC-05:00.", True),  # a mention: it stays (lossgate marks it), still unmarked
        ("user: As I said, schedule calls in UTC-05:00 please.", False),  # a verbatim quote: the conversation's word
        ("They talked about UTC-05:00. {marker}", False),  # the marker lossgate writes there
    ],
)
def test_a_model_restating_a_superseded_timezone_unmarked_drifts(memory, traveller, told, drifts):
    with ScriptedChatServer(default=says(told.format(marker=traveller))) as server:
        report = run_daily(memory.store, [T], day=date(2026, 3, 14), compressor=chat(server))
        assert len(server.requests) == 1
    t = report.tenants[T]
    assert (t.erroneous_claims, t.key_facts_kept) == (0, t.key_facts)
    assert (t.superseded_unmarked, t.summaries_drifted, report.blocked) == (int(drifts),) * 2 + (drifts,)
    if drifts:
        assert report.blocking == [
            "acme: prose-drift rate 1/1 summaries is above 0 (0 sentence(s) the fence "
            "refuses, 0 the prose diff refuses, 0 judge finding(s), 1 line(s) restating a "
            "superseded value unmarked)"
        ]
        (finding,) = report.findings
        assert finding.kind == "prose_drift" and "superseded_unmarked tz-1" in finding.detail
    else:
        assert report.blocking == [] and t.rates()["prose_drift_rate"] == 0.0


def test_the_faithful_model_quoting_the_old_timezone_does_not_drift_through_the_cli(memory, traveller, store_url):
    with ScriptedChatServer(default=echo_conversation) as server:
        result, doc = daily(store_url, server, "--json", "--no-store")
        (sent,) = server.requests
    assert "UTC-05:00 please" in sent["messages"][-1]["content"]  # the model read the old value, and quoted it
    assert result.exit_code == 0, result.output
    assert (doc["overall"]["superseded_unmarked"], doc["overall"]["prose_drift_rate"]) == (0, 0.0)


def test_the_threshold_is_a_share_of_summaries(memory, allergic, store_url):
    def drift_on_u1(body: dict) -> Reply:
        document = json.loads(body["messages"][-1]["content"])
        return narrative(PEANUTS) if document["subject"] == "u1" else echo_conversation(body)

    with ScriptedChatServer(default=drift_on_u1) as server:
        strict = run_daily(memory.store, [T], compressor=chat(server), store_results=False)
        lenient = run_daily(memory.store, [T], compressor=chat(server), store_results=False, max_prose_drift_rate=0.5)
        result, doc = daily(store_url, server, "--json", "--no-store", "--max-prose-drift-rate", "0.5")
    assert strict.tenants[T].rates()["prose_drift_rate"] == 0.5
    assert strict.blocked and strict.blocking[0].startswith("acme: prose-drift rate 1/2 summaries is above 0 ")
    assert not lenient.blocked and lenient.tenants[T].summaries_drifted == 1
    assert result.exit_code == 0 and doc["max_prose_drift_rate"] == 0.5 and doc["overall"]["summaries_drifted"] == 1
    with pytest.raises(InvalidInput, match="max_prose_drift_rate"):
        run_daily(memory.store, [T], max_prose_drift_rate=1.5)
    bad = runner.invoke(app, ["--db", store_url, "eval", "daily", "-t", T, "--max-prose-drift-rate", "2"])
    assert bad.exit_code == 2
    with memory.store.read() as tx:
        assert tx.daily_metrics(T) == []


def statements(*items: dict) -> Reply:
    full = [
        {
            "fact_id": None,
            "predicate": None,
            "value": None,
            "polarity": "positive",
            "modality": "asserted",
            "conditions": [],
            "attributed_to": None,
            "settles_conflict": False,
            **item,
        }
        for item in items
    ]
    return completion(json.dumps({"statements": full}))


def test_a_judge_finding_is_prose_drift_and_a_failed_judge_an_error(memory, allergic, store_url):
    # no word of the fact nor of its synonyms: the narrative rule and the fence cannot see it, a judge can
    told = "They are fine with anything on the menu these days."
    lifted = statements(
        {"fact_id": "u1-allergy", "predicate": "food.peanuts_allowed", "value": "fine with anything on the menu"}
    )
    with ScriptedChatServer(default=says(told)) as writer, ScriptedChatServer([lifted], default=statements()) as reader:
        result, doc = daily(
            allergic,
            writer,
            "--json",
            "--no-store",
            "--sample",
            "1",
            "--seed",
            "s",
            env={"LOSSGATE_JUDGE_URL": reader.url, "LOSSGATE_JUDGE_MODEL": "reader-1"},
        )
        (asked,) = reader.requests
    assert json.loads(asked["messages"][-1]["content"])["narrative"] == told
    assert result.exit_code == 1, result.output
    t = doc["overall"]
    assert (t["judge_findings"], t["narrative_refused"], t["narrative_omitted"], t["summaries_drifted"]) == (1, 0, 0, 1)
    assert "1 judge finding(s)" in doc["blocking"][0]

    with (
        ScriptedChatServer(default=says(told)) as writer,
        ScriptedChatServer(default=Reply(status=500, body={"error": {"message": "down"}})) as reader,
    ):
        judge = ModelJudge(JudgeConfig(base_url=reader.url, model="reader-1", max_retries=0, **FAST))
        report = run_daily(memory.store, [T], compressor=chat(writer), judge=judge, store_results=False)
        judge.close()
    t = report.tenants[T]
    assert (t.outcome_error, t.summaries_read, t.judge_findings) == (2, 2, 0)
    assert [f.kind for f in report.findings] == ["error", "error"]
    assert all("JudgeError" in f.detail for f in report.findings)
