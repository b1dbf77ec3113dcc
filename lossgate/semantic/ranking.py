"""Nearest neighbours over one subject's stored vectors, and rank fusion.

The neighbour search is exact: a matrix product of the subject's vectors with the
query's, then the top ``limit`` by cosine similarity (every vector is unit length).
One subject's vectors are a range read of the ``vectors`` table's primary key on
either store, kept in memory (:class:`VectorCache`) while the subject's vectors do not
change, so the cost grows with that subject's history only (``bench/bench_semantic.py``
measures it).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lossgate.errors import ConfigError
from lossgate.runtime.caches import holds_text
from lossgate.semantic.embedders import require_numpy

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "VectorSet",
    "VectorCache",
    "vector_cache",
    "clear_vector_caches",
    "nearest",
    "nearest_scored",
    "fuse",
    "hybrid",
    "RRF_K",
    "SEMANTIC_WEIGHT",
    "SEMANTIC_MIN_SIMILARITY",
    "SEMANTIC_CONFIDENT_SIMILARITY",
    "CONFIDENT_LEAD",
    "FEEDBACK_HITS",
    "FEEDBACK_WEIGHT",
    "feedback",
]

RRF_K = 60  # the constant of reciprocal rank fusion (Cormack et al., 2009)
# How much the vector ranking counts against the full-text one in recall's fusion. At 0.5
# the best vector hit scores like the 62nd word hit: vectors reorder the word hits (a hit
# both rankings agree on rises) and add, after them, what no word of the query matches,
# unless it is a confident hit (below). Equal weights lose on LoCoMo with all-MiniLM-L6-v2
# (docs/evaluation.md), because that small model's ranking alone is much weaker than BM25's.
SEMANTIC_WEIGHT = 0.5
# Below this cosine similarity a vector hit is noise, not meaning (unrelated sentences score
# about 0 to 0.15 with all-MiniLM-L6-v2, paraphrases 0.5 and up): a query about nothing the
# subject said gets no semantic hits, as it gets no word hits.
SEMANTIC_MIN_SIMILARITY = 0.2
# At or above this similarity a vector hit says the query in other words (a paraphrase), which
# a word ranking cannot see: such a hit that no word of the query matches enters the fused
# ranking after CONFIDENT_LEAD times its vector rank of other hits (the best after two, the
# second best after four, ...) instead of after every word hit. Fusion so weighs each vector hit by how sure the model is
# of it, not by one weight for every query.
SEMANTIC_CONFIDENT_SIMILARITY = 0.45
CONFIDENT_LEAD = 2
# Pseudo-relevance feedback (Rocchio's, on vectors): the query's vector plus FEEDBACK_WEIGHT
# times the mean vector of the first FEEDBACK_HITS hits of the fused ranking, at unit length,
# asks the vectors again. The hits that both rankings put first say, in the subject's own
# words, what the question is about; a turn that answers it in words neither the question
# nor a single hit shares (the second half of a multi-hop answer, an open-domain question's
# evidence) is often nearer to that mean than to the question alone. Chosen on three LoCoMo
# conversations (evidence recall 0.882 to 0.891; 5 hits, or a weight of 0.3, gave 0.890
# and 0.889) and measured on the seven others (docs/evaluation.md).
FEEDBACK_HITS = 3
FEEDBACK_WEIGHT = 0.5


class VectorSet:
    """One subject's vectors of one model and kind, as ids and a matrix (one row each)."""

    __slots__ = ("ids", "matrix", "row")

    def __init__(self, stored: Sequence[tuple[str, bytes]]) -> None:
        require_numpy()
        import numpy as np

        self.ids = [item for item, _ in stored]
        self.row = {item: n for n, item in enumerate(self.ids)}  # id -> its row of the matrix
        flat = np.frombuffer(b"".join(v for _, v in stored), dtype="<f4")
        dims = {len(v) for _, v in stored}
        if len(dims) > 1:
            raise ConfigError("stored vectors of one model have different dimensions")
        self.matrix = flat.reshape(len(stored), dims.pop() // 4) if stored else flat.reshape(0, 0)

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes) + 160 * len(self.ids)  # an id, and its entry in ``row``


