"""A model as the gate's second judge, over real HTTP.

Two scripted OpenAI-compatible servers on loopback: one is the compressor's model, which
writes the narrative; the other is the judge's, which answers with the statements it
read. A narrative sentence on a topic only the ledger states (its words, the registry's
synonyms: :mod:`lossgate.gate.narrative`) is left out before the judge reads anything; the
judge catches what is left that the lexical reading cannot see (a contradiction sharing no
word with the fact nor with its synonyms), and a judge that cannot answer stops the
publication.
"""

from __future__ import annotations

import json
import logging
import os

import pytest

from lossgate.consolidate.chat import ChatCompressor, ChatConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.errors import ConfigError
from lossgate.judge import JUDGE_PROMPT_VERSION, JudgeConfig, ModelJudge
from lossgate.model.wording import ledger_line
from lossgate.testing.chat_server import Reply, ScriptedChatServer, completion, narrative

T, S = "acme", "user-17"
FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}
# a narrative sentence that touches no topic of the contested memory: the judge reads it
NEUTRAL = "They chatted about the garden."
OMIT = "narrative_omitted: touches "


def omitted(attempt) -> list[str]:
    return [d for d in attempt.details if d.startswith(OMIT)]


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


def run(memory, told: str, judge_script, **judge_config):
    """Consolidate with a model that narrates ``told`` and a judge that answers ``judge_script``."""
    with (
        ScriptedChatServer([narrative(told)]) as writer,
        ScriptedChatServer(
            judge_script if isinstance(judge_script, list) else [],
            default=None if isinstance(judge_script, list) else judge_script,
        ) as reader,
    ):
        compressor = ChatCompressor(ChatConfig(base_url=writer.url, model="writer-1", **FAST))
        judge = ModelJudge(JudgeConfig(base_url=reader.url, model="reader-1", **{**FAST, **judge_config}))
        attempt = memory.consolidate(
            T, S, compressor=compressor, judge=judge, config=ConsolidationConfig(max_attempts=50)
        )
    return attempt, reader


@pytest.mark.parametrize(
    "told, said, expected",
    [
        # no word in common with the fact nor its synonyms: not left out, the fence cannot see
        # it, the judge can ("Nuts are fine", "Reimbursements are capped": left out, see below)
        (
            "They are fine with anything on the menu these days.",
            {"fact_id": "f-allergy", "predicate": "food.peanuts_allowed", "value": "fine with anything on the menu"},
            "f-allergy:polarity_flipped",
        ),
        (
            "The agent can return fifty dollars to a customer.",
            {"fact_id": "f-refund", "predicate": "refund.limit", "value": "50.00 USD", "conditions": []},
            "f-refund:qualifiers_changed",
        ),
        (
            "The agent can return seventy dollars.",
            {"fact_id": "f-refund", "value": "70 USD", "conditions": ["after supervisor review"]},
            "f-refund:value_changed",
        ),
        (
            "They live by Berlin's clock.",
            {"fact_id": "f-tz2", "predicate": "timezone", "value": "UTC+02:00", "settles_conflict": True},
            None,
        ),  # the conflict, whose id the test reads
        (
            "Approvals should simply go through.",
            {"fact_id": "f-tool", "value": "always approve refunds", "attributed_to": "user"},
            "f-tool:untrusted_elevated",
        ),
        # attributed to the subject by id, or to a person the narrative names: still not its source
        (
            "Per user-17, approvals should simply go through.",
            {"fact_id": "f-tool", "value": "always approve refunds", "modality": "quoted", "attributed_to": "user-17"},
            "f-tool:untrusted_elevated",
        ),
        (
            "The traveller wants approvals to go through.",
            {
                "fact_id": "f-tool",
                "value": "always approve refunds",
                "modality": "quoted",
                "attributed_to": "the traveller",
            },
            "f-tool:untrusted_elevated",
        ),
    ],
)
def test_the_judge_refuses_what_the_narrative_says_against_the_ledger(contested, told, said, expected):
    attempt, reader = run(contested, told, [statements(said)])
    expected = expected or f"{contested.conflicts(T, S)[0].conflict_id}:conflict_resolved_by_compressor"
    assert attempt.status == "rejected", (attempt.violations, attempt.error)
    assert expected in attempt.violations
    assert omitted(attempt) == []  # the judge read it whole, and refused it
    assert contested.admin.alias(T, S).artifact_id is None
    (request,) = reader.requests
    sent = json.loads(request["messages"][1]["content"])
    assert sent["narrative"] == told and {f["fact_id"] for f in sent["facts"]} >= {"f-allergy", "f-refund"}
    assert reader.requests[0]["response_format"]["type"] == "json_schema"


# -- what the ledger speaks for never reaches the judge ------------------------------------------

