"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from typing import Callable


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


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def percentile(xs: list[float], p: float) -> float:
    ys = sorted(xs)
    k = max(0, min(len(ys) - 1, round(p / 100 * (len(ys) - 1))))
    return ys[k]
