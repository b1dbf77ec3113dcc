"""Recall's reranking stage: the top of the first ranking, reordered by a reranker's scores.

:func:`reranked` takes recall's rankings (the facts' and the events', best first), each with
a function that reads the text of given candidates, and hands the reranker the first
:attr:`~lossgate.semantic.rerankers.Reranker.depth` candidates of each, in one call. Each
ranking comes back with that top reordered by score (ties keep their first-ranking order)
and the rest after it as it was: nothing is added or removed, and only the texts the
readers return (recall reads them as valid, in its own transaction, for its tenant and
subject) are ever sent; a candidate they return no text for is not sent, and stays after
the reordered ones.

A reranker that fails (raises, times out, answers something malformed or the wrong number
of scores) leaves the rankings as they were; what happened is what a recall record keeps
in ``filters["rerank"]``, the failure's kind and never its message. After a failure,
that reranker is not asked again for :data:`RERANKER_COOLDOWN_S`.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lossgate.semantic.rerankers import Reranker, checked_scores

__all__ = ["reranked", "RERANKER_COOLDOWN_S"]

log = logging.getLogger(__name__)

# After a reranker fails, recall keeps its first ranking for this long before it asks that
# reranker again: an agent's read path must not wait on a server that is down (as for the
# embedder, lossgate.recall.read.EMBEDDER_COOLDOWN_S).
RERANKER_COOLDOWN_S = 30.0
_down_until: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

# ids best first, and what reads the text that may be sent of some of them (by id)
Ranking = tuple[Sequence[str], Callable[[list[str]], Mapping[str, str]]]


def reranked(reranker: Reranker, query: str, rankings: Sequence[Ranking]) -> tuple[str, list[list[str]]]:
    """What to record (``"used: <model>"``, ``"failed: <kind>"`` or ``"skipped: <why>"``) and
    each ranking's ids, its reranked top first (see the module docstring)."""
    unchanged = [list(ids) for ids, _ in rankings]
    if time.monotonic() < _failed_until(reranker):
        return "skipped: the reranker failed moments ago", unchanged
    tops: list[list[str]] = []
    documents: list[str] = []
    for ids, read in rankings:
        head = list(ids[: max(reranker.depth, 0)])
        texts = read(head) if head else {}
        tops.append([i for i in head if i in texts])
        documents += [texts[i] for i in tops[-1]]
    if all(len(top) < 2 for top in tops):
        return "skipped: fewer than two hits to reorder", unchanged
    try:
        scores = checked_scores(reranker.rerank(query, documents), len(documents), source=reranker.model)
    except Exception as exc:  # noqa: BLE001 - any reranker failure (a server, torch, a user's class): keep the ranking
        log.warning("recall: reranking unavailable for %.0f s (%s): %s", RERANKER_COOLDOWN_S, reranker.model, exc)
        try:
            _down_until[reranker] = time.monotonic() + RERANKER_COOLDOWN_S
        except TypeError:  # a reranker that cannot be weakly referenced: no cool-down for it
            pass
        return f"failed: {getattr(exc, 'reason', None) or type(exc).__name__}", unchanged
    out, at = [], 0
    for top, ids in zip(tops, unchanged, strict=False):
        score = dict(zip(top, scores[at : at + len(top)], strict=False))
        at += len(top)
        first = {i: r for r, i in enumerate(top)}
        best = sorted(top, key=lambda i: (-score[i], first[i]))
        out.append(best + [i for i in ids if i not in first])
    return f"used: {reranker.model}", out


def _failed_until(reranker: Reranker) -> float:
    try:
        return _down_until.get(reranker, 0.0)
    except TypeError:
        return 0.0