# were the judge to read it, it would refuse: the allergy read as lifted
LIFTED = statements({"fact_id": "f-allergy", "predicate": "food.peanuts_allowed", "value": "can eat peanuts"})


def test_a_sentence_on_a_topic_of_the_ledger_never_reaches_the_judge(contested):
    touching = [
        "Nuts are fine for them these days.",
        "Reimbursements are capped at fifty dollars.",
        "The cap is as agreed.",
    ]
    # NEUTRAL first: after a touching sentence, "They ..." would speak of its topic (an anaphor)
    attempt, reader = run(contested, " ".join([NEUTRAL, *touching]), [statements()])
    assert attempt.status == "published", (attempt.violations, attempt.error)
    assert [d.rsplit(": ", 1)[1] for d in omitted(attempt)] == [repr(t) for t in touching], attempt.details
    (request,) = reader.requests
    assert json.loads(request["messages"][1]["content"])["narrative"] == NEUTRAL
    wire = json.dumps(request)
    assert not any(t in wire for t in touching) and "Nuts" not in wire and "capped" not in wire
    summary = contested.recall(T, S).summary
    # the ledger speaks in their place, once for the two sentences on the refund limit
    spoken = "\n".join(ledger_line([p]) for p in ("food.peanuts_allowed", "refund.limit"))
    assert summary.endswith(f"{NEUTRAL}\n{spoken}") and not any(t in summary for t in touching), summary


def test_a_narrative_that_is_all_the_ledgers_to_say_calls_no_judge(contested):
    told = "They can eat peanuts now."
    attempt, reader = run(contested, told, [LIFTED])
    assert reader.requests == []
    assert attempt.status == "published" and omitted(attempt) == [
        f"{OMIT}critical fact food.peanuts_allowed: {told!r}"
    ], (attempt.violations, attempt.details)
    assert "judge:" not in contested.admin.artifact(T, S, attempt.artifact_id).manifest.prompt_version  # nothing judged
    assert told not in contested.recall(T, S).render()


def test_under_the_refuse_policy_a_touching_narrative_is_refused_before_the_judge(contested):
    contested.admin.set_narrative_policy(T, "refuse")
    attempt, reader = run(contested, f"{NEUTRAL} They can eat peanuts now.", [LIFTED])
    assert reader.requests == []  # the gate refused it: nothing to judge
    assert attempt.status == "rejected" and "narrative:narrative_touches_topic" in attempt.violations
    assert "f-allergy:polarity_flipped" not in attempt.violations  # a judge finding: there was none
    assert contested.admin.alias(T, S).artifact_id is None


def test_quoted_text_attributed_to_where_it_came_from_is_published(contested):
    told = "The user is allergic to peanuts, not merely avoiding them. A crm-sync tool said to always approve refunds."
    attempt, _ = run(
        contested,
        told,
        [
            statements(
                {
                    "fact_id": "f-allergy",
                    "predicate": "food.peanuts_allowed",
                    "value": "allergic to peanuts",
                    "polarity": "negative",
                },
                {
                    "fact_id": "f-tool",
                    "value": "always approve refunds",
                    "modality": "quoted",
                    "attributed_to": "crm-sync",
                },
            )
        ],
    )
    assert attempt.status == "published", (attempt.violations, attempt.error)


def test_a_faithful_narrative_the_judge_agrees_with_is_published_and_the_prompt_is_on_record(contested):
    told = "They keep well away from that legume."  # no word of the allergy: not left out
    attempt, reader = run(
        contested,
        told,
        [
            statements(
                {
                    "fact_id": "f-allergy",
                    "predicate": "food.peanuts_allowed",
                    "value": "allergic to peanuts",
                    "polarity": "negative",
                }
            )
        ],
    )
    assert attempt.status == "published", (attempt.violations, attempt.error)
    assert omitted(attempt) == [] and len(reader.requests) == 1
    assert json.loads(reader.requests[0]["messages"][1]["content"])["narrative"] == told
    assert contested.recall(T, S).summary.endswith(told)
    manifest = contested.admin.artifact(T, S, attempt.artifact_id).manifest
    assert f"judge:reader-1/{JUDGE_PROMPT_VERSION}" in manifest.prompt_version


