"""Rerankers: a query and its candidate texts in, one relevance score per text out.

Recall's first ranking (BM25, fused with vector similarity when there is an embedder)
reads each hit on its own words; a reranker reads the query and a candidate together and
scores how well the one answers the other. Recall hands it the top of its first ranking
and reorders that top by the scores (:mod:`lossgate.semantic.reorder`). Two
implementations ship:

- :class:`HttpReranker` calls a server speaking the ``POST /v1/rerank`` exchange that
  Cohere, Jina, vLLM and others share (``{"model", "query", "documents", "top_n"}`` in,
  ``{"results": [{"index", "relevance_score"}]}`` out), with the retry policy of the other
  HTTP clients here (:mod:`lossgate.runtime.http_json`) inside one short deadline: it is always on
  recall's path.
- :class:`CrossEncoderReranker` runs a sentence-transformers ``CrossEncoder`` on this
  machine's CPU, loaded from a local folder only: a model name that is not a folder is
  refused (:class:`~lossgate.errors.ConfigError`), never downloaded. It needs the
  ``[semantic]`` extra, imported on first use.

A malformed answer (no ``results``, a score that is not a finite number, an index out of
place, another number of scores than documents) raises :class:`~lossgate.errors.RerankError`.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from lossgate.errors import ConfigError, RerankError
from lossgate.runtime.http_json import RetryPolicy, post_json, server_client
from lossgate.semantic.embedders import checked_base_url, hub_offline

__all__ = [
    "Reranker",
    "HttpReranker",
    "HttpRerankerConfig",
    "CrossEncoderReranker",
    "reranker_from_env",
    "RERANK_DEPTH",
    "checked_scores",
]

# How many of the first ranking's hits a reranker reorders, of events and of facts each. A
# cross-encoder reads every candidate with the query, so its cost grows with this; 50 covers
# what a 2,000-token recall shows of its best hits (each brings its neighbours).
RERANK_DEPTH = 50
_INSTALL = "pip install 'lossgate[semantic]'"


class Reranker(Protocol):
    """Scores candidate texts against a query."""

    model: str
    """Names the model (what a recall record says reordered its hits)."""

    depth: int
    """How many of the first ranking's hits, of each kind, it is handed."""

    def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float]:
        """One score per document, in the documents' order; higher is more relevant."""


def checked_scores(scores: Any, expected: int, *, source: str) -> list[float]:
    """``scores`` as a list of ``expected`` finite floats, or a :class:`RerankError` saying
    what is wrong with them (a reranker's answer is never trusted to be well formed)."""
    try:
        values = list(scores)
    except TypeError as exc:
        raise RerankError(f"{source}: the scores are not a list", reason="malformed answer") from exc
    if len(values) != expected:
        raise RerankError(f"{source}: {len(values)} scores for {expected} documents", reason="wrong number of scores")
    out: list[float] = []
    for value in values:
        if isinstance(value, bool) or (not isinstance(value, (int, float)) and not hasattr(value, "__float__")):
            raise RerankError(f"{source}: a score is not a number", reason="malformed answer")
        number = float(value)
        if not math.isfinite(number):
            raise RerankError(f"{source}: a score is NaN or infinite", reason="malformed answer")
        out.append(number)
    return out


class HttpRerankerConfig(BaseModel):
    """Where the rerank server is and how to talk to it."""

    model_config = ConfigDict(frozen=True)

    base_url: str = Field(description="The API root, e.g. http://127.0.0.1:8000/v1 (the request goes to <root>/rerank)")
    model: str = Field(min_length=1)
    api_key: SecretStr | None = None
    timeout_s: float = Field(
        default=2.0,
        gt=0,
        description="For one recall's request, retries included: past it recall keeps its first ranking.",
    )
    max_retries: int = Field(default=1, ge=0)
    backoff_s: float = Field(default=0.1, ge=0)
    max_backoff_s: float = Field(default=1.0, ge=0)
    max_chars: int = Field(default=2_000, ge=1, description="Longer texts are cut (many models read 512 tokens).")
    depth: int = Field(default=RERANK_DEPTH, ge=1, le=1_000)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return checked_base_url(value)


