"""The narrative lane: the fence on sentences written by hand, by people who never read it. Faithful ones must publish; the fence alone catches a share of the wrong ones, and
the rest are for a model judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lossgate.errors import InvalidInput
from lossgate.evaluation.narratives import CORPORA, load_corpus, run_corpus
from tests.support.cli import run

SHIPPED = sorted(CORPORA.glob("*.jsonl"))


def test_the_shipped_corpora_are_there() -> None:
    assert {p.name for p in SHIPPED} >= {"dev.jsonl", "heldout.jsonl", "test.jsonl", "final.jsonl", "unseen.jsonl"}
    for path in SHIPPED:
        labels = {i.label for i in load_corpus(path)}
        assert labels == {"faithful", "wrong"}, path


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_fence_refuses_at_most_two_percent_of_faithful_sentences(path: Path) -> None:
    report = run_corpus(path)
    assert report.faithful >= 150
    assert report.false_alarm_rate <= 0.02, [f"{i.case}: {i.sentence} -- {why}" for i, why in report.false_alarms]
    # ... and is not blind: it refuses a share of the wrong ones on its own
    assert report.catch_rate >= 0.30, report.catch_rate
    # every wrong sentence the fence refuses, the gate refuses
    assert report.gate_catch_rate >= report.catch_rate


BLIND = sorted((CORPORA.parent / "blind").glob("*.jsonl"))


@pytest.mark.slow
@pytest.mark.parametrize("path", [*SHIPPED, *BLIND], ids=lambda p: p.name)
def test_few_wrong_sentences_reach_what_an_agent_reads(path: Path) -> None:
    """Written as a model's narrative and published under the omit policy, a wrong sentence is
    left out (it touches a topic the ledger states, or the gate refuses it for what it says);
    none of the shipped corpora's reaches recall, against 35-50 % of them that the gate passed
    when it judged them as prose (the blind corpora: one sentence of 400 and two of 340, small
    talk no fact holds, such as a half marathon for a 12 km run). A faithful sentence stays only where it
    says its fact in the ledger's terms, and none refuses its summary; where it is left out, the
    ledger's line for what it said takes its place for at least 80 % of them."""
    report = run_corpus(path)
    most = 0.015 if path in BLIND else 0.0
    assert report.reach_rate <= most, [f"{i.case}: {i.sentence}" for i in report.reached]
    assert not report.refused["faithful"], "under omit, a faithful sentence never refuses its summary"
    assert report.kept_rate >= 0.05, report.kept_rate
    assert report.spoken["faithful"] <= report.omitted["faithful"] and report.in_place_rate >= 0.8
    counted = len(report.reached) + report.omitted["wrong"] + report.refused["wrong"]
    assert (
        counted == report.wrong
        and report.kept + report.omitted["faithful"] + report.refused["faithful"] == report.faithful
    )


def _corpus(tmp_path: Path, *lines: dict[str, str]) -> Path:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_mislabelled_contradiction_counts_as_a_false_alarm_and_fails_the_command(tmp_path: Path) -> None:
    path = _corpus(
        tmp_path,
        {"case": "reference-peanut-allergy", "sentence": "They can eat peanuts now.", "label": "faithful"},
        {"case": "reference-peanut-allergy", "sentence": "Never serve the user peanuts.", "label": "faithful"},
        {
            "case": "reference-peanut-allergy",
            "sentence": "The user wants a peanut dressing.",
            "label": "wrong",
            "kind": "contradiction",
        },
    )
    report = run_corpus(path)
    assert (report.faithful, len(report.false_alarms), report.wrong, len(report.misses)) == (2, 1, 1, 0)
    assert run("eval", "narratives", "--corpus", str(path)).exit_code == 1
    assert run("eval", "narratives", "--corpus", str(path), "--max-false-alarms", "0.5").exit_code == 0
    doc = json.loads(run("eval", "narratives", "--corpus", str(path), "--json", "--max-false-alarms", "1").stdout)
    assert doc[0]["false_alarms"][0]["sentence"] == "They can eat peanuts now."


@pytest.mark.slow
def test_the_command_on_the_shipped_corpora_passes() -> None:
    result = run("eval", "narratives")
    assert result.exit_code == 0, result.output
    assert "heldout.jsonl" in result.stdout


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"case": "reference-peanut-allergy", "sentence": "x"}', "not a narrative item"),
        ('{"case": "reference-peanut-allergy", "sentence": "x", "label": "maybe"}', "label must be one of"),
        ("not json", "not a narrative item"),
        ('{"case": "no-such-case", "sentence": "x", "label": "wrong"}', "no shipped gate case"),
    ],
)
def test_a_bad_corpus_is_a_clear_error(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    _refused(path, message)


def test_a_missing_or_empty_corpus_is_a_clear_error(tmp_path: Path) -> None:
    _refused(tmp_path / "nope.jsonl", "cannot read the corpus")
    (tmp_path / "empty.jsonl").write_text("\n")
    _refused(tmp_path / "empty.jsonl", "no sentence in the corpus")


def test_a_wrong_sentence_reaching_recall_fails_the_command(tmp_path: Path) -> None:
    # small talk no fact holds, told the other way: nothing the ledger states, so it stays
    said = "By the way, they ran a half marathon."
    path = _corpus(tmp_path, {"case": "chatter-acceptable-loss", "sentence": said, "label": "wrong"})
    assert [i.sentence for i in run_corpus(path).reached] == [said]
    assert run("eval", "narratives", "--corpus", str(path)).exit_code == 1
    assert run("eval", "narratives", "--corpus", str(path), "--max-reach", "1").exit_code == 0


def _refused(path: Path, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        run_corpus(path)
    result = run("eval", "narratives", "--corpus", str(path))
    assert result.exit_code == 2 and message in result.output
