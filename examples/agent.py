"""An agent with lossgate as its long-term memory: it remembers, recalls before it answers,
is refused by the guard, and recovers.

    python examples/agent.py [DB_URL]   # default: a new SQLite file in a temporary folder

The agent is a small loop around a model it reaches over HTTP with the OpenAI chat
completions protocol. The model here is a scripted OpenAI-compatible server on loopback,
started by this file (``lossgate.testing.chat_server``): no model, key or network is needed,
and its answers are canned (it reads the agent's request and answers as a model might,
mistakes included). For each message the agent

1. remembers it: the message is appended as a raw event, and the facts the model finds in
   it are asserted in the typed ledger, each citing that event;
2. recalls before it answers: ``Memory.recall`` with the message as the query, its rendered
   block handed to the model;
3. checks what the model proposes to do: ``Memory.guard`` reads the action against the
   ledger (here: an order with satay sauce for a user whose ``food.peanuts_allowed`` is
   false) and refuses it, naming the fact;
4. recovers: it tells the model why and asks again, at most three times, and records what
   it finally said and did with ``Memory.respond``.

Between the two messages the agent consolidates (``Memory.consolidate``): the summary is
published only if the gate finds nothing lost, and the second recall reads it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.testing.chat_server import Reply, ScriptedChatServer, completion

REGISTRY = Path(__file__).resolve().parent / "predicates.toml"
TENANT, SUBJECT = "travel-co", "ana"
TRIES = 3  # proposals the agent asks for before it gives up on an action

SYSTEM = (
    "You are a travel assistant. Each request is a JSON object. For task 'facts', answer "
    '{"facts": [{"predicate", "value", "qualifiers"}]} with what the message states, using only the '
    'predicates listed. For task \'answer\', answer {"reply": text, "action": object or null}; '
    "'memory' is what you know about the user, 'refused' why earlier actions were refused."
)


class Model:
    """A chat-completions client: one JSON request in, one JSON answer out."""

    def __init__(self, base_url: str, model: str = "scripted-model") -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.model = model

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(
            "/chat/completions",
            json={
                "model": self.model,
                "response_format": {"type": "json_object"},
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": json.dumps(request)}],
            },
        )
        response.raise_for_status()
        answer: dict[str, Any] = json.loads(response.json()["choices"][0]["message"]["content"])
        return answer

    def close(self) -> None:
        self.http.close()


class Agent:
    def __init__(self, memory: lossgate.Memory, model: Model) -> None:
        self.memory, self.model = memory, model

    def hear(self, text: str) -> str:
        """One turn: remember the message, recall, answer, guard the action, record the response."""
        # 1. Remember: the message is a raw event; what the model finds in it becomes facts citing it.
        event_id = f"msg-{len(self.memory.events(TENANT, SUBJECT)) + 1}"
        self.memory.append([NewEvent(tenant_id=TENANT, subject_id=SUBJECT, event_id=event_id, text=text)])
        found = self.model.ask({"task": "facts", "message": text, "predicates": self.predicates()})
        for i, fact in enumerate(found["facts"], 1):
            known = self.memory.facts(TENANT, SUBJECT, predicate=fact["predicate"])
            if any(f.value == fact["value"] for f in known):
                say("memory", f"already knows {fact['predicate']} = {json.dumps(fact['value'])}")
                continue
            self.memory.assert_fact(
                NewFact(
                    tenant_id=TENANT,
                    subject_id=SUBJECT,
                    fact_id=f"{event_id}-fact-{i}",
                    predicate=fact["predicate"],
                    value=fact["value"],
                    qualifiers=fact.get("qualifiers", {}),
                    source_event_ids=[event_id],
                )
            )
            say("memory", f"asserted {fact['predicate']} = {json.dumps(fact['value'])}, from {event_id}")

        # 2. Recall before answering: the block the model reads, and the record the guard ties to.
        recalled = self.memory.recall(TENANT, SUBJECT, query=text, budget=1500)
        say(
            "memory",
            f"recall ({recalled.mode}): " + "; ".join(f"{f.predicate} = {json.dumps(f.value)}" for f in recalled.facts),
        )
        recall_id = recalled.record.recall_id

        # 3. and 4. Answer; an action goes through the guard first, and a refusal goes back to the model.
        refused: list[str] = []
        for _ in range(TRIES):
            answer = self.model.ask(
                {"task": "answer", "message": text, "memory": recalled.render(), "refused": refused}
            )
            action = answer.get("action")
            if action is None:
                self.memory.respond(TENANT, SUBJECT, recall_id, answer=answer["reply"])
                return str(answer["reply"])
            checked = self.memory.guard(TENANT, SUBJECT, action, recall_id=recall_id)
            if checked.allowed:
                say("guard", f"allowed {describe(action)}")
                self.memory.respond(
                    TENANT, SUBJECT, recall_id, answer=answer["reply"], action=action, guard_id=checked.guard_id
                )
                return str(answer["reply"])
            refused += [r.detail for r in checked.refusals]
            say("guard", f"refused {describe(action)}: {checked.refusals[0].detail}")
        reply = "I could not find an order your memory allows; please choose one yourself."
        self.memory.respond(TENANT, SUBJECT, recall_id, answer=reply)
        return reply

    def rest(self) -> None:
        """Between sessions: consolidate; the gate publishes the summary only if nothing was lost."""
        attempt = self.memory.consolidate(TENANT, SUBJECT)
        say("memory", f"consolidated: {attempt.status} (gate {attempt.gate_outcome})")

    def predicates(self) -> list[str]:
        registry = self.memory.admin.registry
        return sorted(registry.predicates) if registry else []


def describe(action: dict[str, Any]) -> str:
    return ", ".join(f"{item['dish']} ({', '.join(item['ingredients'])})" for item in action["items"])


def say(who: str, text: str) -> None:
    print(f"{who:>6}: {text}")


# -- the scripted model ----------------------------------------------------------------------

SATAY = {
    "restaurant": "Bangkok Garden",
    "items": [{"dish": "chicken satay", "ingredients": ["chicken", "satay sauce"]}],
}
CURRY = {
    "restaurant": "Bangkok Garden",
    "items": [{"dish": "green curry", "ingredients": ["chicken", "coconut milk", "thai basil"]}],
}


def scripted_model(body: dict[str, Any]) -> Reply:
    """Stands in for the model: it reads the agent's request and answers with JSON. Like a
    real model it can get things wrong: asked for dinner, it first orders what the user named."""
    request = json.loads(body["messages"][-1]["content"])
    said = request["message"].lower()
    if request["task"] == "facts":
        facts = (
            [
                {
                    "predicate": "food.peanuts_allowed",
                    "value": False,
                    "qualifiers": {"basis": "allergy", "severity": "critical"},
                }
            ]
            if "allergic to peanuts" in said
            else []
        )
        return completion(json.dumps({"facts": facts}))
    if "order" not in said:
        return completion(json.dumps({"reply": "Noted: no peanuts for you, ever.", "action": None}))
    if not request["refused"]:
        return completion(json.dumps({"reply": "I ordered the chicken satay.", "action": SATAY}))
    return completion(
        json.dumps({"reply": "The satay comes with peanut sauce, so I ordered the green curry.", "action": CURRY})
    )


def main(db_url: str) -> None:
    memory = lossgate.open(db_url)
    memory.admin.load_predicates(REGISTRY)
    with ScriptedChatServer(default=scripted_model) as server:
        model = Model(server.url)
        agent = Agent(memory, model)
        try:
            for turn, message in enumerate(
                [
                    "Hi! I am allergic to peanuts, not merely avoiding them.",
                    "Please order me dinner from Bangkok Garden: the chicken satay.",
                ]
            ):
                if turn:
                    agent.rest()
                say("user", message)
                say("agent", agent.hear(message))
        finally:
            model.close()
            memory.close()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory(prefix="lossgate-agent-") as folder:
            main(f"sqlite:///{Path(folder) / 'agent.db'}")