class VectorCache:
    """Recently used subjects' :class:`VectorSet`, per store, while their version holds.

    Reading a subject's 10,000 vectors out of the database takes 20 ms or more; a
    subject is recalled many times between changes to its vectors. An entry is used
    only while the subject's ``vectors_version`` (read in the recall's own transaction)
    is the one it was loaded at, so a deletion is never answered from an old copy; and
    recall returns only events it re-reads as valid and facts it re-reads as active,
    whatever the cache holds. Least
    recently used entries go first once ``max_bytes`` is exceeded.
    """

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str, str, str], tuple[int, VectorSet]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str, str], version: int, load: Callable[[], VectorSet]) -> VectorSet:
        with self._lock:
            found = self._entries.get(key)
            if found is not None and found[0] == version:
                self._entries.move_to_end(key)
                return found[1]
        vectors = load()
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1].nbytes
            if vectors.nbytes <= self.max_bytes:
                self._entries[key] = (version, vectors)
                self._bytes += vectors.nbytes
            while self._bytes > self.max_bytes and self._entries:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted.nbytes
        return vectors

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


_CACHES: weakref.WeakKeyDictionary[object, VectorCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def vector_cache(store: object) -> VectorCache:
    """The :class:`VectorCache` of one store object (it goes when the store does)."""
    with _CACHES_LOCK:
        cache = _CACHES.get(store)
        if cache is None:
            cache = _CACHES[store] = VectorCache()
        return cache


@holds_text
def clear_vector_caches() -> None:
    """Drop every in-process copy of stored vectors (after a deletion, as the gate's
    text cache is dropped: nothing derived from deleted content lingers in memory)."""
    with _CACHES_LOCK:
        for cache in _CACHES.values():
            cache.clear()


def nearest(vectors: VectorSet, query: np.ndarray, limit: int, *, min_similarity: float = -1.0) -> list[str]:
    """Ids of the ``limit`` vectors most similar to ``query`` (and at least ``min_similarity``
    by cosine), best first."""
    return [i for i, _ in nearest_scored(vectors, query, limit, min_similarity=min_similarity)]


def nearest_scored(
    vectors: VectorSet, query: np.ndarray, limit: int, *, min_similarity: float = -1.0
) -> list[tuple[str, float]]:
    """:func:`nearest`, each id with its cosine similarity."""
    if not vectors.ids or limit <= 0:
        return []
    require_numpy()
    import numpy as np

    dim = int(query.shape[0])
    if vectors.matrix.shape[1] != dim:
        raise ConfigError(
            f"stored vectors do not have the query's {dim} dimensions: the model that "
            "wrote them is not the one embedding the query"
        )
    scores = vectors.matrix @ query.astype("<f4")
    k = min(limit, len(vectors.ids))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(vectors.ids[i], float(scores[i])) for i in top if scores[i] >= min_similarity]


def feedback(
    vectors: VectorSet,
    query: np.ndarray,
    ranked: Sequence[str],
    *,
    hits: int = FEEDBACK_HITS,
    weight: float = FEEDBACK_WEIGHT,
) -> np.ndarray | None:
    """``query`` plus ``weight`` times the mean vector of the first ``hits`` of ``ranked`` (ids
    best first) that ``vectors`` holds, at unit length; None when none of them has a vector (an
    event appended since the subject was embedded, say)."""
    if hits <= 0:
        return None
    rows = [vectors.row[item] for item in ranked if item in vectors.row][:hits]
    if not rows:
        return None
    moved = query.astype("<f4") + weight * vectors.matrix[rows].mean(axis=0)
    norm = float((moved @ moved) ** 0.5)
    return moved / norm if norm > 0 else None


def fuse(*rankings: Sequence[str], weights: Sequence[float] | None = None, k: int = RRF_K) -> list[str]:
    """Weighted reciprocal rank fusion: an id scores the sum, over the rankings it appears in,
    of ``weight / (k + rank)`` (rank from 1; every weight 1 unless ``weights`` says
    otherwise); best first, ties in order of first appearance."""
    weights = weights if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    score: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=False):
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(score)}
    return sorted(score, key=lambda item: (-score[item], order[item]))


def hybrid(
    words: Sequence[str],
    vectors: Sequence[tuple[str, float]],
    *,
    weight: float = SEMANTIC_WEIGHT,
    confident: float = SEMANTIC_CONFIDENT_SIMILARITY,
    lead: int = CONFIDENT_LEAD,
) -> list[str]:
    """A word ranking and a vector ranking (ids with their similarity, best first) as one:
    :func:`fuse` with the vectors at ``weight``, then each vector hit of similarity at least
    ``confident`` that the word ranking lacks moved up to after ``lead`` times its vector
    rank (from 1) of other hits, if it is further down; the others keep their fused order
    around them."""
    out = fuse(words, [i for i, _ in vectors], weights=(1.0, weight))
    held = set(words)
    for rank, (i, score) in enumerate(vectors, start=1):  # best first: each past those before it
        if score >= confident and i not in held and (at := out.index(i)) > lead * rank:
            out.insert(lead * rank, out.pop(at))  # moved up only, never down
    return out
