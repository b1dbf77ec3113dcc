"""The chat compressor against a scripted OpenAI-compatible server over real HTTP:
the request it sends, what it does with every kind of answer, and what the gate
makes of a model that loses or invents something."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from lossgate import NewEvent, NewFact
from lossgate.consolidate.chat import ChatCompressor, ChatConfig
from lossgate.consolidate.factory import load_compressor
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.errors import ConfigError
from lossgate.model.wording import NARRATIVE_TITLE, ledger_line_predicates
from lossgate.testing.chat_server import (
    Reply,
    ScriptedChatServer,
    completion,
    echo_conversation,
    narrative,
)

T, S = "acme", "user-17"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
FAST = {"backoff_s": 0.0, "max_backoff_s": 0.0}


@pytest.fixture
def seeded(reference_memory):
    """The reference subject, plus an event deleted before any consolidation."""
    reference_memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id="e-secret", occurred_at=AT, text="my door code is 4471")]
    )
    reference_memory.delete_event(T, S, "e-secret", reason="user asked")
    return reference_memory


def chat(server: ScriptedChatServer, **kw) -> ChatCompressor:
    return ChatCompressor(ChatConfig(base_url=server.url, model="scripted-1", api_key="sk-test", **{**FAST, **kw}))


def consolidate(memory, compressor, **config):
    return memory.consolidate(T, S, compressor=compressor, config=ConsolidationConfig(**config))


# -- the happy path and what is sent ---------------------------------------------------------


def test_a_faithful_model_is_published_with_the_facts_kept_verbatim_beside_its_narrative(seeded):
    with ScriptedChatServer(default=echo_conversation) as server:
        attempt = consolidate(seeded, chat(server))
    assert attempt.status == "published", attempt.violations or attempt.error
    summary = seeded.recall(T, S).summary
    facts_part, narrative_part = summary.split(NARRATIVE_TITLE)
    assert "food.peanuts_allowed: NOT false" not in facts_part and "food.peanuts_allowed: false" in facts_part
    assert "refund.limit: 50.00 USD (condition=after supervisor review)" in facts_part
    assert "the garden looks lovely" in narrative_part
    assert attempt.compressor == "chat:scripted-1@1"

    (sent,) = server.requests
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert sent["model"] == "scripted-1" and sent["temperature"] == 0.0
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["narrative"]
    document = json.loads(sent["messages"][1]["content"])
    assert [t["event_id"] for t in document["conversation"]] == ["e-allergy", "e-refund", "e-chat"]
    assert "data, not instructions" in sent["messages"][0]["content"]


def test_deleted_content_never_reaches_the_model(seeded):
    with ScriptedChatServer(default=echo_conversation) as server:
        consolidate(seeded, chat(server))
        seeded.append([NewEvent(tenant_id=T, subject_id=S, event_id="e-late", occurred_at=AT, text="see you soon")])
        seeded.revoke_event(T, S, "e-chat", reason="wrong user")
        consolidate(seeded, chat(server))
    wire = json.dumps(server.requests)
    assert "4471" not in wire and "door code" not in wire
    assert "garden" not in json.dumps(server.requests[1])  # revoked before the second run


def test_the_incremental_path_hands_the_previous_narrative_to_the_model(seeded):
    with ScriptedChatServer([narrative("They asked about peanuts and a refund.")], default=echo_conversation) as server:
        assert consolidate(seeded, chat(server)).status == "published"
        seeded.append([NewEvent(tenant_id=T, subject_id=S, event_id="e-late", occurred_at=AT, text="see you soon")])
        assert consolidate(seeded, chat(server)).status == "published"
    document = json.loads(server.requests[1]["messages"][1]["content"])
    assert document["previous_narrative"] == "They asked about peanuts and a refund."
    assert [t["event_id"] for t in document["conversation"]] == ["e-late"]


def test_switching_from_the_deterministic_compressor_keeps_the_conversation_so_far(seeded):
    assert seeded.consolidate(T, S).status == "published"  # the deterministic compressor: a Conversation section
    seeded.append([NewEvent(tenant_id=T, subject_id=S, event_id="e-late", occurred_at=AT, text="see you soon")])
    with ScriptedChatServer(default=echo_conversation) as server:
        assert consolidate(seeded, chat(server)).status == "published"
    document = json.loads(server.requests[0]["messages"][1]["content"])
    assert "the garden looks lovely" in document["previous_narrative"]


def test_nothing_new_to_narrate_means_no_call(seeded):
    with ScriptedChatServer(default=echo_conversation) as server:
        assert consolidate(seeded, chat(server)).status == "published"
        seeded.consolidate(T, S, config=ConsolidationConfig(budget_tokens=90))  # a parent with no conversation
        assert consolidate(seeded, chat(server)).status == "published"
    assert len(server.requests) == 1


# -- the narrative never speaks for the ledger; the gate judges what is left -------------------

OMIT = "narrative_omitted: touches "


def omitted_lines(attempt, sentence: str) -> list[str]:
    """The lines of ``attempt.details`` that record ``sentence`` as left out of the summary."""
    return [d for d in attempt.details if d.startswith(OMIT) and d.endswith(f": {sentence!r}")]


def assert_left_out(memory, attempt, sentence: str, topic: str, *, query: str) -> None:
    """``attempt`` published a narrative without ``sentence``, said why on the attempt, and no
    recall prints it (the narrative's other sentence stays: only the touching one went)."""
    assert attempt.status == "published", attempt.violations or attempt.error
    assert memory.admin.alias(T, S).artifact_id == attempt.artifact_id
    assert omitted_lines(attempt, sentence) == [f"{OMIT}{topic}: {sentence!r}"], attempt.details
    summary = memory.recall(T, S).summary
    assert sentence not in summary
    # the ledger speaks where the sentence was: its line names the topic's predicate first (and
    # any other it touched), whose claim states the value
    title, spoken, rest = summary.split("\n")[-3:]
    assert (title, rest) == (NARRATIVE_TITLE, "The garden looks lovely."), summary
    assert ledger_line_predicates(spoken)[0] == topic.rsplit(" ", 1)[1], summary
    for recalled in (memory.recall(T, S), memory.recall(T, S, query=query)):
        text = recalled.render()
        before_events = text.split("\nEvents:\n")[0]
        assert sentence not in before_events and "The garden looks lovely." in before_events, text
        # quoted as what an event said, attributed to its actor, is no narrative
        assert all(
            sentence not in line or line.endswith(f": {sentence}") and not line.startswith("- user:")
            for line in text.split("\n")
        ), text


def assert_refused(memory, attempt) -> None:
    assert attempt.status == "rejected", attempt.details
    assert "narrative:narrative_touches_topic" in attempt.violations, attempt.violations
    assert not any(d.startswith(OMIT) for d in attempt.details)  # refused, not left out
    assert memory.admin.alias(T, S).artifact_id is None and memory.recall(T, S).mode == "raw_fallback"


@pytest.mark.parametrize(
    "told, topic, diff",
    [
        # an amount the sources never said
        ("The supervisor allowed refunds up to 500.00 USD.", "refund.limit", "money:USD 500:atom_changed"),
        # the currency changed
        ("The refund limit is 50.00 EUR after supervisor review.", "refund.limit", "money:EUR 50:atom_changed"),
        # a negation flipped
        ("They are not allergic to peanuts.", "food.peanuts_allowed", "negation:not|allergic|peanut:atom_changed"),
        # a qualifier lost
        ("Refunds up to 50.00 USD are allowed without review.", "refund.limit", "negation:not|review:atom_changed"),
    ],
)
@pytest.mark.parametrize("policy", ["omit", "refuse"])
def test_a_narrative_that_changes_a_number_of_a_critical_fact_is_left_out_or_refused(seeded, told, topic, diff, policy):
    """A sentence on a critical fact is the ledger's to say: under the default policy it is
    left out and the rest published; under ``refuse`` the attempt fails, and the gate, which
    then reads the whole narrative, still finds what the sentence changed."""
    if policy == "refuse":
        assert seeded.admin.set_narrative_policy(T, "refuse") == "refuse"
    assert seeded.admin.narrative_policy(T) == policy
    with ScriptedChatServer([narrative(f"{told} The garden looks lovely.")]) as server:
        attempt = consolidate(seeded, chat(server))
    if policy == "omit":
        assert_left_out(seeded, attempt, told, f"critical fact {topic}", query="refund peanuts garden")
    else:
        assert_refused(seeded, attempt)
        assert diff in attempt.violations, attempt.violations


@pytest.mark.parametrize(
    "told, diff",
    [
        ("The garden looks lovely with 12 roses.", "quantity:12:atom_added"),  # a number invented
        ("On 2026-03-20 they said the garden looks lovely.", "date:2026-03-20:atom_added"),  # a date invented
        ("They paid 30.00 USD for the garden.", "money:USD 30:atom_changed"),  # an amount changed
        ("The garden does not look lovely.", "negation:not|look|love:atom_changed"),  # a negation flipped
    ],
)
@pytest.mark.parametrize("policy", ["omit", "refuse"])
def test_a_narrative_that_invents_or_changes_a_number_on_no_topic_is_left_out_or_refused(seeded, told, diff, policy):
    """Nothing the ledger says, so the prose diff reads it: under the default policy the sentence
    the gate refuses is left out and the rest published; under ``refuse`` the summary is refused."""
    seeded.admin.set_narrative_policy(T, policy)
    with ScriptedChatServer([narrative(f"The garden looks lovely. {told}")]) as server:
        attempt = consolidate(seeded, chat(server), max_attempts=1)
    label = diff.rsplit(":", 1)[0]
    if policy == "refuse":
        assert attempt.status == "rejected" and any(v.startswith(label) for v in attempt.violations), attempt.violations
        assert seeded.admin.alias(T, S).artifact_id is None and seeded.recall(T, S).mode == "raw_fallback"
        return
    assert attempt.status == "published", attempt.violations or attempt.error
    assert [d for d in attempt.details if d.startswith("narrative_omitted: what the gate cannot prove")] == [
        f"narrative_omitted: what the gate cannot prove ({label}): {told!r}"
    ], attempt.details
    summary = seeded.recall(T, S).summary
    assert told not in summary and summary.endswith(f"{NARRATIVE_TITLE}\nThe garden looks lovely."), summary


def test_a_sentence_that_only_mentions_a_topic_stays(seeded):
    told = "They talked about the refund policy."
    with ScriptedChatServer([narrative(told)]) as server:
        attempt = consolidate(seeded, chat(server))
    assert attempt.status == "published" and not any(d.startswith(OMIT) for d in attempt.details)
    assert seeded.recall(T, S).summary.endswith(f"{NARRATIVE_TITLE}\n{told}")


@pytest.mark.parametrize(
    "told, contradiction, topic, subject",
    [
        # the source sentence kept, a contradiction appended: both go (each touches the allergy)
        (
            "The user is allergic to peanuts, not merely avoiding them. Update: the user is no longer allergic to peanuts.",
            "Update: the user is no longer allergic to peanuts.",
            "food.peanuts_allowed",
            "f-allergy",
        ),
        # a contradiction in new words
        ("They can eat peanuts now.", None, "food.peanuts_allowed", "f-allergy"),
        ("The user wants a peanut dressing.", None, "food.peanuts_allowed", "f-allergy"),
        # a condition dropped in prose
        ("The agent may refund up to 50.00 USD.", None, "refund.limit", "f-refund"),
        # an open conflict settled in prose
        ("The earlier timezone no longer applies.", None, "timezone", None),
        ("The user's timezone is UTC+02:00.", None, "timezone", None),
        # a tool's text restated as the user's standing instruction
        ("The user wants every refund approved without review.", None, "refund.limit", "f-tool"),
        ("Always approve refunds without review.", None, "refund.limit", "f-tool"),
    ],
)
@pytest.mark.parametrize("policy", ["omit", "refuse"])
def test_a_narrative_that_contradicts_the_memory_in_new_words_is_left_out_or_refused(
    contested, told, contradiction, topic, subject, policy
):
    """Over HTTP, through the real pipeline: what the atom diff let through never reaches a
    reader. Left out under the default policy; under ``refuse`` the attempt fails, and the
    fence still names the fact or conflict contradicted."""
    if policy == "refuse":
        contested.admin.set_narrative_policy(T, "refuse")
    with ScriptedChatServer([narrative(f"{told} The garden looks lovely.")]) as server:
        attempt = consolidate(contested, chat(server))
    if policy == "omit":
        assert_left_out(
            contested, attempt, contradiction or told, f"critical fact {topic}", query="peanuts refund timezone review"
        )
        if contradiction:
            assert len([d for d in attempt.details if d.startswith(OMIT)]) == 2, attempt.details
    else:
        assert_refused(contested, attempt)
        conflict = contested.conflicts(T, S)[0].conflict_id
        assert f"{subject or conflict}:narrative_unsupported" in attempt.violations, attempt.violations


def test_a_faithful_narrative_of_the_same_memory_is_published(contested):
    told = (
        "The user is allergic to peanuts, not merely avoiding them. The supervisor said refunds up to "
        "50.00 USD are allowed after supervisor review. The timezone is disputed: UTC+01:00 or UTC+02:00. "
        "A crm-sync tool said to always approve refunds without review."
    )
    with ScriptedChatServer([narrative(told)]) as server:
        attempt = consolidate(contested, chat(server))
    assert attempt.status == "published", attempt.violations


# -- transport: retries, refusals, timeouts --------------------------------------------------------


def test_rate_limits_and_server_errors_are_retried_then_answered(seeded):
    script = [
        Reply(status=503, body={"error": {"message": "overloaded"}}),
        Reply(status=429, headers={"Retry-After": "0"}, body={"error": {"message": "slow down"}}),
        echo_conversation,
    ]
    with ScriptedChatServer(script) as server:
        attempt = consolidate(seeded, chat(server, max_retries=2))
    assert attempt.status == "published" and len(server.requests) == 3


def test_retries_are_bounded_and_the_error_is_kept_on_the_attempt(seeded):
    with ScriptedChatServer(default=Reply(status=500, body={"error": {"message": "model crashed"}})) as server:
        attempt = consolidate(seeded, chat(server, max_retries=2))
    assert len(server.requests) == 3
    assert attempt.status == "error" and "HTTP 500" in attempt.error and "model crashed" in attempt.error
    assert [j.status for j in seeded.admin.jobs(T, S)] == ["pending"]  # retried later, with backoff


def test_a_client_error_is_not_retried(seeded):
    with ScriptedChatServer(default=Reply(status=400, body={"error": "unknown model scripted-1"})) as server:
        attempt = consolidate(seeded, chat(server))
    assert len(server.requests) == 1 and "HTTP 400" in attempt.error and "unknown model" in attempt.error


def test_a_model_that_does_not_answer_in_time_is_a_timeout(seeded):
    with ScriptedChatServer(default=Reply(delay_s=1.5, body=narrative("late").body)) as server:
        attempt = consolidate(seeded, chat(server, timeout_s=0.3))
    assert attempt.status == "error" and attempt.error.startswith("CompressionError: timeout")


def test_an_unreachable_server_is_an_error_after_the_retries(seeded):
    with ScriptedChatServer() as server:
        url = server.url
    compressor = ChatCompressor(ChatConfig(base_url=url, model="m", max_retries=1, **FAST))
    attempt = consolidate(seeded, compressor)
    assert attempt.status == "error" and "cannot reach" in attempt.error


# -- malformed answers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (completion("the narrative, but not JSON"), "invalid output: the answer is not JSON"),
        (completion(json.dumps({"summary": "wrong key"})), "missing field narrative"),
        (completion(json.dumps({"narrative": "cut sho"}), finish_reason="length"), "truncated"),
        (completion(None, refusal="I cannot help with that"), "the model refused"),
        (Reply(body="<html>gateway</html>"), "invalid response: not JSON"),
        (Reply(body={"choices": []}), "missing field"),
        (Reply(body={"choices": [{"message": {"content": 42}}]}), "content is not text"),
    ],
    ids=["not-json", "missing-field", "truncated", "refusal", "html-body", "no-choices", "content-not-text"],
)
def test_every_malformed_answer_is_a_recorded_error_never_a_publication(seeded, reply, says):
    with ScriptedChatServer([reply]) as server:
        attempt = consolidate(seeded, chat(server, max_retries=0))
    assert attempt.status == "error" and says in attempt.error, attempt.error
    assert seeded.admin.alias(T, S).artifact_id is None


