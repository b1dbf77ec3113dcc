"""Recall's reranking stage: the top of the first ranking, reordered by a reranker's scores.

:func:`rerank_scores` takes recall's rankings (the facts' and the events', best first), each
with a function that gives the text of given candidates, and hands the reranker the first
:attr:`~lossgate.semantic.rerankers.Reranker.depth` candidates of each, in one call; it
returns each ranking's scores by id. :func:`ordered` puts a ranking's scored candidates first,
by score (ties keep their first-ranking order), and the rest after them as they were: nothing
is added or removed. :func:`reranked` is the two in one call. Only the texts the functions
return are ever sent (recall's are lookups in what its read transaction read: valid, for its
tenant and subject; the reranker is asked after that transaction has closed); a candidate
they return no text for is not sent, and stays after the reordered ones.

A reranker that fails (raises, times out, answers something malformed or the wrong number
of scores) leaves the rankings as they were; what happened is what a recall record keeps
in ``filters["rerank"]``, the failure's kind and never its message. After a failure,
that reranker is not asked again for :data:`RERANKER_COOLDOWN_S` (:func:`cooling_down`).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from lossgate.semantic.rerankers import Reranker, checked_scores

__all__ = ["reranked", "rerank_scores", "ordered", "cooling_down", "Reranking", "RERANKER_COOLDOWN_S"]

log = logging.getLogger(__name__)

# After a reranker fails, recall keeps its first ranking for this long before it asks that
# reranker again: an agent's read path must not wait on a server that is down (as for the
# embedder, lossgate.recall.read.EMBEDDER_COOLDOWN_S).
RERANKER_COOLDOWN_S = 30.0
_down_until: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

# ids best first, and what reads the text that may be sent of some of them (by id)
Ranking = tuple[Sequence[str], Callable[[list[str]], Mapping[str, str]]]


class Reranking(NamedTuple):
    """What a reranker made of recall's rankings (:func:`rerank_scores`)."""

    status: str  # what to record: "used: <model>", "failed: <kind>" or "skipped: <why>"
    scores: list[dict[str, float]] | None  # each ranking's reordered top, score by id; None: the rankings stand
    asked: bool  # whether the reranker was called (and so time passed since the texts were read)


def rerank_scores(reranker: Reranker, query: str, rankings: Sequence[Ranking]) -> Reranking:
    """Ask ``reranker`` about the top of each ranking, in one call (see the module docstring)."""
    if cooling_down(reranker):
        return Reranking("skipped: the reranker failed moments ago", None, False)
    tops: list[list[str]] = []
    documents: list[str] = []
    for ids, read in rankings:
        head = list(ids[: max(reranker.depth, 0)])
        texts = read(head) if head else {}
        tops.append([i for i in head if i in texts])
        documents += [texts[i] for i in tops[-1]]
    if all(len(top) < 2 for top in tops):
        return Reranking("skipped: fewer than two hits to reorder", None, False)
    try:
        scores = checked_scores(reranker.rerank(query, documents), len(documents), source=reranker.model)
    except Exception as exc:  # noqa: BLE001 - any reranker failure (a server, torch, a user's class): keep the ranking
        why = getattr(exc, "reason", None) or type(exc).__name__
        # what failed, never the server's message: it may echo the query, and logs outlive a deletion
        log.warning("recall: reranking unavailable for %.0f s (%s): %s", RERANKER_COOLDOWN_S, reranker.model, why)
        try:
            _down_until[reranker] = time.monotonic() + RERANKER_COOLDOWN_S
        except TypeError:  # a reranker that cannot be weakly referenced: no cool-down for it
            pass
        return Reranking(f"failed: {why}", None, True)
    out, at = [], 0
    for top in tops:
        out.append(dict(zip(top, scores[at : at + len(top)], strict=False)))
        at += len(top)
    return Reranking(f"used: {reranker.model}", out, True)


def ordered(ids: Sequence[str], scores: Mapping[str, float]) -> list[str]:
    """``ids`` with those ``scores`` holds first, best score first (ties in their order in
    ``ids``), then the others in their order. Nothing is added or removed."""
    top = [i for i in ids if i in scores]
    first = {i: r for r, i in enumerate(top)}
    return sorted(top, key=lambda i: (-scores[i], first[i])) + [i for i in ids if i not in scores]


def reranked(reranker: Reranker, query: str, rankings: Sequence[Ranking]) -> tuple[str, list[list[str]]]:
    """What to record (``"used: <model>"``, ``"failed: <kind>"`` or ``"skipped: <why>"``) and
    each ranking's ids, its reranked top first (see the module docstring)."""
    done = rerank_scores(reranker, query, rankings)
    if done.scores is None:
        return done.status, [list(ids) for ids, _ in rankings]
    return done.status, [ordered(ids, score) for (ids, _), score in zip(rankings, done.scores, strict=True)]


def cooling_down(reranker: Reranker) -> bool:
    """Whether ``reranker`` failed less than :data:`RERANKER_COOLDOWN_S` ago (recall then keeps
    its first ranking without asking it)."""
    return time.monotonic() < _failed_until(reranker)


def _failed_until(reranker: Reranker) -> float:
    try:
        return _down_until.get(reranker, 0.0)
    except TypeError:
        return 0.0
