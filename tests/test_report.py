"""``lossgate report``: one HTML page with its PNG figures embedded (:mod:`lossgate.ops.report`),
rendered from data this test generates: consolidations (one refused by the gate), recalls
from a summary and from raw memory, two days of daily metrics, and LoCoMo results in
both of ``lossgate eval locomo --json``'s forms."""

from __future__ import annotations

import base64
import io
import json
import re
import sys
from datetime import UTC, date, datetime, timedelta

import pytest
from matplotlib.image import imread
from typer.testing import CliRunner

from lossgate import NewEvent, NewFact
from lossgate.cli import app
from lossgate.model.records import utcnow
from lossgate.ops.daily import run_daily
from lossgate.ops.report import write_report
from lossgate.testing.compressors import FlipBool

AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
PNG = b"\x89PNG\r\n\x1a\n"
runner = CliRunner(env={"FORCE_COLOR": None, "COLUMNS": None, "LOSSGATE_DB": None, "NO_COLOR": "1"})

LOCOMO_RECALL = {
    "budget_tokens": 2000,
    "conversations": 2,
    "data_sha256": "x",
    "published_data": False,
    "embedder": None,
    "embed_seconds": 0.0,
    "sides": {
        name: {
            cat: {
                "questions": 10,
                "evidence_recall": r,
                "tokens": tokens,
                "p50_ms": 1.0,
                "p99_ms": 2.0,
                **({"token_reduction": 1 - tokens / 9000} if cat == "overall" else {}),
            }
            for cat, r in (("multi-hop", r1), ("temporal", r1 / 2), ("overall", r1 * 0.9))
        }
        for name, r1, tokens in (("lossgate", 0.8, 1800.0), ("bm25", 0.6, 1900.0), ("full context", 1.0, 9000.0))
    },
}
LOCOMO_PERIODS = {
    "budget_tokens": 2000,
    "overall": {"conversations": 1},
    "conversations": [
        {
            "sample_id": "conv-26",
            "path": "hierarchical",
            "sessions": 19,
            "sessions_covered": 19,
            "raw_tokens": 21000,
            "published_tokens": 3100,
            "reduction": 0.852,
            "atoms": {"atoms": 40, "digest": 15, "question": 20, "atom": 4, "unreachable": 1},
        }
    ],
}


@pytest.fixture
def generated(memory, db_url):
    """Two tenants; acme/u1 refused once (FlipBool: value_changed) then published, acme/u2
    published then superseded (recall falls back to raw); globex/u1 published; two days of
    daily metrics, the second with a compressor that flips a boolean (blocked)."""
    for t, s in (("acme", "u1"), ("acme", "u2"), ("globex", "u1")):
        memory.append(
            [
                NewEvent(
                    tenant_id=t,
                    subject_id=s,
                    event_id=f"{s}-e1",
                    occurred_at=AT,
                    text="I am allergic to peanuts, not merely avoiding them.",
                )
            ]
        )
        memory.assert_fact(
            NewFact(
                tenant_id=t,
                subject_id=s,
                fact_id=f"{s}-allergy",
                predicate="food.peanuts_allowed",
                value=False,
                source_event_ids=(f"{s}-e1",),
            )
        )
    assert memory.consolidate("acme", "u1", compressor=FlipBool()).status == "rejected"
    for t, s in (("acme", "u1"), ("acme", "u2"), ("globex", "u1")):
        assert memory.consolidate(t, s).status == "published"
        memory.recall(t, s)
    memory.supersede(
        "acme",
        "u2",
        "u2-allergy",
        NewFact(
            tenant_id="acme",
            subject_id="u2",
            fact_id="u2-allergy-2",
            predicate="food.peanuts_allowed",
            value=True,
            source_event_ids=("u2-e1",),
        ),
    )
    memory.recall("acme", "u2")
    today = utcnow().date()
    clean = run_daily(memory.store, ["acme", "globex"], day=today - timedelta(days=1))
    flipped = run_daily(memory.store, ["acme", "globex"], day=today, compressor=FlipBool())
    assert not clean.blocked and flipped.blocked
    return memory, db_url, today, (clean.run_id, flipped.run_id)


def images(page: str) -> list[bytes]:
    return [base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)]


