"""``lossgate eval longmemeval`` on a small file in LongMemEval's published format
(``tests/data/longmemeval_mini.json``, written for these tests, not the real data).

The file has one question of each of the six types and one abstention question. Every
figure asserted is worked out here from the file itself, each resting on a precondition
the test checks first:

* every turn that shares a word with its question is in one of the question's answer
  sessions, and those sessions are small: BM25 ranks exactly those turns above the rest
  (no other turn scores), and lossgate's search finds no other turn, so both hand back
  every evidence turn within the budget;
* the most recent turns are taken by date, not by the file's order (the multi-session
  question lists its sessions out of order, as ``longmemeval_oracle.json`` does): what
  the recency baseline must return is computed from the dates in the file;
* the full history scores 1 at its own size: the sum of its turns' lines.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lossgate
from lossgate.cli import app
from lossgate.consolidate.tokens import default_counter
from lossgate.evaluation import longmemeval
from lossgate.model.wording import one_line
from lossgate.testing.chat_server import ScriptedChatServer
from lossgate.testing.embeddings import concept_embeddings
from tests.support.cli import one_line_error
from tests.support.stores import store_database

DATA = Path(__file__).resolve().parent / "data" / "longmemeval_mini.json"
BUDGET = 120
WORD = re.compile(r"\w+")
TYPES = {
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
}
runner = CliRunner(
    env={"FORCE_COLOR": None, "COLUMNS": None, "LOSSGATE_DB": None, "NO_COLOR": "1", "LOSSGATE_EMBEDDER": None}
)


def _raw() -> list[dict]:
    return json.loads(DATA.read_text())


def _run(tmp_path: Path, *more: str, data: Path = DATA, **env: str) -> dict:
    out = tmp_path / "report.json"
    result = runner.invoke(
        app,
        ["eval", "longmemeval", "--data", str(data), "--budget", str(BUDGET), "--json", str(out), *more],
        env=env or None,
    )
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert "session-level recall" in result.stdout and "turn-level recall" in result.stdout
    return json.loads(out.read_text())


def _turns(inst: dict) -> list[dict]:
    """Every turn of the haystack with its session id, date and line cost, in the file's order."""
    count = default_counter()
    out = []
    for sid, date, session in zip(
        inst["haystack_session_ids"], inst["haystack_dates"], inst["haystack_sessions"], strict=False
    ):
        at = datetime.strptime(date, "%Y/%m/%d (%a) %H:%M")
        for m, turn in enumerate(session):
            line = f"- {turn['role']}: {one_line(turn['content'])}"
            out.append(
                {
                    "session": sid,
                    "at": (at, m),
                    "evidence": turn.get("has_answer") is True,
                    "words": set(WORD.findall(turn["content"].lower())),
                    "cost": count(line) + 1,
                }
            )
    return out


def _recency(turns: list[dict], budget: int) -> list[dict]:
    """The most recent turns by date that the budget holds, a turn too big passed over."""
    chosen, used = [], 0
    for turn in sorted(turns, key=lambda t: t["at"], reverse=True):
        if used + turn["cost"] <= budget:
            chosen.append(turn)
            used += turn["cost"]
    return chosen


def _figures(inst: dict, chosen: list[dict]) -> tuple[float, float]:
    turns = _turns(inst)
    present = [sid for sid in inst["answer_session_ids"] if sid in inst["haystack_session_ids"]]
    sessions = {t["session"] for t in chosen}
    evidence = [t for t in turns if t["evidence"]]
    return (sum(sid in sessions for sid in present) / len(present), sum(t in chosen for t in evidence) / len(evidence))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(tmp_path_factory.mktemp("longmemeval"))