def _failure_kind(exc: RerankError) -> str:
    """What went wrong in a few words, from :func:`~lossgate.runtime.http_json.post_json`'s error
    (its message starts with the kind; the rest may hold the server's words)."""
    if exc.http_status is not None:
        return f"HTTP {exc.http_status}"
    message = str(exc)
    for start, kind in (
        ("timeout", "timeout"),
        ("cannot reach", "unreachable"),
        ("bad URL", "bad URL"),
        ("invalid response", "malformed answer"),
    ):
        if message.startswith(start):
            return kind
    return "error"


class HttpReranker:
    """Scores from a ``/v1/rerank`` server (Cohere, Jina, vLLM and compatible)."""

    def __init__(self, config: HttpRerankerConfig, *, client: httpx.Client | None = None) -> None:
        self.config = config
        self.model = config.model
        self.depth = config.depth
        self.max_chars = config.max_chars
        self._policy = RetryPolicy(config.timeout_s, config.max_retries, config.backoff_s, config.max_backoff_s)
        self._client = client or server_client(config.base_url, config.api_key, config.timeout_s)

    def close(self) -> None:
        self._client.close()

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        payload = {
            "model": self.model,
            "query": query[: self.max_chars],
            "documents": [d[: self.max_chars] for d in documents],
            "top_n": len(documents),
        }
        try:
            data = post_json(self._client, "rerank", payload, policy=self._policy, error=RerankError)
        except RerankError as exc:
            exc.reason = exc.reason or _failure_kind(exc)
            raise
        return self._scores(data, len(documents))

    def _scores(self, data: dict[str, Any], expected: int) -> list[float]:
        results = data.get("results")
        if not isinstance(results, list):
            raise RerankError("invalid response: missing field results (a list)", reason="malformed answer")
        if len(results) != expected:
            raise RerankError(
                f"invalid response: {len(results)} scores for {expected} documents", reason="wrong number of scores"
            )
        ordered: list[Any] = [None] * expected
        for position, item in enumerate(results):
            index = item.get("index") if isinstance(item, dict) else None
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < expected
                or ordered[index] is not None
            ):
                raise RerankError(
                    f"invalid response: results[{position}].index {index!r} is out of place", reason="malformed answer"
                )
            score = item.get("relevance_score")
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise RerankError(
                    f"invalid response: results[{position}].relevance_score is not a number", reason="malformed answer"
                )
            ordered[index] = score
        return checked_scores(ordered, expected, source=f"{self.model}: invalid response")


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` from a local folder, on this machine's CPU.

    ``path`` must be a folder holding the model (as ``CrossEncoder.save`` or a hub snapshot
    leaves it); anything else, a hub model name included, is a :class:`ConfigError`: nothing
    is downloaded. Its ``model`` name is ``local:<folder name>`` unless ``model`` is given.
    ``threads`` sets torch's (process-wide) thread count; ``None`` leaves it alone. The
    model loads on first use.
    """

    def __init__(
        self,
        path: str,
        *,
        model: str | None = None,
        depth: int = RERANK_DEPTH,
        max_chars: int = 2_000,
        batch_size: int = 32,
        device: str = "cpu",
        threads: int | None = 1,
    ) -> None:
        if not os.path.isdir(path):
            raise ConfigError(
                f"no cross-encoder folder at {path!r}: the local reranker loads a model from a folder "
                "on this machine only, never by name from a hub (save the model to a folder first)"
            )
        for name, value in (("depth", depth), ("max_chars", max_chars), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"cross-encoder {name} must be a whole number from 1, not {value!r}")
        hub_offline()
        self.model = model or f"local:{os.path.basename(os.path.normpath(path))}"
        self.depth, self.max_chars, self.batch_size = depth, max_chars, batch_size
        self._path, self._device, self._threads = path, device, threads
        self._ce: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._ce is None:
                try:
                    from sentence_transformers import CrossEncoder
                    from transformers.utils import logging as transformers_logging
                except ImportError as exc:
                    raise ConfigError(f"the local reranker needs sentence-transformers: {_INSTALL}") from exc
                if self._threads is not None:
                    import torch  # one thread: see LocalEmbedder (two spin on each other on a busy machine)

                    torch.set_num_threads(self._threads)
                # transformers leaves it unannotated
                transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                self._ce = CrossEncoder(self._path, device=self._device, local_files_only=True)
            return self._ce

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        q = query[: self.max_chars]
        scores = self._loaded().predict(
            [(q, d[: self.max_chars]) for d in documents],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        if getattr(scores, "ndim", 1) != 1:  # a model with several labels scores classes, not relevance
            raise RerankError(
                f"{self.model}: gives {getattr(scores, 'shape', '?')} scores, not one per document",
                reason="wrong number of scores",
            )
        return checked_scores(
            scores.tolist() if hasattr(scores, "tolist") else scores, len(documents), source=self.model
        )


def reranker_from_env(
    environ: Mapping[str, str], prefix: str = "LOSSGATE_RERANKER", *, names: tuple[str, str] | None = None
) -> Reranker | None:
    """The reranker that ``LOSSGATE_RERANKER`` in ``environ`` names (the CLI and the service
    pass ``os.environ``), or ``None`` when it is unset.

    An ``http(s)://`` URL is :class:`HttpReranker`, with ``LOSSGATE_RERANKER_MODEL``
    (required), ``LOSSGATE_RERANKER_API_KEY`` and ``LOSSGATE_RERANKER_TIMEOUT`` (seconds per
    recall); anything else is the folder of a local :class:`CrossEncoderReranker`
    (``LOSSGATE_RERANKER_MODEL`` then names it in recall records). For either,
    ``LOSSGATE_RERANKER_DEPTH`` sets how many hits of each kind it reorders and
    ``LOSSGATE_RERANKER_MAX_CHARS`` where a text is cut.
    ``names`` are what an error calls the first two settings (default: the variables'
    names; the CLI passes its flags').
    """
    where = environ.get(prefix, "").strip()
    if not where:
        return None
    spec_name, model_name = names or (prefix, prefix + "_MODEL")
    depth, cut = environ.get(prefix + "_DEPTH"), environ.get(prefix + "_MAX_CHARS")
    if not where.startswith(("http://", "https://")):
        try:
            return CrossEncoderReranker(
                where,
                model=environ.get(prefix + "_MODEL") or None,
                depth=_whole(depth, prefix + "_DEPTH") if depth else RERANK_DEPTH,
                max_chars=_whole(cut, prefix + "_MAX_CHARS") if cut else 2_000,
            )
        except ConfigError as exc:
            raise ConfigError(
                f"{spec_name} is a rerank server's http(s):// URL or a cross-encoder's folder: {exc}"
            ) from exc
    model = environ.get(prefix + "_MODEL")
    if not model:
        raise ConfigError(f"{model_name} names the model the server at {spec_name} should use")
    fields: dict[str, Any] = {"base_url": where, "model": model, "api_key": environ.get(prefix + "_API_KEY")}
    for env, name in (("_MAX_CHARS", "max_chars"), ("_TIMEOUT", "timeout_s"), ("_DEPTH", "depth")):
        if value := environ.get(prefix + env):
            fields[name] = value
    try:
        config = HttpRerankerConfig(**fields)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise ConfigError(f"reranker setting {problem['loc'][0]}: {problem['msg']}") from exc
    return HttpReranker(config)


def _whole(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {value!r}") from None
