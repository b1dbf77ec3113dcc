"""Records from stored rows: built without validation (what the store does) against full
pydantic validation of the same rows.

    python bench/bench_rows.py [--events 10000] [--runs 30] [--pg URL]

For each store: one subject filled by :func:`bench.scale_data.fill` (events, facts with
supersessions, deletions and conflicts) and consolidated once, then every event and fact
row of the subject read once through the store, the rows kept as the store handed them
(ISO text from SQLite, ``datetime`` from PostgreSQL). Alternately (A B, then B A, ...):

* A, :func:`lossgate.store.rows.event_from_row` / ``fact_from_row``: the records built from
  the rows without validation (what every read of the store does);
* B, ``rows.event_from_row_validated`` / ``fact_from_row_validated``: the same records
  through ``model_validate`` (what ``tests/conformance/test_trusted_rows.py`` checks A
  against: equal, and the same dump, JSON, repr, hash).

Prints the median time per row of each side and the median of the per-round ratios B / A.
PostgreSQL runs with ``--pg`` or ``LOSSGATE_BENCH_PG_URL``; it creates and drops its own
database there.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import interleave, median, median_ratio, pg_url, skip_pg
from bench.scale_data import fill
from lossgate.store import rows

ROOT = Path(__file__).resolve().parents[1]
T, S = "bench", "rows-1"


def stored_rows(memory: lossgate.Memory, events: int) -> dict[str, list[Any]]:
    """The subject's event and fact rows as its store hands them to ``rows``."""
    memory.admin.load_predicates(ROOT / "examples" / "predicates.toml")
    fill(memory, T, S, 0, events)
    memory.consolidate(T, S)
    seen: dict[str, list[Any]] = {"event": [], "fact": []}
    originals = {"event": rows.event_from_row, "fact": rows.fact_from_row}

    def keeping(kind: str) -> Callable[[Any], Any]:
        def read(r: Any) -> Any:
            seen[kind].append(tuple(r))
            return originals[kind](r)

        return read

    rows.event_from_row, rows.fact_from_row = keeping("event"), keeping("fact")  # type: ignore[assignment]
    try:
        with memory.store.read() as tx:
            tx.events(T, S)
            tx.facts(T, S)
    finally:
        rows.event_from_row, rows.fact_from_row = originals["event"], originals["fact"]  # type: ignore[assignment]
    return seen


def side(build: Callable[[Any], Any], found: list[Any]) -> Callable[[], float]:
    def run() -> float:
        t0 = time.perf_counter()
        for r in found:
            build(r)
        return time.perf_counter() - t0

    return run


def measure(name: str, found: dict[str, list[Any]], runs: int) -> None:
    pairs = {
        "event": (rows.event_from_row, rows.event_from_row_validated),
        "fact": (rows.fact_from_row, rows.fact_from_row_validated),
    }
    for kind, (fast, validated) in pairs.items():
        these = found[kind]
        a, b = side(fast, these), side(validated, these)
        # A B, then B A: neither side always runs first (warm caches, the allocator)
        ab = interleave([a, b], (runs + 1) // 2)
        ba = interleave([b, a], runs // 2)
        fast_t, slow_t = ab[0] + ba[1], ab[1] + ba[0]
        per = lambda xs: median(xs) / len(these) * 1e6  # noqa: E731, B023
        print(
            f"{name:10} {kind:5} {len(these):7,} rows | without validation {per(fast_t):5.2f} us/row | "
            f"model_validate {per(slow_t):5.2f} us/row | validated / fast, median of rounds "
            f"{median_ratio(slow_t, fast_t):.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        memory = lossgate.open(f"sqlite:///{Path(tmp) / 'rows.db'}")
        found = stored_rows(memory, args.events)
        memory.close()
    measure("sqlite", found, args.runs)
    pg = pg_url(args.pg)
    if pg:
        from lossgate.testing.postgres import scratch_database

        with scratch_database(pg) as url:  # created here, dropped after
            memory = lossgate.open(url)
            found = stored_rows(memory, args.events)
            memory.close()
        measure("postgresql", found, args.runs)
    else:
        skip_pg("records from rows")


if __name__ == "__main__":
    main()
