"""A tiny run of the scale benchmark (``bench/bench_scale.py``): every shape of history at two
small sizes, one round, a few recalls; the report has every figure for every shape and size,
and the checks say PASS or FAIL."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.bench_scale import ANSWER_GROWS, main
from bench.scale_data import QUERY_KINDS, SHAPES

SIZES = ["200", "400"]
ROUNDS, TAIL = 1, 20
FIGURES = {"append", "first", "incremental", "rebuild", "rebuild_all_parts", "recall_query", "recall", "storage"}


def _run(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "scale.json"
    code = main(
        [
            "--sizes",
            ",".join(SIZES),
            "--rounds",
            str(ROUNDS),
            "--tail",
            str(TAIL),
            "--calls",
            "5",
            "--json",
            str(out),
            *args,
        ]
    )
    assert code == 0  # without --strict, whatever the checks say
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def _assert_latency(f: dict[str, Any]) -> None:
    assert 0 < f["p50_ms"] <= f["p99_ms"] and f["p50_ratio"] > 0 and f["p99_ratio"] > 0
    assert f["last"]["mode"] == "summary" and f["last"]["tokens"] > 0


def _assert_figures(size: str, f: dict[str, Any]) -> None:
    assert set(f) == FIGURES
    assert f["append"]["events_per_s"] > 0 and f["append"]["baseline_events_per_s"] > 0
    assert f["first"]["status"] == "published" and f["first"]["path"] is not None
    runs = f["incremental"]["runs"]
    assert len(runs) == ROUNDS and all(r["status"] == "published" and r["timings"] for r in runs)
    assert f["rebuild"]["status"] == f["rebuild_all_parts"]["status"] == "published"
    assert set(f["recall_query"]) == set(QUERY_KINDS)
    for kind in QUERY_KINDS:
        _assert_latency(f["recall_query"][kind])
    _assert_latency(f["recall"])
    assert f["storage"]["events"] == int(size) + ROUNDS * TAIL
    assert f["storage"]["bytes"] > f["storage"]["empty_bytes"]


def _assert_shape(shape: dict[str, Any]) -> None:
    assert list(shape["sizes"]) == SIZES and shape["description"]
    for size, f in shape["sizes"].items():
        _assert_figures(size, f)
    smallest = shape["sizes"][SIZES[0]]
    assert smallest["incremental"]["ratio"] == smallest["recall"]["p50_ratio"] == smallest["recall"]["p99_ratio"] == 1.0
    assert all(smallest["recall_query"][kind]["p99_ratio"] == 1.0 for kind in QUERY_KINDS)
    assert len(shape["checks"]) == 4 + len(QUERY_KINDS) - len(ANSWER_GROWS)
    assert all(isinstance(c["passed"], bool) and c["name"] for c in shape["checks"])
    assert shape["checks"][-1]["passed"]  # every consolidation published


def _assert_store(report: dict[str, Any], store: dict[str, Any]) -> None:
    assert report["shapes"] == list(SHAPES) == list(store["shapes"])
    for shape in store["shapes"].values():
        _assert_shape(shape)


@pytest.mark.slow
def test_a_tiny_scale_run_reports_every_figure_per_shape_and_size(tmp_path: Path) -> None:
    report = _run(tmp_path, "--only", "sqlite")
    assert report["sizes"] == [200, 400] and report["rounds"] == ROUNDS
    (store,) = report["stores"]
    assert store["store"] == "sqlite"
    _assert_store(report, store)


@pytest.mark.slow
def test_shapes_picks_some_in_the_order_given(tmp_path: Path) -> None:
    report = _run(tmp_path, "--only", "sqlite", "--sizes", "150", "--shapes", "undated,bulk")
    (store,) = report["stores"]
    assert report["shapes"] == list(store["shapes"]) == ["undated", "bulk"]
    assert list(store["shapes"]["bulk"]["sizes"]) == ["150"]


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(SystemExit):
        main(["--shapes", "spread,sideways"])


@pytest.mark.slow
@pytest.mark.postgres
def test_a_tiny_scale_run_on_postgres(tmp_path: Path) -> None:
    server = os.environ.get("LOSSGATE_TEST_PG_URL")
    if not server:
        pytest.skip("PostgreSQL tests need LOSSGATE_TEST_PG_URL (set by .ci/run)")
    report = _run(tmp_path, "--only", "postgresql", "--pg", server)
    (store,) = report["stores"]
    assert store["store"] == "postgresql"
    _assert_store(report, store)
