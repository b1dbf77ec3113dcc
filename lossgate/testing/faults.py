"""Storage faults for tests: a real store whose write path damages what it stores.

:class:`FaultyCodec` wraps any store (SQLite or PostgreSQL, unchanged underneath) and
encodes every artifact it writes with one defect: each boolean claim value is stored as
its string (``False`` becomes ``"false"``), the representation loss seed 000 describes. Reads
go through the real store untouched, so what comes back is what a faulty storage layer
would have kept. Used to prove that read-back verification (:mod:`lossgate.readback`)
refuses to publish such an artifact.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lossgate.derived import Artifact, LineageEdge

__all__ = ["FaultyCodec"]


class FaultyCodec:
    """A store whose artifact encoder turns boolean claim values into strings on write."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self._store.write() as tx:
            yield _FaultyTx(tx)


class _FaultyTx:
    def __init__(self, tx: Any) -> None:
        self._tx = tx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def insert_artifact(self, artifact: Artifact, edges: Sequence[LineageEdge]) -> None:
        claims = tuple(c.model_copy(update={"value": str(c.value).lower()})
                       if c.value_type == "bool" and isinstance(c.value, bool) else c for c in artifact.body.claims)
        self._tx.insert_artifact(artifact.model_copy(update={"body": artifact.body.model_copy(update={"claims": claims})}),
                                 edges)