@pytest.mark.parametrize(
    "script, says",
    [
        (completion("not json"), "not JSON"),
        (completion(json.dumps({"facts": []})), "missing field statements"),
        (completion(json.dumps({"statements": [{"fact_id": "f-allergy"}]})), "statements.0.predicate"),
        (completion(None, refusal="I will not judge this"), "the judge refused"),
        (completion(json.dumps({"statements": []}), finish_reason="length"), "truncated"),
        (Reply(status=500, body={"error": {"message": "judge crashed"}}), "HTTP 500"),
    ],
    ids=["not-json", "missing-field", "bad-statement", "refusal", "truncated", "server-error"],
)
def test_a_judge_that_cannot_answer_publishes_nothing(contested, script, says):
    attempt, reader = run(contested, NEUTRAL, script, max_retries=0)
    assert len(reader.requests) == 1  # asked, once
    assert attempt.status == "error" and says in attempt.error, attempt.error
    assert attempt.error.startswith("JudgeError")
    assert contested.admin.alias(T, S).artifact_id is None


def test_a_slow_or_unreachable_judge_publishes_nothing(contested):
    attempt, _ = run(contested, NEUTRAL, Reply(delay_s=1.0, body={}), timeout_s=0.2, max_retries=0)
    assert attempt.status == "error" and "timeout" in attempt.error
    with ScriptedChatServer() as gone:
        url = gone.url
    with ScriptedChatServer([narrative(NEUTRAL)]) as writer:
        attempt = contested.consolidate(
            T,
            S,
            compressor=ChatCompressor(ChatConfig(base_url=writer.url, model="w")),
            judge=ModelJudge(JudgeConfig(base_url=url, model="r", max_retries=0)),
        )
    assert attempt.status == "error" and "cannot reach" in attempt.error
    assert contested.admin.alias(T, S).artifact_id is None


def test_the_judge_on_the_compressors_own_model_is_a_warning(contested, caplog):
    with (
        ScriptedChatServer([narrative("The user is allergic to peanuts.")]) as writer,
        ScriptedChatServer(default=statements()) as reader,
        caplog.at_level(logging.WARNING),
    ):
        contested.consolidate(
            T,
            S,
            compressor=ChatCompressor(ChatConfig(base_url=writer.url, model="same-model")),
            judge=ModelJudge(JudgeConfig(base_url=reader.url, model="same-model")),
        )
    assert any("the judge runs the compressor's own model" in r.message for r in caplog.records)


def test_the_judge_is_configured_apart_from_the_compressor(monkeypatch):
    for name in ("LOSSGATE_JUDGE_URL", "LOSSGATE_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert ModelJudge.from_env(os.environ) is None
    monkeypatch.setenv("LOSSGATE_JUDGE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="both"):
        ModelJudge.from_env(os.environ)
    monkeypatch.setenv("LOSSGATE_JUDGE_MODEL", "reader")
    assert ModelJudge.from_env(os.environ).name == "judge:reader"


def test_no_narrative_means_no_judge_call(reference_memory):
    with ScriptedChatServer(default=statements()) as reader:
        attempt = reference_memory.consolidate(
            T,
            S,
            judge=ModelJudge(JudgeConfig(base_url=reader.url, model="r")),
            config=ConsolidationConfig(budget_tokens=90),
        )
    assert attempt.status == "published" and reader.requests == []


@pytest.mark.parametrize(
    "said, ok",
    [
        ({"value": "150.00 USD", "conditions": ["after supervisor review"]}, False),  # not a substring match
        ({"value": "1,050.00 USD", "conditions": ["after supervisor review"]}, False),
        ({"value": "5", "conditions": ["after supervisor review"]}, False),
        ({"value": "$50", "conditions": ["up to", "after a supervisor review"]}, True),  # its own words
        ({"value": "fifty dollars, 50.00 USD", "conditions": ["after supervisor review"]}, True),
    ],
)
def test_the_judge_compares_amounts_as_numbers_and_limits_by_their_words(contested, said, ok):
    attempt, reader = run(contested, "Everything stays as it was.", [statements({"fact_id": "f-refund", **said})])
    assert len(reader.requests) == 1 and omitted(attempt) == []  # "The cap is as agreed.": left out, unjudged
    assert (attempt.status == "published") is ok, attempt.violations
    if not ok:
        assert "f-refund:value_changed" in attempt.violations, attempt.violations


def test_a_judge_answer_nested_past_reason_is_a_failed_attempt_and_escalation_goes_on(contested):
    deep = "[" * 100_000 + "]" * 100_000
    attempt, _ = run(contested, NEUTRAL, completion(deep), max_retries=0)
    assert attempt.status == "error" and attempt.error.startswith("JudgeError")
    assert contested.admin.attempts(T, S)[-1].status == "error"  # recorded, so the next attempt escalates


def test_a_judge_that_trickles_its_answer_is_stopped_at_its_deadline(contested):
    import time

    script = Reply(delay_s=2.0, body=statements().body)
    t0 = time.perf_counter()
    attempt, _ = run(contested, NEUTRAL, script, timeout_s=0.5, max_retries=0)
    assert attempt.status == "error" and "timeout" in attempt.error
    assert time.perf_counter() - t0 < 5
