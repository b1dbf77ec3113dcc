"""What the recall benchmarks share (:mod:`~lossgate.evaluation.locomo`,
:mod:`~lossgate.evaluation.longmemeval`): the baselines that fill a token budget from a
conversation's turns, recall latency as percentiles, and reading a data file.

A baseline sees the turns as a list of texts and their token costs; it returns the
positions it would put in front of a model, never more than the budget holds.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from lossgate.errors import InvalidInput

__all__ = ["bm25_ranker", "fill", "percentile_ms", "read_list"]

_WORD = re.compile(r"\w+")


def bm25_ranker(docs: Sequence[str]) -> Callable[[str], list[int]]:
    """A function ranking ``docs`` for a query by Okapi BM25 (``rank_bm25``) over lower-cased
    words, best first; equal scores put the later document first (the newer turn)."""
    from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]  # the eval extra: pip install 'lossgate[eval]'

    # rank_bm25 divides by the mean length: a document without words is one placeholder word.
    index = BM25Okapi([_WORD.findall(d.lower()) or ["_"] for d in docs])

    def rank(query: str) -> list[int]:
        scores = index.get_scores(_WORD.findall(query.lower()))
        return sorted(range(len(docs)), key=lambda i: (-scores[i], -i))

    return rank


def fill(order: Iterable[int], costs: Sequence[int], budget: int) -> tuple[set[int], int]:
    """The positions taken in ``order`` while the budget holds them (one that does not fit
    is passed over, a smaller one after it may still fit), and the tokens they use."""
    chosen: set[int] = set()
    used = 0
    for i in order:
        if used + costs[i] > budget:
            continue
        chosen.add(i)
        used += costs[i]
    return chosen, used


def percentile_ms(seconds: Sequence[float], p: float) -> float:
    """The ``p`` percentile (0..1, nearest rank) of ``seconds``, in milliseconds; 0 for none."""
    if not seconds:
        return 0.0
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))] * 1000


def read_list(path: str | Path, dataset: str, holds: str) -> tuple[list[Any], str]:
    """The JSON list a benchmark's file at ``path`` holds, and the file's sha256; anything
    else is :class:`~lossgate.errors.InvalidInput` naming the ``dataset`` and what the list
    ``holds``."""
    data = Path(path).read_bytes()
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidInput(f"{dataset}: {path} is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise InvalidInput(f"{dataset}: {path} holds no list of {holds}")
    if not raw:
        raise InvalidInput(f"{dataset}: {path} holds an empty list: no {holds} to measure")
    return raw, hashlib.sha256(data).hexdigest()
