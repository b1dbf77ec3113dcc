"""A tiny run of the scale benchmark (``bench/bench_scale.py``): two small sizes, two rounds,
a few recalls; the report has every figure for every size, and the checks say PASS or FAIL."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.bench_scale import main

SIZES = ["150", "400"]
FIGURES = {"append", "first", "incremental", "rebuild", "rebuild_all_parts", "recall_query", "recall", "storage"}


def _run(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "scale.json"
    code = main(["--sizes", ",".join(SIZES), "--rounds", "2", "--tail", "20", "--calls", "5",
                 "--json", str(out), *args])
    assert code == 0  # without --strict, whatever the checks say
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def _assert_shape(store: dict[str, Any]) -> None:
    assert list(store["sizes"]) == SIZES
    for size, f in store["sizes"].items():
        assert set(f) == FIGURES
        assert f["append"]["events_per_s"] > 0 and f["append"]["baseline_events_per_s"] > 0
        assert f["first"]["status"] == "published" and f["first"]["path"] is not None
        runs = f["incremental"]["runs"]
        assert len(runs) == 2 and all(r["status"] == "published" and r["timings"] for r in runs)
        assert f["rebuild"]["status"] == f["rebuild_all_parts"]["status"] == "published"
        for key in ("recall_query", "recall"):
            assert 0 < f[key]["p50_ms"] <= f[key]["p99_ms"]
            assert f[key]["last"]["mode"] == "summary" and f[key]["last"]["tokens"] > 0
        assert f["storage"]["events"] == int(size) + 2 * 20
        assert f["storage"]["bytes"] > f["storage"]["empty_bytes"]
    smallest = store["sizes"][SIZES[0]]
    assert smallest["incremental"]["ratio"] == smallest["recall_query"]["p99_ratio"] == 1.0
    assert len(store["checks"]) == 4
    assert all(isinstance(c["passed"], bool) and c["name"] for c in store["checks"])
    assert store["checks"][-1]["passed"]  # every consolidation published


def test_a_tiny_scale_run_reports_every_figure_per_size(tmp_path: Path) -> None:
    report = _run(tmp_path, "--only", "sqlite")
    assert report["sizes"] == [150, 400] and report["rounds"] == 2
    (store,) = report["stores"]
    assert store["store"] == "sqlite"
    _assert_shape(store)


@pytest.mark.postgres
def test_a_tiny_scale_run_on_postgres(tmp_path: Path) -> None:
    server = os.environ.get("LOSSGATE_TEST_PG_URL")
    if not server:
        pytest.skip("PostgreSQL tests need LOSSGATE_TEST_PG_URL (set by .ci/run)")
    (store,) = _run(tmp_path, "--only", "postgresql", "--pg", server)["stores"]
    assert store["store"] == "postgresql"
    _assert_shape(store)
