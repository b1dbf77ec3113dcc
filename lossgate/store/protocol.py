"""The storage contract every backend implements.

A store hands out transactions. Domain code (the ledger, consolidation,
publication) composes the typed primitives of one transaction into an
operation, so a composite change (supersede a fact, resolve its conflicts,
bump the epoch, mark descendants stale) commits or rolls back as one.
No SQL exists outside ``lossgate.store``.

Every primitive takes ``tenant_id`` and ``subject_id`` and returns only rows
of that subject (invariant 7); the only exceptions are the idempotency
look-ups, which answer "is this id taken in this tenant" without returning
content, and :meth:`ReadTx.subjects`, the explicit admin listing.

Backends translate their driver's exceptions into :mod:`lossgate.errors` at
one choke point, the transaction context manager.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, Sequence

from lossgate.derived import (
    Alias,
    Artifact,
    ArtifactHead,
    Attempt,
    ExpectedAlias,
    Job,
    LineageEdge,
    RecallRecord,
)
from lossgate.records import (
    ArtifactBody,
    Clock,
    Conflict,
    Event,
    EventState,
    Fact,
    FactStatus,
    LedgerEntry,
    NewEvent,
    Proposal,
    Trust,
)

__all__ = ["Store", "ReadTx", "WriteTx", "IdTaken", "FactFilter", "CompactReport", "VectorKind"]

# (subject_id, content_hash, trust or status) of an id already present in the tenant.
IdTaken = tuple[str, str, str]
# What a stored vector embeds: an event's text or an active fact's search text.
VectorKind = Literal["event", "fact"]


@dataclass(frozen=True, slots=True)
class FactFilter:
    """The filters of :meth:`ReadTx.facts`, for reading several fact sets at once
    (:meth:`ReadTx.fact_sets`)."""

    ids: Sequence[str] | None = None
    statuses: Sequence[FactStatus] | None = None
    predicate: str | None = None
    through_seq: int | None = None
    criticalities: Sequence[str] | None = None
    limit: int | None = None
    newest_first: bool = False


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What :meth:`Store.compact` did: its steps in order, how long it took, and the size of
    the database's files before and after (``None`` where a store cannot tell)."""

    steps: tuple[str, ...]
    seconds: float
    bytes_before: int | None = None
    bytes_after: int | None = None