def test_the_report_has_every_type_overall_and_abstention_apart(report):
    raw = _raw()
    assert report["instances"] == len(raw) == 7 and report["budget_tokens"] == BUDGET
    assert set(report["sides"]) == {
        "lossgate",
        "lossgate, loss-blind",
        "bm25",
        "bm25 + role",
        "recency",
        "full context",
    }
    assert report["skipped"] == [] and report["embedder"] is None
    assert report["consolidations"] == {"published": 7}
    assert report["unmatched_answer_sessions"] == 1  # ms_hiking names answer_hike_3, which it does not hold
    for side, groups in report["sides"].items():
        assert set(groups) - {"dropped"} == TYPES | {"overall", "abstention"}, side
        for t in TYPES:
            assert groups[t]["questions"] == groups[t]["session_questions"] == groups[t]["turn_questions"] == 1
        assert groups["overall"]["questions"] == 6  # the abstention question is not in it
        abstention = groups["abstention"]
        assert (abstention["questions"], abstention["session_questions"], abstention["turn_questions"]) == (1, 1, 0)
        assert abstention["turn_recall"] is None  # it marks no turn has_answer


def test_a_question_whose_words_only_its_evidence_sessions_hold_is_found_by_lossgate_and_bm25(report):
    for inst in _raw():
        if inst["question_id"].endswith("_abs"):
            continue
        turns = _turns(inst)
        question = set(WORD.findall(inst["question"].lower()))
        sharing = [t for t in turns if t["words"] & question]
        assert {t["session"] for t in sharing} <= set(inst["answer_session_ids"]), inst["question_id"]
        assert all(t in sharing for t in turns if t["evidence"]), inst["question_id"]
        assert sum(t["cost"] for t in sharing) <= BUDGET // 2, inst["question_id"]  # room for context and headers
    for side in ("lossgate", "lossgate, loss-blind", "bm25", "bm25 + role", "full context"):
        for group in (*TYPES, "overall"):
            figures = report["sides"][side][group]
            assert (figures["session_recall"], figures["turn_recall"]) == (1.0, 1.0), (side, group)


def test_recency_takes_the_newest_turns_by_date_and_full_context_is_the_whole_history(report):
    sides = report["sides"]
    expected_overall = [0.0, 0.0]
    for inst in _raw():
        turns = _turns(inst)
        group = "abstention" if inst["question_id"].endswith("_abs") else inst["question_type"]
        assert sides["full context"][group]["tokens"] == sum(t["cost"] for t in turns)
        if group == "abstention":
            continue
        chosen = _recency(turns, BUDGET)
        session, turn = _figures(inst, chosen)
        recency = sides["recency"][group]
        assert (recency["session_recall"], recency["turn_recall"]) == (session, turn), group
        assert recency["tokens"] == sum(t["cost"] for t in chosen) <= BUDGET
        expected_overall[0] += session / 6
        expected_overall[1] += turn / 6
    # The multi-session question lists its newest session first: by date it is found, its oldest is not.
    assert (sides["recency"]["multi-session"]["session_recall"], sides["recency"]["multi-session"]["turn_recall"]) == (
        0.5,
        0.5,
    )
    assert sides["recency"]["overall"]["session_recall"] == pytest.approx(expected_overall[0])
    assert sides["recency"]["overall"]["turn_recall"] == pytest.approx(expected_overall[1])
    assert sides["recency"]["overall"]["session_recall"] < 1


def test_every_recall_and_baseline_keeps_to_the_budget_and_lossgate_is_timed(report):
    full = report["sides"]["full context"]["overall"]["tokens"]
    assert full > 2 * BUDGET
    for side, groups in report["sides"].items():
        overall = groups["overall"]
        assert overall["token_reduction"] == pytest.approx(1 - overall["tokens"] / full)
        if side != "full context":
            assert all(g["tokens"] <= BUDGET for g in groups.values()), side
    for side in ("lossgate", "lossgate, loss-blind", "bm25", "bm25 + role"):
        overall = report["sides"][side]["overall"]
        assert 0 < overall["p50_ms"] <= overall["p99_ms"], side
    assert report["sides"]["recency"]["overall"]["p50_ms"] is None  # not timed: nothing to search


