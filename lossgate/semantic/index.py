"""Embedding a subject's memory, off the append path.

:func:`embed_pending` finds the subject's valid events and active facts that have no
vector of the embedder's model yet, embeds them in batches outside any transaction (a
model may take seconds), and stores each batch in one short write transaction. The
store keeps only vectors whose item is still embeddable when the batch commits, so an
event deleted or revoked while it was being embedded never gets a vector, and the
schema deletes a vector with its item's content or validity afterwards. Workers run it
after a consolidation job; :meth:`lossgate.Admin.embed` and ``lossgate embed`` run it
on demand. Running it twice does nothing the second time.

What it refuses to store: vectors that are not one finite, non-zero row per text, and
vectors of another size than the subject's stored vectors of the same model (another
model behind the same name: ``rebuild=True`` drops the old ones first). What it skips:
an item the server refuses (HTTP 400, 413 or 422: too long, say) is split out of its
batch and left without a vector, logged, so one item never blocks the subject; it is
tried again on the next run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lossgate.errors import EmbeddingError
from lossgate.semantic.embedders import Embedder, normalised
from lossgate.store import Store
from lossgate.store.protocol import VectorKind

if TYPE_CHECKING:
    import numpy as np

__all__ = ["embed_pending", "EmbedReport"]

log = logging.getLogger(__name__)

_REFUSED = frozenset({400, 413, 422})  # the server refuses the input itself: retrying it as is cannot help


@dataclass
class EmbedReport:
    """What one :func:`embed_pending` run did."""

    stored: int = 0
    dropped: int = 0  # vectors removed first (``rebuild=True``)
    skipped: list[str] = field(default_factory=list)  # ids the server refused


def embed_pending(
    store: Store, embedder: Embedder, tenant_id: str, subject_id: str, *, batch: int = 256, rebuild: bool = False
) -> EmbedReport:
    """Embed what the subject has no vectors for yet (everything, after dropping the
    model's vectors, with ``rebuild``)."""
    report = EmbedReport()
    if rebuild:
        with store.write() as tx:
            tx.lock_clock(tenant_id, subject_id)
            report.dropped = tx.drop_vectors(tenant_id, subject_id, embedder.model)
    with store.read() as tx:
        size = tx.vector_size(tenant_id, subject_id, embedder.model)
    kinds: tuple[VectorKind, ...] = ("fact", "event")
    for kind in kinds:
        after = 0
        while True:
            with store.read() as tx:
                todo = tx.unembedded(tenant_id, subject_id, embedder.model, kind, after_seq=after, limit=batch)
            if not todo:
                break
            rows = []
            for item_id, vector in _embed(embedder, [(i, t) for i, _, t in todo], report):
                data = vector.astype("<f4").tobytes()
                if size is None:
                    size = len(data)
                elif len(data) != size:
                    raise EmbeddingError(
                        f"{embedder.model} now gives {len(data) // 4}-dimensional vectors, but the subject's stored "
                        f"vectors of that model have {size // 4}: another model behind the same name? "
                        "Embed again with rebuild=True (lossgate embed --rebuild)"
                    )
                rows.append((kind, item_id, data))
            if rows:
                with store.write() as tx:
                    tx.lock_clock(tenant_id, subject_id)  # serialised with deletions of the subject
                    report.stored += tx.put_vectors(tenant_id, subject_id, embedder.model, rows)
            after = todo[-1][1]
    return report


def _embed(embedder: Embedder, items: list[tuple[str, str]], report: EmbedReport) -> list[tuple[str, np.ndarray]]:
    """``(item_id, vector)`` for every item the embedder accepts. A batch the server
    refuses is halved until the refused items stand alone; those are skipped."""
    try:
        vectors = normalised(embedder.embed([text for _, text in items]), source=embedder.model, rows=len(items))
    except EmbeddingError as exc:
        if exc.http_status not in _REFUSED:
            raise  # the server is down or broken: every item would fail alike
        if len(items) == 1:
            log.warning("embedding %s: the server refused it, left without a vector: %s", items[0][0], exc)
            report.skipped.append(items[0][0])
            return []
        half = len(items) // 2
        return _embed(embedder, items[:half], report) + _embed(embedder, items[half:], report)
    return [(item_id, vector) for (item_id, _), vector in zip(items, vectors, strict=False)]