class ReadTx(Protocol):
    """A consistent read view (one snapshot of the database)."""

    def clock(self, tenant_id: str, subject_id: str) -> Clock:
        """The subject's clock; a zero clock if the subject has never been written."""

    def events(
        self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
        states: Sequence[EventState] | None = None, after_seq: int | None = None,
        through_seq: int | None = None, limit: int | None = None, newest_first: bool = False,
        seqs: Sequence[int] | None = None,
    ) -> list[Event]:
        """Events of one subject in seq order (or newest first), filtered by id, state, seq
        range and exact seqs, at most ``limit``."""

    def facts(
        self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
        statuses: Sequence[FactStatus] | None = None, predicate: str | None = None,
        through_seq: int | None = None, criticalities: Sequence[str] | None = None,
        limit: int | None = None, newest_first: bool = False,
    ) -> list[Fact]:
        """Facts of one subject in seq order (or newest first), filtered by id, status,
        predicate, seq and criticality, at most ``limit``."""

    def fact_sets(self, tenant_id: str, subject_id: str, filters: Sequence[FactFilter]) -> list[list[Fact]]:
        """:meth:`facts` for each filter, in order; PostgreSQL sends them in one round trip."""

    def facts_citing(self, tenant_id: str, subject_id: str, event_ids: Sequence[str], *,
                     statuses: Sequence[FactStatus] | None = None) -> list[Fact]:
        """Facts of one subject that list any of ``event_ids`` among their sources (only those in
        ``statuses``, if given)."""

    def conflicts(
        self, tenant_id: str, subject_id: str, *, unresolved_only: bool = False,
        fact_id: str | None = None,
    ) -> list[Conflict]:
        """Conflicts of one subject, oldest first; optionally only those involving ``fact_id``."""

    def log(self, tenant_id: str, subject_id: str, *, target_ids: Sequence[str] | None = None) -> list[LedgerEntry]:
        """The subject's operation log, oldest first."""

    def taken_event_ids(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, IdTaken]:
        """For each id already used in the tenant: (subject, content hash, trust)."""

    def taken_fact_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, IdTaken]:
        """For each id already used in the tenant: (subject, content hash, status)."""

    def registry_document(self, version: int | None = None) -> dict[str, Any] | None:
        """The stored predicate registry (latest version by default), or ``None``."""

    def latest_registry_version(self) -> int | None:
        """The newest stored registry version, or ``None`` if none was ever loaded."""

    def subjects(self, tenant_id: str) -> list[str]:
        """Admin listing: every subject of a tenant that has a clock."""

    # -- derived layer ---------------------------------------------------------------
    def alias(self, tenant_id: str, subject_id: str) -> Alias:
        """The subject's alias; an empty one (no artifact, epoch 0, covers 0) if never published."""

    def artifact(self, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact | None:
        """One artifact of the subject, in any state."""

    def recall_head(self, tenant_id: str, subject_id: str) -> tuple[Clock, Alias, ArtifactHead | None]:
        """The clock, the alias and the head of the artifact it points at, read together
        (recall's first step, in one statement where the backend can)."""

    def artifact_head(self, tenant_id: str, subject_id: str, artifact_id: str) -> ArtifactHead | None:
        """State, summary and open items of one artifact (the recall hot path: no manifest)."""

    def artifacts(self, tenant_id: str, subject_id: str, *, states: Sequence[str] | None = None) -> list[Artifact]:
        """The subject's artifacts, oldest first."""

    def lineage(self, tenant_id: str, subject_id: str, artifact_id: str) -> list[LineageEdge]:
        """What ``artifact_id`` was derived from."""

    def descendants(self, tenant_id: str, subject_id: str, input_ids: Sequence[str]) -> list[str]:
        """Ids of every artifact derived, directly or through other artifacts, from any of ``input_ids``."""

    def attempts(self, tenant_id: str, subject_id: str) -> list[Attempt]:
        """Every consolidation attempt of the subject, in order."""

    def search_events(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        """Ids of the subject's valid events matching ``query`` (full-text), best first."""

    def search_facts(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        """Ids of the subject's active facts whose predicate, value or qualifiers match ``query``, best first."""

    def recalls(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[RecallRecord]:
        """The subject's most recent recall records, newest first."""

    def search_backlog(self, tenant_id: str, subject_id: str) -> int:
        """How many events a search of the subject would match on their raw text because the
        full-text index has not taken them yet (SQLite's index is one for the whole file, so
        its backlog is the file's). :meth:`WriteTx.refresh_search_index` clears it."""

    def recalls_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[RecallRecord]:
        """The subject's recall records that still hold a query and touched any of ``ids``: a
        candidate id among them, or (in summary mode) the alias's artifact among them. Reads
        every recall record of the subject; deletions are rare, recalls are not."""

    def vectors(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind) -> list[tuple[str, bytes]]:
        """The subject's stored vectors of ``model`` for ``kind`` (``event`` or ``fact``) as
        ``(item_id, float32 bytes)``. Only valid events and active facts have vectors: the
        schema deletes them with the item's content or validity."""

    def proposals(self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
                  statuses: Sequence[str] | None = None) -> list[Proposal]:
        """The subject's extraction proposals, oldest first (only ``ids`` / ``statuses`` if given)."""

    def extracted_through(self, tenant_id: str, subject_id: str) -> int:
        """The seq up to which the subject's events have been read by the extractor."""

    def vector_size(self, tenant_id: str, subject_id: str, model: str) -> int | None:
        """The byte length of the subject's stored vectors of ``model`` (all have one), or
        ``None`` when it has none."""

    def vectors_version(self, tenant_id: str, subject_id: str) -> int:
        """A number that changes whenever the subject's stored vectors change (stored, or
        deleted with their item): an in-process copy of them is current while it holds."""

    def unembedded(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind, *,
                   after_seq: int, limit: int) -> list[tuple[str, int, str]]:
        """Valid events (``actor: text``) or active facts (their search text) with ``seq >
        after_seq`` and no vector of ``model`` yet, as ``(item_id, seq, text)``, oldest first."""

    def jobs(self, tenant_id: str, subject_id: str | None, *, statuses: Sequence[str] | None = None) -> list[Job]:
        """The subject's rebuild jobs, oldest first, optionally of some statuses. With
        ``subject_id=None`` an admin listing of the whole tenant (``review`` jobs: the
        subjects a person must look at)."""


class WriteTx(ReadTx, Protocol):
    """A serialisable read-write transaction."""

    def lock_clock(self, tenant_id: str, subject_id: str) -> Clock:
        """Lock the subject's clock row for this transaction (creating it) and return it."""

    def save_clock(self, clock: Clock) -> None:
        """Write a clock previously returned by :meth:`lock_clock`."""

    def insert_events(self, items: Sequence[tuple[NewEvent, int, str, str]], *, recorded_at: datetime) -> None:
        """Insert new events as (event, seq, content hash, ISO occurred_at); ids and seqs are
        already checked free.

        Takes the caller's :class:`NewEvent` rather than a built :class:`Event`: appends are the
        hot path, and building a model per row would cost more than the insert itself."""

    def set_event_state(self, tenant_id: str, subject_id: str, event_id: str, state: EventState, *, purge: bool) -> None:
        """Change an event's state; ``purge`` erases its text and payload (id and hash stay)."""

    def set_event_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust) -> None:
        """Change an event's trust level."""

    def insert_facts(self, facts: Sequence[Fact]) -> None:
        """Insert new facts and their source links."""

    def update_fact(
        self, tenant_id: str, subject_id: str, fact_id: str, *, status: FactStatus,
        superseded_by: str | None = None, purge: bool = False,
    ) -> None:
        """Change a fact's status; ``purge`` erases its value and qualifiers."""

    def insert_conflict(self, conflict: Conflict) -> None:
        """Record a new unresolved conflict."""

    def resolve_conflict(self, tenant_id: str, subject_id: str, conflict_id: str, *, at: datetime, resolution: str) -> None:
        """Mark a conflict resolved, saying how."""

    def add_log(self, tenant_id: str, subject_id: str, *, at: datetime, op: str, target_id: str, detail: dict[str, Any]) -> None:
        """Append a line to the subject's operation log."""

    # -- derived layer ---------------------------------------------------------------
    def lock_alias(self, tenant_id: str, subject_id: str) -> Alias:
        """Lock the subject's alias row for this transaction (creating it) and return it."""

    def cas_alias(
        self, tenant_id: str, subject_id: str, *, expected: ExpectedAlias, artifact_id: str,
        source_epoch: int, covers_through: int, at: datetime,
    ) -> bool:
        """Compare-and-swap the alias: succeeds (True) only if it still equals ``expected`` and
        ``covers_through`` does not regress. Exactly one row changes or none does."""

    def insert_artifact(self, artifact: Artifact, edges: Sequence[LineageEdge]) -> None:
        """Store an artifact with its manifest and lineage edges."""

    def set_artifact_state(
        self, tenant_id: str, subject_id: str, artifact_ids: Sequence[str], state: str, *, reason: str,
        from_states: Sequence[str] | None = None,
    ) -> list[str]:
        """Move artifacts to ``state`` (published, retired, stale, failed, abandoned), only those
        currently in ``from_states`` if given. Returns the ids that moved."""

    def refresh_search_index(self) -> int:
        """Bring the full-text index up to date for what this transaction may see (backends that
        index lazily; PostgreSQL indexes the subjects this transaction has locked, as row-level
        security confines it to their tenants). Returns the rows indexed."""

    def put_vectors(self, tenant_id: str, subject_id: str, model: str,
                    items: Sequence[tuple[VectorKind, str, bytes]]) -> int:
        """Store ``(kind, item_id, float32 bytes)`` vectors of ``model``. An item that is no
        longer a valid event or an active fact (deleted while it was being embedded) gets no
        vector; one that has a vector already keeps it. Returns how many were stored."""

    def save_proposals(self, proposals: Sequence[Proposal]) -> None:
        """Insert proposals, or replace stored ones with the same id (their outcome changed)."""

    def set_extracted_through(self, tenant_id: str, subject_id: str, seq: int) -> None:
        """Record that the subject's events up to ``seq`` have been read by the extractor."""

    def drop_vectors(self, tenant_id: str, subject_id: str, model: str) -> int:
        """Delete the subject's vectors of ``model`` (to embed it again with another model
        of that name); returns how many."""

    def save_attempt(self, attempt: Attempt) -> None:
        """Insert or replace an attempt record (by attempt id)."""

    def replace_artifact_body(self, tenant_id: str, subject_id: str, artifact_id: str, body: ArtifactBody,
                              gate: dict[str, Any] | None = None) -> None:
        """Overwrite an artifact's body, and its gate report when ``gate`` is given (used only to
        purge deleted content; manifest and lineage stay)."""

    def cancel_pending_jobs(self, tenant_id: str, subject_id: str, *, at: datetime, reason: str) -> int:
        """Mark the subject's pending jobs, and those waiting for review, done (a publication
        already covers them); returns how many."""

    def insert_recall(self, record: RecallRecord) -> None:
        """Persist the evidence of one recall."""

    def replace_recall(self, record: RecallRecord) -> None:
        """Overwrite a stored recall record (same tenant and recall id); used to redact it."""

    def set_tier(self, tenant_id: str, subject_id: str, *, through_seq: int, tier: str) -> int:
        """Move the subject's events with seq <= ``through_seq`` to ``tier``; return how many moved."""

    def enqueue_job(self, tenant_id: str, subject_id: str, *, reason: str, run_after: datetime, at: datetime) -> bool:
        """Queue a rebuild unless one is already pending for the subject (True if queued)."""

    def claim_job(self, *, owner: str, lease_seconds: float, now: datetime) -> Job | None:
        """Claim the oldest due pending job, or one whose lease expired, for ``owner``.
        Admin-level: the only primitive that is not scoped to one subject."""

    def heartbeat_job(self, job_id: int, *, owner: str, lease_expires_at: datetime) -> bool:
        """Extend ``owner``'s lease on a running job; False if the lease was lost."""

    def finish_job(self, tenant_id: str, subject_id: str, job_id: int, *, owner: str, status: str,
                   at: datetime, run_after: datetime | None = None) -> bool:
        """Release a claimed job as done, review or pending again (retry at ``run_after``).
        False if ``owner`` no longer holds the lease."""

    def save_registry(self, version: int, document: dict[str, Any], content_hash: str) -> bool:
        """Store a registry version; False if that version already exists with this hash.

        Raises :class:`~lossgate.errors.IdempotencyConflict` if it exists with another hash.
        """


class Store(Protocol):
    """A lossgate database."""

    url: str

    def migrate(self) -> int:
        """Bring the schema to the latest version (idempotent); return that version."""

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
        WAL segments, archives and replicas is the operator's retention (see the README).
        Takes the write lock for its duration; raises :class:`~lossgate.errors.StoreBusy`
        if another connection kept the WAL from being truncated."""

    def close(self) -> None:
        """Release connections."""