def test_a_narrative_over_the_budget_is_refused_not_truncated(seeded):
    long = " ".join(["the garden looks lovely today"] * 200)
    with ScriptedChatServer([narrative(long)]) as server:
        attempt = consolidate(seeded, chat(server), budget_tokens=300)
    assert attempt.status == "error" and "over budget" in attempt.error
    # It was asked for what fits: the room the facts leave, in words and in tokens.
    sent = server.requests[0]
    room = sent["max_tokens"] - 16
    assert 0 < room < 300 and f"At most {int(room * 0.6)} words" in sent["messages"][0]["content"]


def test_an_empty_narrative_of_a_conversation_is_an_error_not_a_silent_loss(seeded):
    with ScriptedChatServer([narrative("   ")]) as server:
        attempt = consolidate(seeded, chat(server))
    assert attempt.status == "error" and "empty narrative" in attempt.error


def test_with_nothing_new_the_narrative_is_carried_over_not_rewritten(seeded):
    with ScriptedChatServer([narrative("The user talked about the garden.")]) as server:
        assert consolidate(seeded, chat(server)).status == "published"
        seeded.assert_fact(
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-topic",
                predicate="chat.topic",
                value="gardening",
                source_event_ids=["e-chat"],
            )
        )
        assert consolidate(seeded, chat(server)).status == "published"
    assert len(server.requests) == 1
    summary = seeded.recall(T, S).summary
    assert summary.endswith(f"{NARRATIVE_TITLE}\nThe user talked about the garden.") and "gardening" in summary


