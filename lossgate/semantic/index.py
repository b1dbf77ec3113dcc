"""Embedding a subject's memory, off the append path.

:func:`embed_pending` finds the subject's valid events and active facts that have no
vector of the embedder's model yet, embeds them in batches outside any transaction (a
model may take seconds), and stores each batch in one short write transaction. The
store keeps only vectors whose item is still embeddable when the batch commits, so an
event deleted or revoked while it was being embedded never gets a vector, and the
schema deletes a vector with its item's content or validity afterwards. Workers run it
after a consolidation job; :meth:`lossgate.Memory.embed` and ``lossgate embed`` run it
on demand. Running it twice does nothing the second time.
"""

from __future__ import annotations

from lossgate.semantic.embedders import Embedder
from lossgate.store import Store
from lossgate.store.protocol import VectorKind

__all__ = ["embed_pending"]


def embed_pending(store: Store, embedder: Embedder, tenant_id: str, subject_id: str, *,
                  batch: int = 256) -> int:
    """Embed what the subject has no vectors for yet; returns how many vectors were stored."""
    stored = 0
    kinds: tuple[VectorKind, ...] = ("fact", "event")
    for kind in kinds:
        after = 0
        while True:
            with store.read() as tx:
                todo = tx.unembedded(tenant_id, subject_id, embedder.model, kind, after_seq=after, limit=batch)
            if not todo:
                break
            vectors = embedder.embed([text for _, _, text in todo])
            rows = [(kind, item_id, vector.astype("<f4").tobytes()) for (item_id, _, _), vector in zip(todo, vectors)]
            with store.write() as tx:
                tx.lock_clock(tenant_id, subject_id)  # serialised with deletions of the subject
                stored += tx.put_vectors(tenant_id, subject_id, embedder.model, rows)
            after = todo[-1][1]
    return stored
