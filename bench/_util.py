"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence

PG_ENV = "LOSSGATE_BENCH_PG_URL"


def timed(fn: Callable[[], object], *, repeat: int = 5, setup: Callable[[], object] | None = None) -> list[float]:
    """Run ``fn`` ``repeat`` times (after ``setup`` each time, untimed); return the durations in seconds."""
    out = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def clocked(fn: Callable[[], object], setup: Callable[[], object] | None = None) -> Callable[[], float]:
    """A side for :func:`interleave`: runs ``setup`` (untimed), then times ``fn``."""

    def side() -> float:
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    return side


def interleave(sides: Sequence[Callable[[], float]], runs: int) -> list[list[float]]:
    """Run the sides in turn, ``runs`` rounds (A B A B ...), so every side sees the same
    machine load; each side returns its own duration (it times only its measured work).
    Returns one list of durations per side, in round order."""
    out: list[list[float]] = [[] for _ in sides]
    for _ in range(runs):
        for times, side in zip(out, sides, strict=False):
            times.append(side())
    return out


def ratios(xs: Sequence[float], base: Sequence[float]) -> list[float]:
    """Per-round ratios ``x / base`` of two sides timed in the same rounds."""
    return [x / b for x, b in zip(xs, base, strict=False)]


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def median_ratio(xs: Sequence[float], base: Sequence[float]) -> float:
    """The median of the per-round ratios: the figure to compare across runs and machines."""
    return statistics.median(ratios(xs, base))


def percentile(xs: Sequence[float], p: float) -> float:
    ys = sorted(xs)
    k = max(0, min(len(ys) - 1, round(p / 100 * (len(ys) - 1))))
    return ys[k]


def pg_url(given: str | None) -> str | None:
    """The PostgreSQL server to benchmark: ``--pg`` if given, else ``LOSSGATE_BENCH_PG_URL``."""
    return given or os.environ.get(PG_ENV) or None


def skip_pg(what: str) -> None:
    print(f"[postgres] {what}: skipped (no --pg given and {PG_ENV} is unset)", flush=True)
