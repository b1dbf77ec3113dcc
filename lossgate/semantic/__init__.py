"""Hybrid semantic search (the ``[semantic]`` extra).

Recall with an embedder ranks a query two ways, by the store's full-text index and by
cosine similarity of stored vectors, and fuses the two rankings (reciprocal rank
fusion, :func:`fuse`). Vectors are computed off the append path (:func:`embed_pending`,
run by workers after consolidation) and stored beside the rows they embed; deleted,
revoked and superseded items have none. With a reranker (:mod:`lossgate.semantic.rerankers`:
a ``/v1/rerank`` server or a local cross-encoder), recall then reorders the top of that
ranking by the reranker's scores (:mod:`lossgate.semantic.reorder`).
"""

from lossgate.semantic.embedders import (
    Embedder,
    HttpEmbedder,
    HttpEmbedderConfig,
    LocalEmbedder,
    embedder_from_env,
)
from lossgate.semantic.index import EmbedReport, embed_pending
from lossgate.semantic.ranking import fuse, nearest
from lossgate.semantic.rerankers import (
    CrossEncoderReranker,
    HttpReranker,
    HttpRerankerConfig,
    Reranker,
    reranker_from_env,
)

__all__ = [
    "EmbedReport",
    "Embedder",
    "HttpEmbedder",
    "HttpEmbedderConfig",
    "LocalEmbedder",
    "embed_pending",
    "embedder_from_env",
    "fuse",
    "nearest",
    "Reranker",
    "HttpReranker",
    "HttpRerankerConfig",
    "CrossEncoderReranker",
    "reranker_from_env",
]
