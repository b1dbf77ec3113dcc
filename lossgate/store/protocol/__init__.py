"""The storage contract every backend implements, in seven tiers: one module each.

A store hands out transactions. Domain code (the ledger, consolidation,
publication) composes the typed primitives of one transaction into an
operation, so a composite change (supersede a fact, resolve its conflicts,
bump the epoch, mark descendants stale) commits or rolls back as one.
No SQL exists outside ``lossgate.store``.

The primitives come in tiers by capability, each a read half and a write half, each
in its own module of this package (the names are all importable from here):

* **ledger** (:mod:`.ledger`: :class:`LedgerReadTx`, :class:`LedgerWriteTx`): the
  per-subject clock, the append-only events, the facts with their lifecycle,
  conflicts, the operation log and the predicate registry. Everything else rests on it.
* **tenant** (:mod:`.tenant`: :class:`TenantReadTx`, :class:`TenantWriteTx`): a
  tenant's taint policies and the events one reaches, its settings record, the tier
  reads and moves of demotion, the daily fidelity metrics.
* **derived** (:mod:`.derived`: :class:`DerivedReadTx`, :class:`DerivedWriteTx`):
  artifacts with their manifests and lineage, the alias and its compare-and-swap,
  attempts, the artifacts' stored documents, extraction proposals.
* **evidence** (:mod:`.evidence`: :class:`EvidenceReadTx`, :class:`EvidenceWriteTx`):
  recall records, guard results and response records.
* **queue** (:mod:`.queue`: :class:`QueueReadTx`, :class:`QueueWriteTx`): rebuild
  jobs, their claims and leases.
* **search** (:mod:`.search`: :class:`SearchReadTx`, :class:`SearchWriteTx`):
  full-text search of events and facts, and stored vectors for semantic search.
* **access** (:mod:`.access`: :class:`AccessReadTx`, :class:`AccessWriteTx`): the HTTP
  service's API keys and idempotency records (:mod:`lossgate.model.api_keys`).

:class:`ReadTx` and :class:`WriteTx` are all seven together (:data:`TIERS` names
them in order); lossgate needs every tier. What each primitive touches is declared
beside it (:mod:`.scope`). ``lossgate.testing.store_contract`` is the test suite that
proves a store keeps the rules below, one test class per tier; run it against a new
store (docs/writing-a-store.md).

Rules every store keeps
-----------------------

**Scope** (invariant 7). A primitive reads and writes only rows of the tenant and
subject it names, and returns only those. The exceptions say so: the idempotency
look-ups (:meth:`LedgerReadTx.taken_event_ids`) answer "is this id taken in this
tenant" without returning content; :meth:`LedgerReadTx.subjects`,
``jobs(tenant, None)``, :meth:`DerivedReadTx.artifact_ids` and
:meth:`DerivedReadTx.artifact_documents` are admin listings of one tenant; the registry is global;
:meth:`QueueWriteTx.claim_job` is the worker's claim across tenants;
:meth:`AccessReadTx.api_key_by_hash` is authentication, which finds a key's tenant. Which subject a
primitive touches is read from its arguments: ``(tenant_id, subject_id, ...)`` by
default, otherwise as its declaration here says (:func:`subject_of`,
:func:`subjects_of`, :func:`tenant_of`, :func:`locks_itself`, :func:`unscoped`).

**Per-subject serialisation: the subject is locked on first touch.** Within a write
transaction, the first primitive that names a subject (reading or writing it) makes
every other write transaction that touches the subject wait until this one ends, so
that whatever the transaction read about the subject is still true when it
commits; this holds for a subject never written too (it has no row to lock yet).
Writers of different subjects may run in parallel (PostgreSQL: a transaction-level
advisory lock keyed by tenant and subject, taken before the subject's clock row) or
one at a time (SQLite: one writer lock for the file, taken at ``BEGIN IMMEDIATE``). A primitive declared :func:`tenant_of` does not lock
the subject (a recall's evidence, a job listing): where writers of one subject are
serialised apart from the rest, it never waits for them.

**Errors** leave a store as :mod:`lossgate.errors`, translated at one choke point (the
transaction context manager): an integrity violation is
:class:`~lossgate.errors.IdempotencyConflict`, a lock or serialisation failure
:class:`~lossgate.errors.StoreBusy`, anything else :class:`~lossgate.errors.StoreError`.
A write transaction commits on normal exit and rolls back on an exception; never a
commit around a database error the body caught: a transaction in which any statement
failed rolls back at exit and raises :class:`~lossgate.errors.StoreError`, even if the
body caught the error.

**Instants.** The times a store compares or sorts (artifacts' ``created_at``, recall
records', guard results' and response records' ``at``, jobs' ``run_after`` and leases, conflicts' ``detected_at``, attempts'
``started_at``, proposals' ``created_at``, events' ``recorded_at`` in the tier reads, daily
metrics' ``recorded_at``) are instants: a caller may give them with any UTC offset, and
they order as time (SQLite stores them as ISO text in UTC; they read back in UTC).
Caller-supplied domain times (``occurred_at``, ``valid_from``) keep their offset
(invariant 9) and are never compared by a store.

**Order.** Every list comes in the order its primitive states. Where that order is a
timestamp that two rows can share (artifacts' ``created_at``, recall records', guard
results' and response records' ``at``, jobs' ``run_after`` when claiming), the row created first comes first (last, in a
newest-first list): creation order breaks the tie, not the id, which callers choose.
Where a primitive names an id as its tie-break (conflicts, proposals), the id breaks it,
compared bytewise.

Each tier's own rules are on its classes.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from lossgate.model.derived_records import RecallRecord
from lossgate.store.protocol.access import AccessReadTx, AccessWriteTx
from lossgate.store.protocol.derived import ArtifactDocument, DerivedReadTx, DerivedWriteTx
from lossgate.store.protocol.evidence import EvidenceReadTx, EvidenceWriteTx
from lossgate.store.protocol.ledger import FactFilter, IdTaken, LedgerReadTx, LedgerWriteTx
from lossgate.store.protocol.queue import QueueReadTx, QueueWriteTx
from lossgate.store.protocol.scope import (
    SUBJECT,
    Touch,
    locks_itself,
    subject_of,
    subjects_of,
    tenant_of,
    touch_of,
    unscoped,
)
from lossgate.store.protocol.search import SearchReadTx, SearchWriteTx, VectorKind
from lossgate.store.protocol.tenant import TenantReadTx, TenantWriteTx

__all__ = [
    "Store",
    "ReadTx",
    "WriteTx",
    "IdTaken",
    "FactFilter",
    "CompactReport",
    "VectorKind",
    "ArtifactDocument",
    "LedgerReadTx",
    "LedgerWriteTx",
    "TenantReadTx",
    "TenantWriteTx",
    "DerivedReadTx",
    "DerivedWriteTx",
    "EvidenceReadTx",
    "EvidenceWriteTx",
    "QueueReadTx",
    "QueueWriteTx",
    "SearchReadTx",
    "SearchWriteTx",
    "AccessReadTx",
    "AccessWriteTx",
    "TIERS",
    "Touch",
    "SUBJECT",
    "touch_of",
    "primitives",
    "subject_of",
    "subjects_of",
    "tenant_of",
    "locks_itself",
    "unscoped",
]


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What :meth:`Store.compact` did: its steps in order, how long it took, and the size of
    the database's files before and after (``None`` where a store cannot tell)."""

    steps: tuple[str, ...]
    seconds: float
    bytes_before: int | None = None
    bytes_after: int | None = None


