"""Nearest neighbours over one subject's stored vectors, and rank fusion.

The neighbour search is exact: a matrix product of the subject's vectors with the
query's, then the top ``limit`` by cosine similarity (every vector is unit length).
One subject's vectors are a range read of the ``vectors`` table's primary key on
either store, so the cost grows with that subject's history only (``bench/
bench_semantic.py`` measures it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lossgate.errors import ConfigError
from lossgate.semantic.embedders import numpy

if TYPE_CHECKING:
    import numpy as np

__all__ = ["nearest", "fuse", "RRF_K", "SEMANTIC_WEIGHT"]

RRF_K = 60  # the constant of reciprocal rank fusion (Cormack et al., 2009)
# How much the vector ranking counts against the full-text one in recall's fusion. At 0.3
# the best vector hit scores like the 143rd word hit: vectors reorder the word hits (a hit
# both rankings agree on rises) and add, after them, what no word of the query matches.
# Measured on LoCoMo with all-MiniLM-L6-v2 (README): 0.2-0.3 gain on lexical recall, equal
# weights lose 0.08, because that small model's ranking alone is much weaker than BM25's.
SEMANTIC_WEIGHT = 0.3


def nearest(stored: Sequence[tuple[str, bytes]], query: "np.ndarray", limit: int) -> list[str]:
    """Ids of the ``limit`` stored vectors most similar to ``query``, best first."""
    if not stored or limit <= 0:
        return []
    np = numpy()
    dim = int(query.shape[0])
    matrix = np.frombuffer(b"".join(v for _, v in stored), dtype="<f4")
    if matrix.size != len(stored) * dim:
        raise ConfigError(f"stored vectors do not have the query's {dim} dimensions: the model that "
                          "wrote them is not the one embedding the query")
    scores = matrix.reshape(len(stored), dim) @ query.astype("<f4")
    k = min(limit, len(stored))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [stored[i][0] for i in top]


def fuse(*rankings: Sequence[str], weights: Sequence[float] | None = None, k: int = RRF_K) -> list[str]:
    """Weighted reciprocal rank fusion: an id scores the sum, over the rankings it appears in,
    of ``weight / (k + rank)`` (rank from 1; every weight 1 unless ``weights`` says
    otherwise); best first, ties in order of first appearance."""
    weights = weights if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    score: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(score)}
    return sorted(score, key=lambda item: (-score[item], order[item]))