def test_limit_takes_the_first_questions_and_a_store_given_twice_gives_the_same_figures(tmp_path):
    store = f"sqlite:///{tmp_path / 'lme.db'}"
    first = _run(tmp_path, "--limit", "2", "--store", store)
    again = _run(tmp_path, "--limit", "2", "--store", store)
    assert first["instances"] == again["instances"] == 2
    assert set(first["sides"]["lossgate"]) - {"dropped"} == {
        "single-session-user",
        "single-session-assistant",
        "overall",
    }
    assert first["sides"]["lossgate"]["overall"]["turn_recall"] == again["sides"]["lossgate"]["overall"]["turn_recall"]
    with lossgate.open(store) as memory:  # one subject per question, every turn an event
        for inst in _raw()[:2]:
            events = memory.events(longmemeval.TENANT, inst["question_id"])
            assert len(events) == sum(len(s) for s in inst["haystack_sessions"])


def test_on_postgresql_the_figures_are_the_same(tmp_path_factory, report):
    with store_database("postgres", tmp_path_factory, "longmemeval") as url:
        on_pg = _run(tmp_path_factory.mktemp("pg"), "--store", url)
    for side in ("bm25", "recency", "full context"):
        assert on_pg["sides"][side] == {
            g: {**f, "p50_ms": on_pg["sides"][side][g]["p50_ms"], "p99_ms": on_pg["sides"][side][g]["p99_ms"]}
            for g, f in report["sides"][side].items()
        }
    for group in (*TYPES, "overall"):
        figures = on_pg["sides"]["lossgate"][group]
        assert (figures["session_recall"], figures["turn_recall"]) == (1.0, 1.0), group


def _write(tmp_path: Path, data: list[dict]) -> Path:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    return path


def test_a_question_with_no_evidence_is_skipped_and_semantic_recall_finds_by_meaning(tmp_path):
    raw = _raw()
    kitten = raw[0]
    by_meaning = {**kitten, "question_id": "ssu_feline", "question": "What is my feline pet?"}
    assert not {"feline", "pet"} & set(WORD.findall(json.dumps(kitten["haystack_sessions"]).lower()))
    no_evidence = {
        **raw[1],
        "question_id": "ssa_none",
        "answer_session_ids": [],
        "haystack_sessions": [
            [{k: v for k, v in t.items() if k != "has_answer"} for t in s] for s in raw[1]["haystack_sessions"]
        ],
    }
    path = _write(tmp_path, [by_meaning, no_evidence])
    with ScriptedChatServer(default=concept_embeddings) as server:
        doc = _run(tmp_path, "--semantic", data=path, LOSSGATE_EMBEDDER=server.url, LOSSGATE_EMBEDDER_MODEL="concepts")
    assert doc["skipped"] == ["ssa_none"] and doc["embedder"] == "concepts"
    semantic = doc["sides"]["lossgate + semantic"]["single-session-user"]
    # "feline" and "kitten" are one concept of the scripted model: only the evidence turn holds it.
    assert (semantic["session_recall"], semantic["turn_recall"]) == (1.0, 1.0)
    assert doc["sides"]["lossgate + semantic"]["overall"]["questions"] == 1


def _broken(change) -> list[dict]:
    raw = _raw()
    change(raw)
    return raw


