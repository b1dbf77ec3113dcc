"""Scripted ``/v1/rerank`` answers for :class:`~lossgate.testing.chat_server.ScriptedChatServer`.

:func:`rerank_reply` answers as Cohere, Jina and vLLM do: one result per document, best
first, each with the document's ``index`` and its ``relevance_score``. Two tiny,
deterministic "models" give the scores from the request itself: :func:`scored_by_words`
scores a document by the words of a table it holds (a test decides which candidates must
win), :func:`word_overlap` by the share of the query's words it holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lossgate.testing.chat_server import Reply

__all__ = ["rerank_reply", "scored_by_words", "word_overlap"]

_WORD = re.compile(r"\w+")


def rerank_reply(scores: Sequence[float], *, model: str = "scripted") -> Reply:
    """A well-formed ``/v1/rerank`` answer giving document ``i`` the score ``scores[i]``."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    return Reply(
        body={
            "id": "rerank-scripted",
            "model": model,
            "results": [{"index": i, "relevance_score": scores[i]} for i in order],
            "usage": {"total_tokens": 0},
        }
    )


def scored_by_words(weights: Mapping[str, float]) -> Callable[[dict[str, Any]], Reply]:
    """A "model" scoring each document by the sum of ``weights`` of the words it holds
    (lower-cased; a word twice counts once)."""
    table = {w.lower(): v for w, v in weights.items()}

    def answer(body: dict[str, Any]) -> Reply:
        docs = body["documents"]
        return rerank_reply(
            [sum(table.get(w, 0.0) for w in set(_WORD.findall(str(d).lower()))) for d in docs],
            model=body.get("model", "scripted"),
        )

    return answer


def word_overlap(body: dict[str, Any]) -> Reply:
    """A "model" scoring each document by the share of the query's words it holds."""
    query = set(_WORD.findall(str(body["query"]).lower()))
    docs = body["documents"]
    return rerank_reply(
        [len(query & set(_WORD.findall(str(d).lower()))) / (len(query) or 1) for d in docs],
        model=body.get("model", "scripted"),
    )
