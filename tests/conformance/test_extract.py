"""Facts proposed from raw events, on every store."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from decimal import Decimal

import pytest

from lossgate import Money, NewEvent
from lossgate.errors import LifecycleError
from lossgate.extract import AtomExtractor, Candidate
from lossgate.model.records import Event
from lossgate.model.registry import Registry
from tests.support import REGISTRY_PATH

T, S = "acme", "u1"


@pytest.fixture
def memory(memory):
    """The shipped registry, version 2, with cues: the invoice total is asserted at once,
    seats and the customer id wait for review."""
    doc = tomllib.loads(REGISTRY_PATH.read_text())
    doc["version"] = 2
    doc["predicates"]["invoice.total"].update(cues=["invoice total", "total"], extraction="auto")
    doc["predicates"]["subscription.seats"].update(cues=["seats"])
    doc["predicates"]["customer.id"].update(cues=["customer id"])
    memory.admin.load_predicates(doc)
    return memory


def _say(memory, event_id: str, text: str, trust: str = "authenticated_user") -> None:
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id=event_id, text=text, trust=trust)])


def test_proposals_are_typed_with_their_sources_and_follow_each_predicates_policy(memory):
    _say(memory, "e1", "The invoice total is $14,250.00. We have 34 seats. Our customer id is CUST-4821.")
    proposals = {p.predicate: p for p in memory.extract(T, S)}
    total = proposals["invoice.total"]
    assert total.status == "accepted" and total.source_event_ids == ("e1",) and total.authority == "user"
    fact = memory.fact(T, S, total.fact_id)
    assert fact.value == Money(amount=Decimal("14250.00"), currency="USD") and fact.source_event_ids == ("e1",)
    assert proposals["subscription.seats"].status == "review" and proposals["subscription.seats"].value == 34
    assert proposals["customer.id"].status == "review" and proposals["customer.id"].value == "CUST-4821"
    assert [f.predicate for f in memory.facts(T, S)] == ["invoice.total"]  # review waits for a person
    accepted = memory.admin.accept_proposal(T, S, proposals["subscription.seats"].proposal_id)
    assert accepted.status == "accepted" and memory.fact(T, S, accepted.fact_id).value == 34
    rejected = memory.admin.reject_proposal(T, S, proposals["customer.id"].proposal_id, reason="not ours")
    assert rejected.status == "rejected" and rejected.reason == "not ours"
    with pytest.raises(LifecycleError, match="not waiting for review"):
        memory.admin.accept_proposal(T, S, rejected.proposal_id)
    assert {p.status for p in memory.admin.proposals(T, S)} == {"accepted", "rejected"}


def test_an_untrusted_source_never_yields_a_users_fact(memory):
    _say(memory, "doc", "Invoice total: $99.00, pay it now.", trust="untrusted")
    (p,) = memory.extract(T, S)
    assert p.authority == "untrusted" and p.modality == "quoted" and p.status == "accepted"
    fact = memory.fact(T, S, p.fact_id)
    assert fact.authority == "untrusted" and fact.modality == "quoted"


class _Inventive:
    name = "inventive"

    def propose(self, events: Sequence[Event], registry: Registry) -> list[Candidate]:
        return [
            Candidate("made.up", "x", (events[0].event_id,)),
            Candidate("invoice.total", "not money", (events[0].event_id,)),
        ]


def test_an_unknown_predicate_or_a_mistyped_value_is_refused_and_recorded(memory):
    _say(memory, "e1", "something happened")
    found = {p.predicate: p for p in memory.extract(T, S, extractor=_Inventive())}
    assert found["made.up"].status == "refused" and "unknown predicate" in found["made.up"].reason
    assert found["invoice.total"].status == "refused" and "money" in found["invoice.total"].reason
    assert {p.status for p in memory.admin.proposals(T, S)} == {"refused"}
    assert memory.facts(T, S) == []


class _Broken:
    name = "broken"

    def __init__(self, output) -> None:
        self.output = output

    def propose(self, events: Sequence[Event], registry: Registry):
        if isinstance(self.output, Exception):
            raise self.output
        return self.output


@pytest.mark.parametrize(
    "output, says",
    [
        ({"not": "a list"}, "returned dict, not a list of Candidate"),
        (["a string"], "item 0 is str, not a Candidate"),
        ([Candidate(None, "x", ("e1",))], "item 0 needs a predicate"),  # type: ignore[arg-type]
        ([Candidate("invoice.total", "x", ("e1",), (("condition", None),))], "item 0 needs a predicate"),
        (KeyError("boom"), "extractor 'broken' failed: KeyError"),
    ],
    ids=["not-a-list", "not-a-candidate", "no-predicate", "qualifier-none", "raises"],
)
def test_an_extractor_handing_back_nonsense_is_a_typed_error_and_records_nothing(memory, output, says):
    from lossgate.extract import ExtractionError

    _say(memory, "e1", "The invoice total is $14,250.00.")
    with pytest.raises(ExtractionError, match=says):
        memory.extract(T, S, extractor=_Broken(output))
    assert memory.admin.proposals(T, S) == []
    (p,) = memory.extract(T, S)  # the events were not marked read
    assert p.predicate == "invoice.total"


class _Qualified:
    name = "qualified"

    def propose(self, events: Sequence[Event], registry: Registry) -> list[Candidate]:
        return [Candidate("subscription.seats", 12, (events[0].event_id,), (("colour", "blue"),))]


def test_a_qualifier_the_predicate_does_not_allow_is_refused_at_once(memory):
    _say(memory, "e1", "We have 12 seats.")
    (p,) = memory.extract(T, S, extractor=_Qualified())
    assert p.status == "refused" and "colour" in p.reason


def test_a_disagreeing_proposal_opens_a_conflict_and_supersedes_nothing(memory):
    _say(memory, "e1", "The invoice total is $14,250.00.")
    (first,) = memory.extract(T, S)
    _say(memory, "e2", "Correction from accounting: the total is $15,000.00.")
    (second,) = memory.extract(T, S)
    assert second.status == "conflict" and second.fact_id
    assert memory.fact(T, S, first.fact_id).status == "active"  # never silently superseded
    (conflict,) = memory.conflicts(T, S)
    assert set(conflict.fact_ids) == {first.fact_id, second.fact_id}
    _say(memory, "e3", "As said, the invoice total is $14,250.00.")
    (again,) = memory.extract(T, S)
    assert again.status == "known" and again.fact_id == first.fact_id


class _Recording(AtomExtractor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def propose(self, events: Sequence[Event], registry: Registry) -> list[Candidate]:
        self.seen += [e.event_id for e in events]
        return super().propose(events, registry)


def test_deleted_and_revoked_events_never_reach_the_extractor_and_events_are_read_once(memory):
    _say(memory, "gone", "The invoice total is $1.00.")
    _say(memory, "void", "We have 3 seats.")
    _say(memory, "kept", "We have 40 seats.")
    memory.delete_event(T, S, "gone")
    memory.revoke_event(T, S, "void")
    recorder = _Recording()
    (p,) = memory.extract(T, S, extractor=recorder)
    assert recorder.seen == ["kept"] and p.value == 40
    assert memory.extract(T, S, extractor=recorder) == [] and recorder.seen == ["kept"]  # read once


def test_deleting_a_source_withdraws_and_purges_the_proposals_drawn_from_it(memory):
    _say(memory, "e1", "Our customer id is CUST-4821.")
    (p,) = memory.extract(T, S)
    assert p.status == "review"
    memory.delete_event(T, S, "e1", reason="user asked")
    (after,) = memory.admin.proposals(T, S)
    assert after.status == "rejected" and after.value is None
    assert "CUST-4821" not in after.model_dump_json()
    with pytest.raises(LifecycleError):
        memory.admin.accept_proposal(T, S, p.proposal_id)


def test_a_sentence_with_two_candidate_values_proposes_nothing(memory):
    _say(memory, "e1", "The invoice total is $14,250.00 or maybe $14,205.00, I am not sure.")
    assert memory.extract(T, S) == []
    assert memory.facts(T, S) == []


def test_the_cli_extracts_and_lists_what_waits_for_review(memory, store_url):
    import json

    from typer.testing import CliRunner

    from lossgate.cli import app

    _say(memory, "e1", "The invoice total is $14,250.00. We have 34 seats. Our customer id is CUST-4821.")
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})  # a table wraps to the terminal
    done = runner.invoke(app, ["--db", store_url, "extract", "-t", T, "-s", S, "--json"])
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {p["status"] for p in lines} == {"accepted", "review"}
    waiting = runner.invoke(app, ["--db", store_url, "extract", "-t", T, "-s", S, "--review"])
    assert waiting.exit_code == 0 and "subscription.seats" in waiting.stdout
    again = runner.invoke(app, ["--db", store_url, "extract", "-t", T, "-s", S])
    assert "nothing new to propose" in again.stdout
    seats = next(p["proposal_id"] for p in lines if p["predicate"] == "subscription.seats")
    cust = next(p["proposal_id"] for p in lines if p["predicate"] == "customer.id")
    accepted = runner.invoke(app, ["--db", store_url, "extract", "-t", T, "-s", S, "--accept", seats, "--json"])
    assert accepted.exit_code == 0 and json.loads(accepted.stdout)["status"] == "accepted"
    rejected = runner.invoke(
        app, ["--db", store_url, "extract", "-t", T, "-s", S, "--reject", cust, "--reason", "not ours", "--json"]
    )
    assert json.loads(rejected.stdout)["reason"] == "not ours"
    for bad in (["--accept", seats], ["--accept", "p-nope"], ["--accept", seats, "--reject", cust]):
        refused = runner.invoke(app, ["--db", store_url, "extract", "-t", T, "-s", S, *bad])
        assert refused.exit_code == 2, (bad, refused.output)
    for who in (["-t", "", "-s", S], ["-t", T, "-s", "two words"]):
        assert runner.invoke(app, ["--db", store_url, "extract", *who]).exit_code == 2


# -- a model as the extractor, over HTTP ------------------------------------------------------------


def _facts_reply(*facts: dict):
    import json as _json

    from lossgate.testing.chat_server import completion

    return completion(_json.dumps({"facts": [{"qualifiers": {}, **f} for f in facts]}))


def test_a_model_extractor_proposes_typed_facts_under_the_same_rules(memory):
    from lossgate.extract import ModelExtractor
    from lossgate.judge import JudgeConfig
    from lossgate.testing.chat_server import ScriptedChatServer

    _say(memory, "e1", "We signed up for 12 seats; our account id is ACC-7.")
    _say(memory, "web", "Invoice total: 9,999.00 USD (from a web page).", trust="untrusted")
    reply = _facts_reply(
        {"predicate": "subscription.seats", "value": "12", "source_event_ids": ["e1"]},
        {
            "predicate": "invoice.total",
            "value": '{"amount": "9999.00", "currency": "USD"}',
            "source_event_ids": ["web"],
        },
        {"predicate": "made.up", "value": '"x"', "source_event_ids": ["e1"]},
        {"predicate": "subscription.seats", "value": "13", "source_event_ids": ["not-shown"]},  # dropped
        # one citation it was shown, one it was not: dropped whole, never kept on the other
        {"predicate": "subscription.seats", "value": "14", "source_event_ids": ["e1", "ghost-event"]},
    )
    with ScriptedChatServer([reply]) as server:
        found = {
            p.predicate: p
            for p in memory.extract(
                T, S, extractor=ModelExtractor(JudgeConfig(base_url=server.url, model="extractor-1"))
            )
        }
    sent = server.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert {m["event_id"] for m in __import__("json").loads(sent["messages"][1]["content"])["messages"]} == {
        "e1",
        "web",
    }
    assert found["subscription.seats"].status == "review" and found["subscription.seats"].value == 12
    assert found["invoice.total"].authority == "untrusted" and found["invoice.total"].modality == "quoted"
    assert found["made.up"].status == "refused"
    assert len(found) == 3 and found["subscription.seats"].extractor == "model:extractor-1/extract-v1"


@pytest.mark.parametrize(
    "reply_body, says",
    [
        ("not json", "not JSON"),
        ('{"nothing": []}', "missing field facts"),
        ('{"facts": [{"predicate": "x"}]}', "facts.0 lacks"),
    ],
)
def test_a_model_extractor_that_cannot_answer_records_nothing_and_leaves_the_events_unread(memory, reply_body, says):
    from lossgate.extract import ExtractionError, ModelExtractor
    from lossgate.judge import JudgeConfig
    from lossgate.testing.chat_server import ScriptedChatServer, completion

    _say(memory, "e1", "We have 12 seats.")
    with ScriptedChatServer([completion(reply_body)]) as server:
        with pytest.raises(ExtractionError, match=says):
            memory.extract(T, S, extractor=ModelExtractor(JudgeConfig(base_url=server.url, model="m", max_retries=0)))
    assert memory.admin.proposals(T, S) == []
    (p,) = memory.extract(T, S)  # the events were not marked read: the next extractor sees them
    assert p.value == 12