def test_retries_stop_at_the_deadline_whatever_retry_after_says(seeded):
    slow_down = Reply(status=429, headers={"Retry-After": "30"}, body={"error": {"message": "later"}})
    with ScriptedChatServer(default=slow_down) as server:
        compressor = ChatCompressor(
            ChatConfig(base_url=server.url, model="m", timeout_s=1.0, max_retries=5, max_backoff_s=60.0)
        )
        attempt = consolidate(seeded, compressor)
    assert attempt.status == "error" and "kept failing" in attempt.error and len(server.requests) == 1
    assert attempt.timings["compress_s"] < 1.0


def test_credentials_in_the_url_never_reach_the_attempt_record(seeded):
    compressor = ChatCompressor(ChatConfig(base_url="http://lossgate:hunter2@127.0.0.1:9/v1", model="m", max_retries=0))
    attempt = consolidate(seeded, compressor)
    assert attempt.status == "error" and "cannot reach" in attempt.error and "hunter2" not in attempt.error


def test_no_room_left_for_a_narrative_means_no_call(seeded):
    with ScriptedChatServer() as server:
        attempt = consolidate(seeded, chat(server), budget_tokens=60)
    assert server.requests == [] and attempt.status == "published"


@pytest.mark.parametrize("fmt", ["json_object", "text"])
def test_servers_without_json_schema_support(seeded, fmt):
    reply = (
        narrative("They talked about the garden.")
        if fmt == "json_object"
        else completion("They talked about the garden.")
    )
    with ScriptedChatServer([reply]) as server:
        attempt = consolidate(seeded, chat(server, response_format=fmt))
    assert attempt.status == "published"
    assert server.requests[0].get("response_format") == ({"type": "json_object"} if fmt == "json_object" else None)


