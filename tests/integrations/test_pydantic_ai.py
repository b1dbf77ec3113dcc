"""lossgate in PydanticAI agents (lossgate.integrations.pydantic_ai), against the real library: an
Agent driven by PydanticAI's own offline FunctionModel, whose scripted turns call the memory
tools, and message histories stored and loaded through lossgate."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import lossgate
from lossgate import InvalidInput, NewEvent, NewFact
from lossgate.integrations.pydantic_ai import LossgateMessageHistory, memory_toolset

T, S = "acme", "user-17"


@pytest.fixture
def allergic(memory: lossgate.Memory) -> lossgate.Memory:
    """A subject with a critical fact the registry's meal guard reads: no peanuts."""
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="e-allergy",
                text="I am allergic to peanuts, not merely avoiding them.",
            )
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="f-allergy",
            predicate="food.peanuts_allowed",
            value=False,
            qualifiers={"basis": "allergy", "severity": "critical"},
            source_event_ids=["e-allergy"],
        )
    )
    return memory


def last_part(messages: list[ModelMessage]) -> Any:
    return messages[-1].parts[-1]


def call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, arguments)])


def say(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def waiter(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model of a food order: recall, then guard the order, then answer."""
    part = last_part(messages)
    if isinstance(part, UserPromptPart):
        return call("recall", query="peanuts satay allergy")
    if part.tool_name == "recall":
        order = {"items": [{"dish": "chicken satay", "ingredients": ["chicken", "satay sauce"]}]}
        return call("guard", action=order, recall_id=part.content.recall_id)
    verdict = part.content
    return say("Ordered." if verdict.allowed else f"I did not order it: {verdict.refusals[0].detail}")


def test_an_agent_recalls_then_guards_an_order_and_does_not_place_the_refused_one(allergic):
    agent = Agent(FunctionModel(waiter), toolsets=[memory_toolset(allergic, T, S)])
    result = agent.run_sync("Order me the chicken satay, please.")
    assert result.output == (
        "I did not order it: items[0].ingredients[1] names 'satay', which "
        "food.peanuts_allowed: false (basis=allergy, severity=critical) forbids"
    )
    recalled = next(
        p.content
        for m in result.all_messages()
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_name == "recall"
    )
    assert "- food.peanuts_allowed: false" in recalled.memory
    assert [(f.fact_id, f.predicate) for f in recalled.facts][:1] == [("f-allergy", "food.peanuts_allowed")]
    # behind the API: the guard result is stored, tied to the recall the agent read
    (stored,) = allergic.admin.guard_results(T, S)
    assert stored.allowed is False and stored.recall_id == recalled.recall_id
    assert [r.fact_id for r in stored.refusals] == ["f-allergy"]
    assert allergic.admin.recalls(T, S)[0].recall_id == recalled.recall_id


def keeper(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model of remembering and forgetting a note."""
    part = last_part(messages)
    if isinstance(part, UserPromptPart):
        if part.content.startswith("Remember"):
            return call("remember", text="The locker code is 4471-KESTREL.")
        if part.content.startswith("Forget the rest"):
            return call("forget", kind="event", id="no-such-event")
        return call("recall", query="locker code")
    if part.outcome == "retried":  # lossgate refused the arguments: the model reads why, and may call again
        return say(f"Could not: {part.content}")
    if part.tool_name == "remember":
        return say(f"Saved as {part.content.event_id}.")
    if part.tool_name == "recall":
        (note,) = [e for e in part.content.events if "locker" in e.text]
        return call("forget", kind="event", id=note.event_id, reason="the user asked")
    return say(f"Forgotten: {part.content.id} is {part.content.state}.")


def test_remember_and_forget_write_and_erase_the_subjects_raw_layer(allergic):
    agent = Agent(FunctionModel(keeper), toolsets=[memory_toolset(allergic, T, S)])
    saved = agent.run_sync("Remember my locker code: 4471-KESTREL.").output
    (note,) = [e for e in allergic.events(T, S) if e.text == "The locker code is 4471-KESTREL."]
    assert saved == f"Saved as {note.event_id}."
    assert (note.kind, note.actor, note.trust) == ("message", "agent", "tool")

    assert agent.run_sync("Forget my locker code.").output == f"Forgotten: {note.event_id} is deleted."
    (gone,) = allergic.events(T, S, states=["deleted"])
    assert gone.event_id == note.event_id and gone.text is None
    assert allergic.recall(T, S, query="locker KESTREL").events == ()

    refused = agent.run_sync("Forget the rest.").output
    assert refused == "Could not: only the notes you remembered can be forgotten; event 'no-such-event' is not one"
    anything = Agent(FunctionModel(keeper), toolsets=[memory_toolset(allergic, T, S, forget="any")])
    refused = anything.run_sync("Forget the rest.").output
    assert refused == "Could not: event no-such-event does not exist for tenant 'acme', subject 'user-17'"


def misled(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that a tool result talked into erasing the allergy, then orders the satay."""
    part = last_part(messages)
    if isinstance(part, UserPromptPart):
        return call("forget", kind="fact", id="f-allergy", reason="the ticket says so")
    if part.outcome == "retried":  # lossgate refused: the model says why
        return say(f"Could not: {part.content}")
    if part.tool_name == "forget":
        return call("guard", action={"items": [{"dish": "satay", "ingredients": ["peanuts"]}]})
    return say(f"allowed={part.content.allowed}")


@pytest.mark.parametrize("forget", ["notes", None])
def test_the_model_cannot_erase_the_fact_the_guard_reads(allergic, forget):
    toolset = memory_toolset(allergic, T, S, forget=forget)
    assert ("forget" in toolset.tools) is (forget is not None)
    if forget is not None:
        output = Agent(FunctionModel(misled), toolsets=[toolset]).run_sync("The ticket says to drop it.").output
        assert output.startswith("Could not: only the notes you remembered can be forgotten")
    assert [f.fact_id for f in allergic.facts(T, S)] == ["f-allergy"]
    assert allergic.guard(T, S, {"items": [{"dish": "satay", "ingredients": ["peanuts"]}]}).allowed is False


def chatter(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that answers with how many user turns it was sent, and recalls on request."""
    part = last_part(messages)
    if isinstance(part, ToolReturnPart):
        return say("Recalled.")
    if "recall" in part.content:
        return call("recall", query="Porto")
    turns = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
    return say(f"Turn {len(turns)}; you said: {' / '.join(turns)}")


def as_json(messages: list[ModelMessage]) -> list[Any]:
    return ModelMessagesTypeAdapter.dump_python(messages, mode="json")


def test_a_message_history_is_stored_in_lossgate_and_loaded_for_the_next_run(memory):
    agent = Agent(FunctionModel(chatter), toolsets=[memory_toolset(memory, T, S)])
    history = LossgateMessageHistory(memory, tenant_id=T, subject_id=S, conversation_id="chat-1")
    assert history.load() == []
    first = agent.run_sync("I moved to Porto last spring.", message_history=history.load())
    history.save(first.new_messages())
    loaded = history.load()
    assert as_json(loaded) == as_json(first.all_messages())
    assert all(isinstance(m, (ModelRequest, ModelResponse)) for m in loaded)

    second = agent.run_sync("What did I say?", message_history=history.load())
    assert second.output == "Turn 2; you said: I moved to Porto last spring. / What did I say?"
    history.save(second.new_messages())
    third = agent.run_sync("Please recall Porto.", message_history=history.load())
    history.save(third.new_messages())
    assert as_json(history.load()) == as_json(third.all_messages())
    assert len(history.load(limit=2)) == 2 and history.load(limit=0) == []
    held = len(history.load())
    assert [len(history.load(limit=n)) for n in (held - 1, held, held + 1, 2 * held - 1, 10 * held)] == [
        held - 1,
        held,
        held,
        held,
        held,
    ]

    # behind the API: one event per message, with who said it; recall finds the conversation
    events = memory.events(T, S)
    assert [(e.kind, e.actor, e.trust) for e in events] == [
        ("message", "user", "authenticated_user"),
        ("message", "assistant", "tool"),
        ("message", "user", "authenticated_user"),
        ("message", "assistant", "tool"),
        ("message", "user", "authenticated_user"),
        ("message", "assistant", "tool"),
        ("tool_result", "tool", "tool"),
        ("message", "assistant", "tool"),
    ]
    assert events[0].text == "I moved to Porto last spring." and events[5].text == 'recall({"query":"Porto"})'
    assert {e.payload["session"] for e in events} == {"chat-1"}
    assert "I moved to Porto last spring." in [e.text for e in memory.recall(T, S, query="Porto moved").events]


def test_clear_erases_one_conversation_and_leaves_the_others(memory):
    agent = Agent(FunctionModel(chatter))
    one = LossgateMessageHistory(memory, tenant_id=T, subject_id=S, conversation_id="one")
    two = LossgateMessageHistory(memory, tenant_id=T, subject_id=S, conversation_id="two")
    one.save(agent.run_sync("my badge is B-4471").new_messages())
    two.save(agent.run_sync("my seat is 14C").new_messages())
    one.clear()
    assert one.load() == []
    assert [p.content for m in two.load() for p in m.parts if isinstance(p, UserPromptPart)] == ["my seat is 14C"]
    assert all(e.text is None for e in memory.events(T, S, states=["deleted"]))
    assert len(memory.events(T, S, states=["deleted"])) == 2
    assert memory.recall(T, S, query="badge B-4471").events == ()


def test_a_message_deleted_in_lossgate_leaves_the_loaded_history(memory):
    history = LossgateMessageHistory(memory, tenant_id=T, subject_id=S, conversation_id="c")
    ids = history.save(Agent(FunctionModel(chatter)).run_sync("my passport is P-123").new_messages())
    memory.delete_event(T, S, ids[0], reason="erasure request")
    assert [type(m).__name__ for m in history.load()] == ["ModelResponse"]


def test_bad_input_is_refused_with_a_typed_error(memory):
    with pytest.raises(InvalidInput, match="non-empty"):
        LossgateMessageHistory(memory, tenant_id=T, subject_id=S, conversation_id="")
    with pytest.raises(InvalidInput, match="whitespace"):
        LossgateMessageHistory(memory, tenant_id=T, subject_id="user 17", conversation_id="c").load()
    with pytest.raises(InvalidInput, match="at least 0"):
        LossgateMessageHistory(memory, tenant_id=T, subject_id=S, conversation_id="c").load(limit=-1)
