"""Scripted ``/v1/embeddings`` answers for :class:`~lossgate.testing.chat_server.ScriptedChatServer`.

:func:`concept_embeddings` is a tiny, deterministic "model": each word maps to a
dimension by its concept (``cat``, ``kitten`` and ``feline`` share one), so texts that
share a concept but no word are close, which is what a test of semantic (not lexical)
retrieval needs. Words outside the table hash to dimensions of their own.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from lossgate.testing.chat_server import Reply

__all__ = ["CONCEPTS", "DIM", "concept_vector", "concept_embeddings", "embeddings_reply"]

DIM = 64
CONCEPTS: dict[str, int] = {}
for _dim, _words in enumerate(
    [
        ("cat", "cats", "kitten", "kittens", "feline", "felines", "tabby"),
        ("dog", "dogs", "puppy", "puppies", "canine", "hound"),
        ("car", "cars", "automobile", "vehicle", "sedan"),
        ("doctor", "physician", "clinic", "hospital", "nurse"),
        ("money", "salary", "pay", "paid", "wage", "income"),
        ("sea", "ocean", "beach", "coast", "shore"),
    ]
):
    for _w in _words:
        CONCEPTS[_w] = _dim


def concept_vector(text: str) -> list[float]:
    """A unit vector: a count per concept (or hashed word), normalised."""
    v = [0.0] * DIM
    for word in re.findall(r"[a-z]+", text.lower()):
        if len(word) < 3:
            continue
        dim = CONCEPTS.get(word)
        if dim is None:
            dim = 8 + int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % (DIM - 8)
        v[dim] += 1.0
    if not any(v):
        v[DIM - 1] = 1.0  # never a zero vector
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def embeddings_reply(vectors: list[list[float]], *, model: str = "concepts") -> Reply:
    """A well-formed ``/v1/embeddings`` answer carrying ``vectors``."""
    return Reply(
        body={
            "object": "list",
            "model": model,
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        }
    )


def concept_embeddings(body: dict[str, Any]) -> Reply:
    """Answer an embeddings request with :func:`concept_vector` of every input."""
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    return embeddings_reply([concept_vector(t) for t in inputs], model=body.get("model", "concepts"))
