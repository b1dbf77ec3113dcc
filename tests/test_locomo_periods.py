"""The LoCoMo period measurement (lossgate.evaluation.periods) on a small invented
conversation in LoCoMo's shape: four dated sessions, questions with evidence turns that
hold amounts, dates and identifiers. Each class an atom can land in is planted on purpose,
and the test checks the precondition (what the published summary holds, what a recall
returns) before the figure, so a change of the compressor or of recall fails loudly here
instead of silently moving an atom to another class."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lossgate
from lossgate.cli import app
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.consolidate.tokens import default_counter
from lossgate.evaluation import locomo, periods
from lossgate.model.registry import load_registry

PREDICATES = Path(__file__).resolve().parents[1] / "examples" / "predicates.toml"
T, S = locomo.TENANT, "conv-syn"
ALWAYS = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always"))


def _turn(speaker: str, dia_id: str, text: str) -> dict:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


def _data() -> list[dict]:
    return [
        {
            "sample_id": S,
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Ben",
                "session_1_date_time": "2:00 pm on 3 March, 2023",
                "session_1": [
                    _turn("Ann", "D1:1", "We paid $1,250 for the pottery kiln yesterday."),
                    _turn("Ben", "D1:2", "Nice, is it big?"),
                    _turn(
                        "Ann",
                        "D1:3",
                        "It is roomy enough for a whole shelf of bowls, and my glaze order ORD-58213 "
                        "ships on 12 June from the supplier in Leeds.",
                    ),
                ],
                "session_2_date_time": "10:00 am on 20 April, 2023",
                "session_2": [
                    _turn(
                        "Ben",
                        "D2:1",
                        "Guess what, I start the new job at the harbour laboratory next Monday, after "
                        "weeks of waiting and worrying about it all.",
                    ),
                    _turn("Ann", "D2:2", "Congratulations, that is wonderful news for you and the family!"),
                    _turn(
                        "Ben",
                        "D2:3",
                        "Thanks! The commute is 45 minutes each way, which is long, but the team "
                        "seemed kind and the work sounds interesting to me.",
                    ),
                ],
                "session_3_date_time": "6:30 pm on 2 May, 2023",
                "session_3": [
                    _turn("Ann", "D3:1", "How was the first week?"),
                    _turn("Ben", "D3:2", "Tiring. My badge number is HL-7731 and I keep forgetting it at home."),
                    _turn("Ann", "D3:3", "Ha, keep it on your keyring."),
                ],
                "session_4_date_time": "9:15 am on 14 May, 2023",
                "session_4": [
                    _turn(
                        "Ann",
                        "D4:1",
                        "I fired the second batch of mugs yesterday, and honestly the glaze looked "
                        "much better than the first batch did.",
                    ),
                    _turn(
                        "Ben",
                        "D4:2",
                        "The kiln bowls came out great yesterday, they sold for 30 euros each at the fair.",
                    ),
                    _turn("Ann", "D4:3", "Amazing, see you soon."),
                ],
            },
            "qa": [
                {
                    "question": "How much did Ann pay for the pottery kiln?",
                    "answer": "$1,250",
                    "evidence": ["D1:1"],
                    "category": 4,
                },
                {
                    "question": "When does Ann's glaze order ship?",
                    "answer": "12 June",
                    "evidence": ["D1:3"],
                    "category": 2,
                },
                # no word of this question is in the conversation: only the atom's own text finds the turn
                {
                    "question": "When does the employment commence?",
                    "answer": "24 April",
                    "evidence": ["D2:1"],
                    "category": 2,
                },
                {
                    "question": "When did Ann fire the second batch?",
                    "answer": "13 May",
                    "evidence": ["D4:1"],
                    "category": 2,
                },
                # D9:9 names no turn (LoCoMo has a few such ids): left out, D3:2 stays
                {
                    "question": "What is Ben's badge number?",
                    "answer": "HL-7731",
                    "evidence": ["D3:2", "D9:9"],
                    "category": 4,
                },
                {"question": "Left out: no evidence names a turn", "evidence": ["D7:7"], "category": 4},
            ],
        }
    ]


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(_data()))
    return path


@pytest.fixture
def memory(tmp_path: Path):
    mem = lossgate.open("sqlite:///" + str(tmp_path / "x.db"))
    mem.admin.load_predicates(load_registry(PREDICATES))
    yield mem
    mem.close()


def _root_summary(memory: lossgate.Memory) -> str:
    return memory.admin.artifact(T, S, memory.admin.alias(T, S).artifact_id).body.summary


def _line(convs: list[locomo.Conversation], dia_id: str) -> str:
    return next(t.line for t in convs[0].turns if t.dia_id == dia_id)


def _found(report: periods.PeriodsReport) -> dict[tuple[str, str], tuple[str, str | None]]:
    return {(o.dia_id, o.key): (o.found, o.path) for o in report.occurrences}


def test_every_class_of_evidence_atom_is_counted_where_it_is_found(memory, data_file):
    convs, _ = locomo.load(data_file)
    # The badge turn is revoked before consolidation: no digest and no recall may return it.
    locomo.ingest(memory, convs[0])
    memory.revoke_event(T, S, f"{S}:D3:2", reason="test: an atom nothing can reach")
    report = periods.measure(memory, convs, config=ALWAYS)
    summary = _root_summary(memory)
    lines = summary.split("\n")
    doc = report.to_json()
    conv = doc["conversations"][0]

    # Every session has its digest under its own date; ingest again was idempotent.
    assert conv["hierarchical"] and conv["path"] == "hierarchical" and conv["parts"] == 4
    assert [ln for ln in lines if ln.startswith("[")] == [
        "[2023-03-03]",
        "[2023-04-20]",
        "[2023-05-02]",
        "[2023-05-14]",
    ]
    assert (conv["sessions"], conv["sessions_covered"], conv["missing_sessions"]) == (4, 4, {})
    assert conv["misaligned"] == []

    # Tokens: the turns' lines against the root's whole summary, one counter.
    count = default_counter()
    raw = sum(count(t.line) + 1 for t in convs[0].turns)
    assert conv["raw_tokens"] == raw and conv["published_tokens"] == count(summary)
    assert conv["reduction"] == pytest.approx(1 - count(summary) / raw)
    assert doc["overall"]["reduction"] == pytest.approx(conv["reduction"])

    # The preconditions of each planted class, read from the summary and from recall itself.
    assert _line(convs, "D1:1") in lines  # kept in its period's digest
    assert _line(convs, "D1:3") not in lines  # dropped from the digest...
    asked = memory.recall(T, S, query="When does Ann's glaze order ship?", budget=2000)
    assert f"{S}:D1:3" in {e.event_id for e in asked.events}  # ...and handed back by its question
    assert _line(convs, "D2:1") not in lines
    asked = memory.recall(T, S, query="When does the employment commence?", budget=2000)
    assert f"{S}:D2:1" not in {e.event_id for e in asked.events}  # its question finds nothing...
    assert f"{S}:D2:1" in {e.event_id for e in memory.recall(T, S, query="next Monday", budget=2000).events}
    assert _line(convs, "D4:1") not in lines  # its date is in the digest, said by another turn
    assert _line(convs, "D4:2") in lines and "yesterday" in _line(convs, "D4:2")

    assert _found(report) == {
        ("D1:1", "USD 1250"): ("digest", "line"),
        ("D1:1", "2023-03-02"): ("digest", "line"),  # "yesterday", read against the turn's own time
        ("D1:3", "ORD-58213"): ("question", "event"),
        ("D1:3", "2023-06-12"): ("question", "event"),
        ("D2:1", "2023-04-24"): ("atom", None),  # "next Monday" after Thursday 20 April
        ("D4:1", "2023-05-13"): ("digest", "key"),
        ("D3:2", "HL-7731"): ("unreachable", None),
    }
    atoms = conv["atoms"]
    assert (atoms["atoms"], atoms["digest"], atoms["question"], atoms["atom"], atoms["unreachable"]) == (7, 3, 2, 1, 1)
    assert (atoms["digest_by_line"], atoms["digest_by_key"], atoms["question_by_event"]) == (2, 1, 2)
    assert atoms["reachable_share"] == pytest.approx(6 / 7)
    assert doc["by_kind"]["identifier"]["unreachable"] == 1 and doc["by_kind"]["money"]["digest"] == 1
    assert doc["by_category"]["temporal"]["atoms"] == 4 and doc["by_category"]["single-hop"]["atoms"] == 3
    assert conv["questions"] == 5  # the question whose evidence names no turn is left out
    assert doc["unreachable_examples"] == [
        {
            "sample_id": S,
            "dia_id": "D3:2",
            "session": "3",
            "category": 4,
            "question": "What is Ben's badge number?",
            "kind": "identifier",
            "text": "HL-7731",
            "key": "HL-7731",
        }
    ]
    assert doc["requirements"] == {
        "all_hierarchical": True,
        "every_session_covered": True,
        "reduction_at_least_80pct_each": False,
        "every_atom_reachable": False,
    }
    # recalls only where the digest lacks the atom: three questions, two atom texts; all on the fresh root
    assert conv["recall_modes"] == {"summary": 5}


def test_only_the_kinds_asked_for_are_counted(memory, data_file):
    convs, _ = locomo.load(data_file)
    report = periods.measure(memory, convs, config=ALWAYS, kinds=("money",))
    assert {(o.dia_id, o.key) for o in report.occurrences} == {("D1:1", "USD 1250")}
    assert report.to_json()["kinds"] == ["money"]


def test_a_memory_that_did_not_go_hierarchical_covers_no_session(memory, data_file):
    """The default (auto) keeps this small conversation in one pass: reported, not assumed."""
    convs, _ = locomo.load(data_file)
    report = periods.measure(memory, convs)
    doc = report.to_json()
    conv = doc["conversations"][0]
    assert conv["status"] == "published" and conv["path"] != "hierarchical" and conv["parts"] == 0
    assert conv["sessions_covered"] == 0
    assert set(conv["missing_sessions"]) == {"1", "2", "3", "4"}
    assert conv["missing_sessions"]["2"] == "[2023-04-20]"
    assert doc["requirements"]["all_hierarchical"] is False
    assert doc["requirements"]["every_session_covered"] is False
    # No period digest: no atom counts as kept in one, whatever the one-pass summary holds.
    assert report.occurrences and not any(o.found == "digest" for o in report.occurrences)
    assert _line(convs, "D1:1") in _root_summary(memory).split("\n")


def test_digests_are_matched_to_sessions_by_their_parts():
    from datetime import datetime

    day = lambda d, h=12: datetime(2023, 5, d, h, tzinfo=UTC)  # noqa: E731
    summary = "\n".join(
        [
            "Memory of c (tenant t).",
            "Periods:",
            "[2023-05-01]",
            "- A: one",
            "[2023-05-01]",
            "- A: one more",
            "[2023-05-02]",
            "- B: two",
            "[2023-05-09]",
        ]
    )
    parts = [
        ("session 1", day(1), day(1)),
        ("session 1 #2", day(1, 13), day(1, 14)),
        ("session 2", day(2), day(2)),
        ("session 3", day(9), day(9)),
    ]
    found = periods.session_digests(summary, parts)
    assert found.misaligned == ()
    assert found.digests == {
        "1": [("[2023-05-01]", ["- A: one"]), ("[2023-05-01]", ["- A: one more"])],
        "2": [("[2023-05-02]", ["- B: two"])],
        "3": [("[2023-05-09]", [])],
    }
    # A digest titled with another date than its part's is not that session's.
    wrong = periods.session_digests(summary.replace("[2023-05-02]", "[2023-05-03]"), parts)
    assert "2" not in wrong.digests and any("session 2" in m for m in wrong.misaligned)
    # A part missing from the summary is reported.
    short = periods.session_digests(summary.rsplit("\n", 1)[0], parts)
    assert "3" not in short.digests
    assert short.misaligned[0] == "3 period digests in the summary, 4 parts in the manifest"
    assert periods.period_blocks("Memory of c.\nConversation:\n- A: hi") == []


def test_a_session_is_covered_only_under_its_own_date():
    from datetime import datetime

    turns = [
        locomo.Turn("D1:1", "A", "one", datetime(2023, 5, 1, 23, 59, 59, tzinfo=UTC), 1),
        locomo.Turn("D2:1", "B", "two", datetime(2023, 5, 2, 9, tzinfo=UTC), 2),
        locomo.Turn("D3:1", "A", "three", datetime(2023, 5, 9, 9, tzinfo=UTC), 3),
    ]
    coverage = periods.SessionCoverage(
        digests={"1": [("[2023-05-01]", ["- A: one"])], "2": [("[2023-05-03]", ["- B: two"])]}
    )
    sessions, covered = periods.covered_sessions(turns, coverage)
    assert sessions == {"1": "[2023-05-01]", "2": "[2023-05-02]", "3": "[2023-05-09]"}
    assert covered == ["1"]  # session 2's digest is dated another day; session 3 has none


def test_eval_locomo_periods_from_the_cli(data_file, tmp_path):
    out = tmp_path / "periods.json"
    result = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}).invoke(
        app, ["eval", "locomo", "--data", str(data_file), "--periods", "--hierarchy", "always", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "published memory by period" in result.output and "conv-syn" in result.output
    assert "every atom reachable: yes" in result.output  # no turn is revoked here
    doc = json.loads(out.read_text())
    assert doc["overall"]["sessions_covered"] == 4 and doc["overall"]["hierarchical"] == 1
    assert doc["budget_tokens"] == 2000 and doc["overall"]["atoms"]["unreachable"] == 0
    assert (
        CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
        .invoke(app, ["eval", "locomo", "--data", str(tmp_path / "absent.json"), "--periods"])
        .exit_code
        == 2
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    assert (
        CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
        .invoke(app, ["eval", "locomo", "--data", str(bad), "--periods"])
        .exit_code
        == 2
    )
    refused = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}).invoke(
        app, ["eval", "locomo", "--data", str(data_file), "--periods", "--hierarchy", "sometimes"]
    )
    assert refused.exit_code == 2 and "hierarchy mode" in refused.output