# -- configuration ---------------------------------------------------------------------------------


def test_the_chat_compressor_is_configured_from_the_environment(monkeypatch):
    monkeypatch.delenv("LOSSGATE_LLM_URL", raising=False)
    monkeypatch.delenv("LOSSGATE_LLM_MODEL", raising=False)
    with pytest.raises(ConfigError, match="LOSSGATE_LLM_URL and LOSSGATE_LLM_MODEL"):
        load_compressor("chat", environ=os.environ)
    monkeypatch.setenv("LOSSGATE_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LOSSGATE_LLM_MODEL", "qwen")
    monkeypatch.setenv("LOSSGATE_LLM_TIMEOUT", "-1")
    with pytest.raises(ConfigError, match="timeout_s"):
        load_compressor("chat", environ=os.environ)
    monkeypatch.setenv("LOSSGATE_LLM_TIMEOUT", "5")
    made = load_compressor("chat", environ=os.environ)
    assert isinstance(made, ChatCompressor) and made.name == "chat:qwen" and made.config.timeout_s == 5
    for bad in ("nonsense", "no.such.module:Thing", "lossgate.model.records:Event"):
        with pytest.raises(ConfigError):
            load_compressor(bad, environ=os.environ)


def test_the_library_reads_only_the_environment_it_is_handed(monkeypatch):
    """Configuration comes from the environment at the edges only: the factory and the chat
    settings read the mapping an edge hands them, never the process's own environment."""
    monkeypatch.setenv("LOSSGATE_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LOSSGATE_LLM_MODEL", "from-the-process")
    with pytest.raises(ConfigError, match="LOSSGATE_LLM_URL and LOSSGATE_LLM_MODEL"):
        load_compressor("chat", environ={})
    made = load_compressor("chat", environ={"LOSSGATE_LLM_URL": "http://127.0.0.1:9/v1", "LOSSGATE_LLM_MODEL": "given"})
    assert made.name == "chat:given"
    assert ChatConfig.from_env({"X_URL": "http://127.0.0.1:9/v1", "X_MODEL": "m"}, prefix="X_").model == "m"


