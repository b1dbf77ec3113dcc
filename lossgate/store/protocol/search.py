"""The search tier: full-text search of events and facts, and stored vectors for semantic search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from lossgate.store.protocol.scope import unscoped

__all__ = ["VectorKind", "SearchReadTx", "SearchWriteTx"]

# What a stored vector embeds: an event's text or an active fact's search text.
VectorKind = Literal["event", "fact"]


class SearchReadTx(Protocol):
    """Full-text search and stored vectors.

    **Search covers the fresh tail.** A store may index lazily (off the append path), but
    a search never misses an event because the index has not taken it yet: events past
    the index are matched on the same fields the index covers (an event's text and
    actor), on their raw text. SQLite matches that fresh tail by case-insensitive
    substring, so until the index takes an event, a query word also finds it inside a
    longer word ("fund" finds "refunds") while another inflection of a word does not
    ("refunding" finds "refunds" only once indexed, stemmed). Only valid events and
    active facts match; purged text never does."""

    def search_events(
        self, tenant_id: str, subject_id: str, query: str, *, limit: int, skip_erased: bool = False
    ) -> list[str]:
        """Ids of the subject's valid events matching any word of ``query`` (full-text,
        stemmed), best first. A blank query matches nothing. ``skip_erased`` leaves out an
        event that a deleted fact cites, as :meth:`LedgerReadTx.events` does, before
        ``limit`` counts. A search reads at most about a thousand matches a word, newest
        first: a word in more events than that counts only in its newest ones
        (:mod:`lossgate.store.core.bm25`)."""

    def search_facts(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        """Ids of the subject's active facts whose predicate, value or qualifiers match ``query``, best first."""

    def search_backlog(self, tenant_id: str, subject_id: str) -> int:
        """How many events a search of the subject would match on their raw text because the
        full-text index has not taken them yet (SQLite's index is one for the whole file, so
        its backlog is the file's). :meth:`SearchWriteTx.refresh_search_index` clears it."""

    def vectors(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind) -> list[tuple[str, bytes]]:
        """The subject's stored vectors of ``model`` for ``kind`` (``event`` or ``fact``) as
        ``(item_id, float32 bytes)``. Only valid events and active facts have vectors: the
        schema deletes them with the item's content or validity."""

    def vector_size(self, tenant_id: str, subject_id: str, model: str) -> int | None:
        """The byte length of the subject's stored vectors of ``model`` (all have one), or
        ``None`` when it has none."""

    def vectors_version(self, tenant_id: str, subject_id: str) -> int:
        """A number that changes whenever the subject's stored vectors change (stored, or
        deleted with their item): an in-process copy of them is current while it holds."""

    def unembedded(
        self, tenant_id: str, subject_id: str, model: str, kind: VectorKind, *, after_seq: int, limit: int
    ) -> list[tuple[str, int, str]]:
        """Valid events (``actor: text``) or active facts (their search text) with ``seq >
        after_seq`` and no vector of ``model`` yet, as ``(item_id, seq, text)``, oldest first."""


class SearchWriteTx(SearchReadTx, Protocol):
    """Index maintenance and vector storage."""

    @unscoped
    def refresh_search_index(self) -> int:
        """Bring the full-text index up to date for what this transaction may see (backends that
        index lazily; PostgreSQL indexes the subjects this transaction has locked, as row-level
        security confines it to their tenants). Returns the rows indexed."""

    def put_vectors(
        self, tenant_id: str, subject_id: str, model: str, items: Sequence[tuple[VectorKind, str, bytes]]
    ) -> int:
        """Store ``(kind, item_id, float32 bytes)`` vectors of ``model``. An item that is no
        longer a valid event or an active fact (deleted while it was being embedded) gets no
        vector; one that has a vector already keeps it. Returns how many were stored."""

    def drop_vectors(self, tenant_id: str, subject_id: str, model: str) -> int:
        """Delete the subject's vectors of ``model`` (to embed it again with another model
        of that name); returns how many."""
