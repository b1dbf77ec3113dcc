"""``examples/agent.py``, run as a user runs it, on each store: what it prints, and what it
left in memory (the events, the fact, the refused and the allowed guard results, the
responses tied to them, the published summary the second recall read)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import lossgate

AGENT = Path(__file__).resolve().parents[2] / "examples" / "agent.py"
T, S = "travel-co", "ana"


def run_agent(store_url: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(AGENT), store_url], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_agent_remembers_recalls_is_refused_by_the_guard_and_recovers(store_url, tmp_path):
    out = run_agent(store_url, tmp_path).splitlines()
    assert (
        " guard: refused chicken satay (chicken, satay sauce): items[0].ingredients[1] names 'satay', which "
        "food.peanuts_allowed: false (basis=allergy, severity=critical) forbids" in out
    )
    assert " guard: allowed green curry (chicken, coconut milk, thai basil)" in out
    assert out[-1] == " agent: The satay comes with peanut sauce, so I ordered the green curry."
    assert "memory: consolidated: published (gate clean)" in out
    assert all(p.name.startswith("conformance.db") for p in tmp_path.iterdir())  # nothing but the database

    memory = lossgate.open(store_url)
    try:
        assert [e.event_id for e in memory.events(T, S)] == ["msg-1", "msg-2"]
        (fact,) = memory.facts(T, S)
        assert (fact.predicate, fact.value, fact.source_event_ids) == ("food.peanuts_allowed", False, ("msg-1",))
        allowed, refused = memory.admin.guard_results(T, S)  # newest first
        assert not refused.allowed and refused.refusals[0].fact_id == fact.fact_id
        assert refused.refusals[0].field == "items[0].ingredients[1]" and refused.refusals[0].value == "satay sauce"
        assert allowed.allowed and allowed.action["items"][0]["dish"] == "green curry"
        assert allowed.recall_id == refused.recall_id  # both proposals answered the same recall
        ordered, noted = memory.admin.responses(T, S)  # newest first
        assert (ordered.guard_id, ordered.action, ordered.recall_id) == (
            allowed.guard_id,
            allowed.action,
            allowed.recall_id,
        )
        assert noted.action is None and noted.answer == "Noted: no peanuts for you, ever."
        (attempt,) = memory.admin.attempts(T, S)
        assert attempt.status == "published"
        second, first = memory.admin.recalls(T, S)[:2]  # newest first
        assert (first.mode, second.mode) == ("raw_fallback", "summary")  # the summary published between them
    finally:
        memory.close()


@pytest.mark.slow
def test_run_again_the_agent_remembers_what_it_was_told(store_url, tmp_path):
    run_agent(store_url, tmp_path)
    again = run_agent(store_url, tmp_path).splitlines()
    assert "memory: already knows food.peanuts_allowed = false" in again  # from the first run
    memory = lossgate.open(store_url)
    try:
        assert [e.event_id for e in memory.events(T, S)] == ["msg-1", "msg-2", "msg-3", "msg-4"]
        assert len(memory.facts(T, S)) == 1
    finally:
        memory.close()