def _set(path: tuple, value):
    def change(raw: list) -> None:
        node = raw
        for key in path[:-1]:
            node = node[key]
        if value is KeyError:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "data, fragments",
    [
        ("[{", ["LongMemEval:", "is not JSON"]),
        ({"questions": []}, ["holds no list of question instances"]),
        ([], ["holds an empty list: no question instances to measure"]),
        ([1], ["instance 0 is a int, not an object"]),
        (
            _broken(_set((1, "haystack_dates"), KeyError)),
            ["instance 1 ('ssa_paprika'): haystack_dates: Field required"],
        ),
        (
            _broken(_set((2, "haystack_dates", 1), "last Tuesday")),
            ["instance 2 ('ssp_concert'): haystack_dates[1]: unreadable date 'last Tuesday'"],
        ),
        (
            _broken(_set((0, "question_date"), 20230520)),
            ["instance 0 ('ssu_kitten'): question_date: a date is a string"],
        ),
        (
            _broken(_set((0, "haystack_sessions", 1, 0, "role"), "system")),
            ["instance 0 ('ssu_kitten'): haystack_sessions[1][0].role:", "'user' or 'assistant'"],
        ),
        (
            _broken(_set((0, "haystack_sessions", 1, 0, "has_answer"), "yes")),
            ["instance 0 ('ssu_kitten'): haystack_sessions[1][0].has_answer:"],
        ),
        (
            _broken(_set((3, "haystack_sessions", 0, 0, "content"), 42)),
            ["instance 3 ('ms_hiking'): haystack_sessions[0][0].content:"],
        ),
        (
            _broken(_set((3, "haystack_sessions", 0, 0, "content"), "x" * 70_000)),
            ["instance 3 ('ms_hiking'): haystack_sessions[0][0].content:", "65536"],
        ),
        (
            _broken(lambda raw: raw[4]["haystack_session_ids"].pop()),
            ["instance 4 ('tr_toothbrush'):", "haystack_session_ids has 3 entries for 4 haystack_sessions"],
        ),
        (_broken(_set((5, "question_id"), "ssu_kitten")), ["instance 5 ('ssu_kitten'): question_id is given twice"]),
        (_broken(_set((5, "question_id"), "ku job")), ["instance 5 ('ku job'): question_id:"]),
        (_broken(_set((5, "question"), "   ")), ["instance 5 ('ku_job'): question: is blank"]),
        (
            _broken(_set((6, "answer_session_ids"), "answer_miso_1")),
            ["instance 6 ('ssu_puppy_abs'): answer_session_ids:"],
        ),
    ],
)
def test_a_malformed_file_is_refused_with_one_line_naming_the_instance_and_field(tmp_path, data, fragments):
    path = tmp_path / "bad.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    result = runner.invoke(app, ["eval", "longmemeval", "--data", str(path)])
    one_line_error(result, *fragments)


def test_a_missing_file_and_a_bad_budget_are_usage_errors(tmp_path):
    one_line_error(runner.invoke(app, ["eval", "longmemeval", "--data", str(tmp_path / "none.json")]), "--data")
    one_line_error(runner.invoke(app, ["eval", "longmemeval", "--data", str(DATA), "--budget", "10"]), "--budget")
    one_line_error(runner.invoke(app, ["eval", "longmemeval", "--data", str(DATA), "--limit", "0"]), "--limit")


def test_a_summary_line_two_sessions_hold_finds_the_turn_but_names_neither_session(tmp_path):
    line = {"role": "user", "content": "Thanks, that helps a lot."}
    inst = {
        "question_id": "ssu_shared",
        "question_type": "single-session-user",
        "question": "What about qwertyuiop?",
        "answer": "-",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["answer_shared_1", "sharegpt_other_0"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 10:00"],
        "haystack_sessions": [
            [{**line, "has_answer": True}],
            [{"role": "user", "content": "Saturn has over one hundred known moons."}, line],
        ],
        "answer_session_ids": ["answer_shared_1"],
    }
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    doc = _run(tmp_path, "--store", store, data=_write(tmp_path, [inst]))
    with lossgate.open(store) as memory:  # the precondition: no event comes back, the summary holds the line
        got = memory.recall(longmemeval.TENANT, "ssu_shared", query=inst["question"], budget=BUDGET)
    assert got.events == () and "- user: Thanks, that helps a lot." in (got.summary or "").splitlines()
    figures = doc["sides"]["lossgate"]["single-session-user"]
    assert (figures["session_recall"], figures["turn_recall"]) == (0.0, 1.0)


@pytest.mark.slow
def test_in_a_process_of_its_own_it_exits_0_on_the_file_and_2_with_one_line_on_a_broken_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("LOSSGATE_DB", "LOSSGATE_EMBEDDER", "FORCE_COLOR")}

    def lossgate_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "lossgate", "eval", "longmemeval", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
            env=env,
        )

    out = tmp_path / "r.json"
    done = lossgate_cli("--data", str(DATA), "--budget", str(BUDGET), "--limit", "3", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["instances"] == 3 and "turn-level recall" in done.stdout
    bad = _write(tmp_path, _broken(_set((2, "haystack_sessions", 0), "not a session")))
    refused = lossgate_cli("--data", str(bad))
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()]
    assert refused.stderr.startswith("error: LongMemEval: instance 2 ('ssp_concert'): haystack_sessions[0]:")
