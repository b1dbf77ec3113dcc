"""``lossgate check FILE.json`` and ``lossgate eval mutations``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from lossgate.cli.gate import SUCCESS
from tests.support.cli import run
from tests.support.gate import CASES, FIXTURES

CONTRACT = FIXTURES / "contract"
ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, doc: object, name: str = "f.json") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(path)


def ok_doc() -> dict:
    return json.loads((CONTRACT / "allergy-ok.json").read_text())


def test_success_exits_0_with_the_message() -> None:
    result = run("check", str(CONTRACT / "allergy-ok.json"))
    assert result.exit_code == 0
    assert result.stdout == SUCCESS + "\n"


def test_violations_exit_1_one_per_line_in_a_stable_order(tmp_path: Path) -> None:
    result = run("check", str(CONTRACT / "allergy-mutated.json"))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "fact-allergy-1:value_changed",
        "fact-allergy-1:qualifiers_changed",
        "fact-allergy-1:provenance_missing",
    ]
    doc = json.loads((CONTRACT / "allergy-mutated.json").read_text())
    doc["expected"].reverse()
    doc["artifact"]["facts"][0] = dict(reversed(list(doc["artifact"]["facts"][0].items())))
    assert run("check", write(tmp_path, doc)).stdout == result.stdout


def test_timezone_fixture() -> None:
    result = run("check", str(CONTRACT / "timezone-stale.json"))
    assert (result.exit_code, result.stdout) == (1, "timezone-v1:forbidden_superseded_fact\n")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: "{not json", "is not JSON"),
        (lambda d: "", "is not JSON"),
        (lambda d: [d], "not a fact-contract fixture"),
        (lambda d: {k: v for k, v in d.items() if k != "artifact"}, "fixture: missing key 'artifact'"),
        (
            lambda d: {**d, "artifact": {k: v for k, v in d["artifact"].items() if k != "memory_version"}},
            "artifact: missing key 'memory_version'",
        ),
        (lambda d: {**d, "expected": [{**d["expected"][0], "status": "archived"}]}, "unknown status 'archived'"),
        (
            lambda d: {**d, "expected": [{k: v for k, v in d["expected"][0].items() if k != "fact_id"}]},
            "expected[0]: missing key 'fact_id'",
        ),
        (
            lambda d: {**d, "artifact": {**d["artifact"], "memory_version": "8"}},
            "artifact.memory_version: expected a JSON integer, got string",
        ),
        (lambda d: {**d, "artifact": {**d["artifact"], "memory_version": True}}, "expected a JSON integer, got bool"),
        (lambda d: {**d, "artifact": {**d["artifact"], "facts": {}}}, "artifact.facts: expected a JSON array"),
        (
            lambda d: {**d, "expected": [{**d["expected"][0], "qualifiers": {"basis": 1}}]},
            "expected[0].qualifiers.basis: expected a JSON string, got int",
        ),
        (
            lambda d: {
                **d,
                "artifact": {**d["artifact"], "facts": [{**d["artifact"]["facts"][0], "source_event_ids": "event-41"}]},
            },
            "source_event_ids: expected a JSON array",
        ),
        (lambda d: '{"expected": [], "expected": []}', "duplicate key 'expected'"),
        (lambda d: '{"expected": [], "artifact": NaN}', "NaN is not valid JSON"),
    ],
    ids=[
        "not-json",
        "empty",
        "array",
        "no-artifact",
        "missing-memory-version",
        "unknown-status",
        "missing-fact-id",
        "string-version",
        "bool-version",
        "facts-object",
        "qualifier-int",
        "sources-string",
        "duplicate-key",
        "nan",
    ],
)
def test_bad_input_exits_2_with_one_error_line(tmp_path: Path, mutate, message: str) -> None:
    result = run("check", write(tmp_path, mutate(ok_doc())))
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert "Traceback" not in result.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = run("check", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and result.stderr.startswith("error: cannot read")


def test_json_report_parses() -> None:
    result = run("check", "--json", str(CONTRACT / "allergy-mutated.json"))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["format"] == "fact-contract" and report["outcome"] == "failed" and report["ok"] is False
    first = report["violations"][0]
    assert first["line"] == "fact-allergy-1:value_changed"
    assert first["expected"] == "bool false" and first["observed"] == 'string "false"'
    ok = json.loads(run("check", "--json", str(CONTRACT / "allergy-ok.json")).stdout)
    assert ok["ok"] is True and ok["violations"] == []


def test_gate_case_format(tmp_path: Path) -> None:
    result = run("check", str(CASES / "reference-invoice-call.json"))
    assert (result.exit_code, result.stdout) == (0, SUCCESS + "\n")
    acceptable = run("check", str(CASES / "chatter-acceptable-loss.json"))
    assert acceptable.exit_code == 0 and acceptable.stdout == SUCCESS + "\n"
    assert "note: quantity:12 km:atom_missing (important loss)" in acceptable.stderr
    doc = json.loads((CASES / "reference-timezone-change.json").read_text())
    doc["artifact"]["summary"] += " It used to be UTC-05:00."
    doc["registry"] = str(FIXTURES / "predicates.toml")
    bad = run("check", write(tmp_path, doc))
    assert bad.exit_code == 1
    stale, unmarked = bad.stdout.splitlines()  # the stale timezone, however the extractor labels it
    assert "05:00" in stale and stale.endswith(":atom_added") and unmarked == "timezone-v1:superseded_unmarked"
    doc["facts"][0]["status"] = "archived"
    broken = run("check", write(tmp_path, doc))
    assert broken.exit_code == 2 and "error:" in broken.stderr


@pytest.mark.slow
def test_eval_mutations_passes_on_the_shipped_cases() -> None:
    result = run("eval", "mutations")
    assert result.exit_code == 0, result.stdout
    assert "drop_fact" in result.stdout and "false alarms" in result.stdout and "PASS" in result.stdout
    report = json.loads(run("eval", "mutations", "--json").stdout)
    assert report["ok"] is True and report["mutants"] == report["caught"] > 500


def test_eval_mutations_fails_on_a_broken_fixture(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "predicates.toml", tmp_path / "predicates.toml")
    cases = tmp_path / "cases"
    cases.mkdir()
    doc = json.loads((CASES / "reference-peanut-allergy.json").read_text())
    doc["artifact"]["claims"][0]["value"] = True  # the "correct" artifact is wrong
    (cases / "broken.json").write_text(json.dumps(doc))
    result = run("eval", "mutations", "--fixtures", str(cases))
    assert result.exit_code == 1
    assert "broken case: reference-peanut-allergy" in result.stdout and "FAIL" in result.stdout
    empty = run("eval", "mutations", "--fixtures", str(tmp_path / "nowhere"))
    assert empty.exit_code == 2 and "does not exist" in empty.stderr


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "lossgate").exists(), reason="console script not installed")
def test_installed_console_script() -> None:
    exe = str(ROOT / ".venv" / "bin" / "lossgate")
    ok = subprocess.run([exe, "check", str(CONTRACT / "allergy-ok.json")], capture_output=True, text=True)
    assert (ok.returncode, ok.stdout) == (0, SUCCESS + "\n")
    bad = subprocess.run([exe, "check", str(CONTRACT / "timezone-stale.json")], capture_output=True, text=True)
    assert (bad.returncode, bad.stdout) == (1, "timezone-v1:forbidden_superseded_fact\n")