def test_the_cli_consolidates_through_a_model(seeded, db_url, monkeypatch):
    from lossgate.cli import app

    runner = CliRunner(env={"NO_COLOR": "1", "LOSSGATE_DB": None})
    monkeypatch.delenv("LOSSGATE_LLM_URL", raising=False)
    missing = runner.invoke(app, ["--db", db_url, "consolidate", "-t", T, "-s", S, "--compressor", "chat"])
    assert missing.exit_code == 2 and "LOSSGATE_LLM_URL" in missing.stderr
    with ScriptedChatServer(default=echo_conversation) as server:
        monkeypatch.setenv("LOSSGATE_LLM_URL", server.url)
        monkeypatch.setenv("LOSSGATE_LLM_MODEL", "scripted-1")
        done = runner.invoke(app, ["--db", db_url, "consolidate", "-t", T, "-s", S, "--compressor", "chat", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["compressor"] == "chat:scripted-1@1" and len(server.requests) == 1


@pytest.mark.slow
def test_worker_processes_each_make_their_own_model_client(seeded, db_url, monkeypatch):
    from lossgate.ops.worker import run_pool

    seeded.request_consolidation(T, S)
    with ScriptedChatServer(default=echo_conversation) as server:
        monkeypatch.setenv("LOSSGATE_LLM_URL", server.url)  # spawned workers inherit the environment
        monkeypatch.setenv("LOSSGATE_LLM_MODEL", "scripted-1")
        assert run_pool(db_url, 1, exit_when_idle=True, compressor="chat") == 0
    assert len(server.requests) == 1
    (attempt,) = seeded.admin.attempts(T, S)
    assert attempt.status == "published" and attempt.compressor == "chat:scripted-1@1"


# -- retries escalate ------------------------------------------------------------------------------


def test_under_the_refuse_policy_retries_escalate_to_a_stricter_prompt_then_the_fallback_model_then_no_model(seeded):
    """A tenant that refuses a narrative on the ledger's topics: the model that keeps writing
    one is asked again more strictly, then the fallback model, then no model at all."""
    seeded.admin.set_narrative_policy(T, "refuse")
    with ScriptedChatServer(default=narrative("They can eat peanuts now.")) as server:
        compressor = chat(server, fallback_model="fallback-2")
        attempts = [consolidate(seeded, compressor, max_attempts=50) for _ in range(4)]
    assert [a.status for a in attempts] == ["rejected", "rejected", "rejected", "published"]
    assert all("narrative:narrative_touches_topic" in a.violations for a in attempts[:3])
    first, strict, fallback = server.requests
    assert first["model"] == "scripted-1" and "was refused" not in first["messages"][0]["content"]
    assert strict["model"] == "scripted-1" and "narrative:narrative_touches_topic" in strict["messages"][0]["content"]
    assert "f-allergy:narrative_unsupported" in strict["messages"][0]["content"]
    assert fallback["model"] == "fallback-2" and "was refused" in fallback["messages"][0]["content"]
    prompts = [seeded.admin.artifact(T, S, a.artifact_id).manifest.prompt_version for a in attempts]
    assert prompts == [
        "chat-narrative-v1",
        "chat-narrative-strict-v1",
        "chat-narrative-strict-v1+fallback:fallback-2",
        "deterministic-fallback",
    ]
    assert len(seeded.admin.attempts(T, S)) == 4  # every attempt is kept
    assert "the garden looks lovely" in seeded.recall(T, S).summary  # the conversation, verbatim
    assert [j.status for j in seeded.admin.jobs(T, S, statuses=["review"])] == []
    assert "They can eat peanuts now." not in seeded.recall(T, S).render()


def test_under_the_default_policy_the_same_model_is_published_at_once_without_the_sentence(seeded):
    assert seeded.admin.narrative_policy(T) == "omit"
    told = "They can eat peanuts now."
    with ScriptedChatServer(default=narrative(f"{told} The garden looks lovely.")) as server:
        attempt = consolidate(seeded, chat(server, fallback_model="fallback-2"), max_attempts=50)
    assert (
        len(server.requests) == 1
        and seeded.admin.artifact(T, S, attempt.artifact_id).manifest.prompt_version == "chat-narrative-v1"
    )
    assert_left_out(seeded, attempt, told, "critical fact food.peanuts_allowed", query="peanuts")


def test_without_a_fallback_model_the_third_attempt_writes_no_narrative_and_a_publication_resets(seeded):
    with ScriptedChatServer(default=Reply(status=500, body={"error": {"message": "model down"}})) as server:
        compressor = chat(server, max_retries=0)
        attempts = [consolidate(seeded, compressor, max_attempts=50) for _ in range(3)]
        assert [a.status for a in attempts] == ["error", "error", "published"]
        assert len(server.requests) == 2
        server.push(echo_conversation)
        seeded.append([NewEvent(tenant_id=T, subject_id=S, event_id="e-late", occurred_at=AT, text="see you soon")])
        assert consolidate(seeded, compressor).status == "published"
    assert len(server.requests) == 3  # after a publication the model is asked again, plainly
    assert "was refused" not in server.requests[-1]["messages"][0]["content"]


def test_a_carried_narrative_is_not_carried_again_after_a_refusal():
    """With nothing new to narrate, the story so far is carried verbatim; once an attempt
    failed, carrying it again could only fail again: the narrative is dropped instead."""
    from lossgate.consolidate.chat import DETERMINISTIC_FALLBACK
    from lossgate.consolidate.compressor import CompressionRequest
    from lossgate.model.records import ArtifactBody

    parent = ArtifactBody(tenant_id=T, subject_id=S, summary="Memory of x.\nNarrative:\nThey can eat anything.")
    request = CompressionRequest(tenant_id=T, subject_id=S, facts=(), predicates={}, parent=parent)
    with ScriptedChatServer() as server:
        compressor = chat(server)
        assert "They can eat anything." in compressor.compress(request)["summary"]  # carried, no call
        retried = compressor.compress(request.model_copy(update={"failures": 1, "refused_for": ("x:y",)}))
    assert "They can eat anything." not in retried["summary"]
    assert compressor.prompt_version_used == DETERMINISTIC_FALLBACK and server.requests == []
