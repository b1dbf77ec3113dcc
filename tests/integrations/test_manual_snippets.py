"""The manual's integration snippets (docs/integrations.md), run as they are written there:
each is the python block after its ``<!-- snippet: integrations/NAME -->`` marker, run by a
fresh interpreter in a directory of its own, its model a scripted OpenAI-compatible server on
loopback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lossgate.testing.chat_server import Reply, ScriptedChatServer, completion, tool_call

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- snippet: integrations/([a-z-]+) -->\n```python\n(.*?)\n```", re.S)


def snippets() -> dict[str, str]:
    return dict(MARKER.findall((ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")))


def run(name: str, tmp_path: Path, **env: str) -> list[str]:
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "predicates.toml", tmp_path / "examples")
    script = tmp_path / "snippet.py"  # not the framework's name, which the script's folder would shadow
    script.write_text(snippets()[name], encoding="utf-8")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": path, **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_the_manual_has_a_snippet_for_each_integration():
    assert sorted(snippets()) == ["langgraph", "openai-agents", "pydantic-ai"]


@pytest.mark.slow
def test_the_langgraph_snippet(tmp_path):
    assert run("langgraph", tmp_path) == ["['Always an aisle seat on long flights.']", "None"]


def recalls_then_answers(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    if last["role"] != "tool":
        return tool_call("recall", {"query": "seat"})
    said = [line.removeprefix("- user: ") for line in last["content"].splitlines() if "aisle" in line]
    return completion(f"You book: {said[0] if said else 'no idea'}")


@pytest.mark.slow
def test_the_openai_agents_snippet(tmp_path):
    with ScriptedChatServer(default=recalls_then_answers) as server:
        out = run("openai-agents", tmp_path, LLM_URL=server.url, LLM_MODEL="scripted")
    assert out == [
        "You book: I always book an aisle seat.",
        "['message', 'function_call', 'function_call_output', 'message']",
    ]
    assert len(server.requests) == 2 and server.requests[0]["model"] == "scripted"


def recalls_guards_then_answers(body: dict[str, Any]) -> Reply:
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user":
        return tool_call("recall", {"query": "peanuts satay"})
    called = messages[-2]["tool_calls"][0]["function"]["name"]
    answer = json.loads(last["content"])
    if called == "recall":
        order = {"items": [{"dish": "chicken satay", "ingredients": ["chicken", "satay sauce"]}]}
        return tool_call("guard", {"action": order, "recall_id": answer["recall_id"]}, call_id="call-2")
    return completion("Ordered." if answer["allowed"] else f"Not ordered: {answer['refusals'][0]['detail']}")


@pytest.mark.slow
def test_the_pydantic_ai_snippet(tmp_path):
    with ScriptedChatServer(default=recalls_guards_then_answers) as server:
        out = run("pydantic-ai", tmp_path, LLM_URL=server.url, LLM_MODEL="scripted")
    assert out == [
        "Not ordered: items[0].ingredients[1] names 'satay', which food.peanuts_allowed: false "
        "(basis=allergy, severity=critical) forbids",
        "False",
    ]
    assert len(server.requests) == 3