@pytest.mark.slow
def test_the_report_holds_the_tables_and_valid_png_figures(generated, tmp_path):
    memory, _, today, runs = generated
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps(LOCOMO_RECALL))
    out = tmp_path / "report.html"
    report = write_report(memory.store, ["acme", "globex"], out, days=7, until=today, locomo=locomo)
    page = out.read_text(encoding="utf-8")
    assert page == report.html and page.count("<table>") == 5
    for expected in (
        "Daily fidelity metrics",
        "key-fact recall",
        "erroneous-new-fact rate",
        *runs,
        "BLOCKED",
        "consolidation attempts by outcome",
        "<td>value_changed</td>",
        "recall records by mode",
        "LoCoMo evidence recall (2 conversations)",
        "<td>bm25</td>",
        "<td>0.800</td>",
    ):
        assert expected in page, expected
    # the recall table: acme 2 from a summary, 1 from raw memory; globex 1 from a summary
    assert "<tr><td>acme</td><td>2</td><td>1</td><td>66.7%</td></tr>" in page
    assert "<tr><td>globex</td><td>1</td><td>0</td><td>100.0%</td></tr>" in page
    # the attempts of today: 3 clean publications (and a supersession's none), 1 refused
    assert f"<tr><td>{today.isoformat()}</td><td>3</td><td>0</td><td>1</td><td>0</td><td>0</td><td>0</td></tr>" in page
    embedded = images(page)
    assert sorted(embedded) == sorted(report.figures.values()) and len(embedded) == 4
    for png in embedded:
        assert png.startswith(PNG)
        pixels = imread(io.BytesIO(png), format="png")
        assert pixels.ndim == 3 and pixels.shape[0] > 150 and pixels.shape[1] > 400
        assert pixels.std() > 0.05  # something is drawn, not a blank canvas


@pytest.mark.slow
def test_the_cli_writes_the_page_with_locomo_periods_and_refuses_bad_input(generated, tmp_path, monkeypatch):
    memory, url, today, _ = generated
    periods = tmp_path / "periods.json"
    periods.write_text(json.dumps(LOCOMO_PERIODS))
    out = tmp_path / "report.html"
    args = ["--db", url, "report", "-t", "acme", "--out", str(out), "--until", today.isoformat()]
    result = runner.invoke(app, [*args, "--locomo", str(periods)])
    assert result.exit_code == 0, result.output
    assert "LoCoMo published memory by period" in out.read_text() and "<td>conv-26</td>" in out.read_text()
    out.unlink()

    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "locomo"}')
    missing_matplotlib = {"matplotlib.figure": None, "matplotlib.backends.backend_agg": None}
    for more, words in (
        (["--locomo", str(bad)], "not a result of `lossgate eval locomo --json`"),
        (["--locomo", str(tmp_path / "none.json")], "not a readable JSON file"),
        (["--until", "2026-02-30"], "is not a date"),
        (["--out", str(tmp_path / "nowhere" / "r.html")], "does not exist"),
        (["--matplotlib-missing"], "pip install 'lossgate[report]'"),
    ):
        with monkeypatch.context() as m:
            if more == ["--matplotlib-missing"]:
                for name, value in missing_matplotlib.items():
                    m.setitem(sys.modules, name, value)
                more = []
            result = runner.invoke(app, [*args, *more])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: ") and words in result.stderr and result.stderr.count("\n") == 1
        assert not out.exists() and list(tmp_path.glob(".report.html.*")) == []


def test_an_empty_window_still_renders_with_notes(memory, tmp_path):
    out = tmp_path / "r.html"
    report = write_report(memory.store, ["nobody"], out, days=1, until=date(2020, 1, 1))
    page = out.read_text()
    assert "No daily metrics stored in this window" in page and "No LoCoMo results given" in page
    assert len(images(page)) == 3 and all(png.startswith(PNG) for png in report.figures.values())


def test_a_day_whose_only_finding_is_prose_drift_is_blocked_in_the_report():
    from lossgate.ops.daily import DayFigures, Tally
    from lossgate.ops.report import _daily_rows, blocks

    drifted, clean = Tally(subjects=1, summaries_read=1, summaries_drifted=1), Tally(subjects=1, summaries_read=1)
    assert blocks(drifted) and not blocks(clean)
    day = date(2026, 3, 14)
    rows = _daily_rows([DayFigures(day=day, tenants={"acme": drifted}, runs={"acme": "r1"})])
    assert rows[0][-2:] == ["100.0%", "BLOCKED"]