class ReadTx(
    LedgerReadTx, TenantReadTx, DerivedReadTx, EvidenceReadTx, QueueReadTx, SearchReadTx, AccessReadTx, Protocol
):
    """A consistent read view (one snapshot of the database): every tier's reads."""


class WriteTx(
    ReadTx,
    LedgerWriteTx,
    TenantWriteTx,
    DerivedWriteTx,
    EvidenceWriteTx,
    QueueWriteTx,
    SearchWriteTx,
    AccessWriteTx,
    Protocol,
):
    """A read-write transaction, serialised per subject (see the module's rules): every
    tier's reads and writes."""


# The tiers in the order a store is built: (read half, write half) by name. The ledger
# comes first; every other tier's rows belong to its subjects.
TIERS: dict[str, tuple[type, type]] = {
    "ledger": (LedgerReadTx, LedgerWriteTx),
    "tenant": (TenantReadTx, TenantWriteTx),
    "derived": (DerivedReadTx, DerivedWriteTx),
    "evidence": (EvidenceReadTx, EvidenceWriteTx),
    "queue": (QueueReadTx, QueueWriteTx),
    "search": (SearchReadTx, SearchWriteTx),
    "access": (AccessReadTx, AccessWriteTx),
}


def primitives(protocol: type) -> dict[str, Callable[..., Any]]:
    """The public methods of a protocol class of this package (with those it inherits from
    the package's others), by name."""
    return {
        name: member
        for klass in reversed(protocol.__mro__)
        if klass.__module__.startswith(__name__)
        for name, member in vars(klass).items()
        if callable(member) and not name.startswith("_")
    }


class Store(Protocol):
    """A lossgate database."""

    url: str

    def migrate(self) -> int:
        """Bring the schema to the latest version (idempotent, and safe when several processes
        migrate at once); return that version."""

    def schema_version(self) -> int:
        """The schema version the database is at (0 when uninitialised)."""

    def read(self) -> AbstractContextManager[ReadTx]:
        """A read transaction over one consistent snapshot."""

    def write(self) -> AbstractContextManager[WriteTx]:
        """A write transaction; commits on normal exit, rolls back on exception."""

    def record_recall(self, record: RecallRecord) -> None:
        """Persist the evidence of one recall in its own transaction (one round trip on
        PostgreSQL: recall latency is mostly round trips)."""

    def compact(self) -> CompactReport:
        """The maintenance after which deleted text is gone from the database's files, not
        only from its rows (invariant 13). SQLite: merge the full-text indexes (dropping
        the entries of purged text), ``VACUUM`` (rebuilding the file from live rows only)
        and truncate the WAL. PostgreSQL: ``VACUUM`` the lossgate tables; what stays in
        WAL segments, archives and replicas is the operator's retention (docs/concepts/deletion.md).
        Takes the write lock for its duration; raises :class:`~lossgate.errors.StoreBusy`
        if another connection kept the WAL from being truncated."""

    def close(self) -> None:
        """Release connections."""
