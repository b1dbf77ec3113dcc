"""The storage contract every backend implements, in five tiers.

A store hands out transactions. Domain code (the ledger, consolidation,
publication) composes the typed primitives of one transaction into an
operation, so a composite change (supersede a fact, resolve its conflicts,
bump the epoch, mark descendants stale) commits or rolls back as one.
No SQL exists outside ``lossgate.store``.

The primitives come in tiers by capability, each a read half and a write half:

* **ledger** (:class:`LedgerReadTx`, :class:`LedgerWriteTx`): the per-subject
  clock, the append-only events, the facts with their lifecycle, conflicts, the
  operation log and the predicate registry. Everything else rests on it.
* **derived** (:class:`DerivedReadTx`, :class:`DerivedWriteTx`): artifacts with
  their manifests and lineage, the alias and its compare-and-swap, attempts,
  recall records, guard results and response records, extraction proposals and the
  daily fidelity metrics.
* **queue** (:class:`QueueReadTx`, :class:`QueueWriteTx`): rebuild jobs, their
  claims and leases.
* **search** (:class:`SearchReadTx`, :class:`SearchWriteTx`): full-text search
  of events and facts, and stored vectors for semantic search.
* **access** (:class:`AccessReadTx`, :class:`AccessWriteTx`): the HTTP service's API
  keys and idempotency records (:mod:`lossgate.access`).

:class:`ReadTx` and :class:`WriteTx` are all five together; lossgate needs every
tier. ``lossgate.testing.store_contract`` is the test suite that proves a store
keeps the rules below; run it against a new store (docs/writing-a-store.md).

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

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, Protocol, Sequence, TypeVar

from lossgate.access import ApiKey, IdempotencyRecord
from lossgate.derived import (
    Alias,
    Artifact,
    ArtifactHead,
    ArtifactState,
    Attempt,
    DailyMetric,
    Lane,
    ExpectedAlias,
    GuardResult,
    Job,
    LineageEdge,
    RecallRecord,
    ResponseRecord,
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
    TaintPolicy,
    Tier,
    Trust,
)

__all__ = [
    "Store", "ReadTx", "WriteTx", "IdTaken", "FactFilter", "CompactReport", "VectorKind", "ArtifactDocument",
    "LedgerReadTx", "LedgerWriteTx", "DerivedReadTx", "DerivedWriteTx", "QueueReadTx", "QueueWriteTx",
    "SearchReadTx", "SearchWriteTx", "AccessReadTx", "AccessWriteTx", "Touch", "touch_of", "primitives",
    "subject_of", "subjects_of", "tenant_of", "locks_itself", "unscoped",
]

# (subject_id, content_hash, trust or status) of an id already present in the tenant.
IdTaken = tuple[str, str, str]
# What a stored vector embeds: an event's text or an active fact's search text.
VectorKind = Literal["event", "fact"]

F = TypeVar("F", bound=Callable[..., Any])


# -- which subject a primitive touches -------------------------------------------------

@dataclass(frozen=True, slots=True)
class Touch:
    """What a primitive touches, read from its arguments.

    ``kind``: ``subject`` (the subject of ``arg``: the ``tenant_id`` and ``subject_id``
    arguments, or a record's), ``subjects`` (the subject of each record in the sequence
    ``arg``; ``item`` picks the record out of a tuple), ``tenant`` (only the tenant of
    ``arg``: row-level security, no lock), ``own`` (the primitive is the lock itself) or
    ``none`` (global, or admin across tenants)."""

    kind: Literal["subject", "subjects", "tenant", "own", "none"]
    arg: str | None = None
    item: int | None = None


SUBJECT = Touch("subject")  # the default: the primitive's (tenant_id, subject_id) arguments


def _declare(touch: Touch) -> Callable[[F], F]:
    def mark(fn: F) -> F:
        fn.__lossgate_touch__ = touch  # type: ignore[attr-defined]
        return fn

    return mark


def subject_of(arg: str) -> Callable[[F], F]:
    """Declares that the primitive touches the subject of the record ``arg``."""
    return _declare(Touch("subject", arg))


def subjects_of(arg: str, *, item: int | None = None) -> Callable[[F], F]:
    """Declares that the primitive touches the subject of each record in ``arg`` (of
    ``record[item]`` when its items are tuples)."""
    return _declare(Touch("subjects", arg, item))


def tenant_of(arg: str) -> Callable[[F], F]:
    """Declares that the primitive touches only the tenant ``arg`` (an id, or a record's):
    it never waits for the subject's writers."""
    return _declare(Touch("tenant", arg))


def locks_itself(fn: F) -> F:
    """Declares a primitive whose work is to lock its subject (:meth:`LedgerWriteTx.lock_clock`)."""
    return _declare(Touch("own"))(fn)


def unscoped(fn: F) -> F:
    """Declares a primitive that touches no one subject: the global registry, the index, the
    worker's claim."""
    return _declare(Touch("none"))(fn)


def touch_of(primitive: Callable[..., Any]) -> Touch:
    """What ``primitive`` (a method of a protocol class here) touches: its declaration, or
    the default when its first arguments are ``tenant_id, subject_id``. Raises
    :class:`TypeError` for a primitive that names neither: a new primitive must say
    which subject it touches, or nothing could lock it."""
    declared: Touch | None = getattr(primitive, "__lossgate_touch__", None)
    if declared is not None:
        return declared
    code = primitive.__code__
    if code.co_varnames[1:3] == ("tenant_id", "subject_id"):
        return SUBJECT
    raise TypeError(
        f"store primitive {primitive.__qualname__} takes no (tenant_id, subject_id): declare what it "
        "touches in lossgate/store/protocol.py (@subject_of, @subjects_of, @tenant_of, @locks_itself, @unscoped)"
    )


# -- value types ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FactFilter:
    """The filters of :meth:`LedgerReadTx.facts`, for reading several fact sets at once
    (:meth:`LedgerReadTx.fact_sets`)."""

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


@dataclass(frozen=True, slots=True)
class ArtifactDocument:
    """An artifact's stored documents as the store holds them, not read into records: what
    a migration of the stored format (:mod:`lossgate.ops.migrate`) reads and writes.

    ``body`` and ``manifest`` are JSON text as the store hands it back (PostgreSQL keeps the
    body as ``jsonb``, so its text comes back normalised); handed back unchanged to
    :meth:`DerivedWriteTx.replace_artifact_documents`, they stand for "what I read". A body
    states its format (``"format"``, :data:`lossgate.store.rows.ARTIFACT_FORMAT`; none: 1),
    and a store refuses to read an artifact stored in a newer one (:class:`~lossgate.errors.StoreError`)."""

    tenant_id: str
    subject_id: str
    artifact_id: str
    state: str
    body: str
    manifest: str


# -- ledger --------------------------------------------------------------------------------

class LedgerReadTx(Protocol):
    """Ledger reads over one consistent view.

    Events and facts come in ``seq`` order (or newest first); a subject that was never
    written reads as empty, with a zero clock."""

    def clock(self, tenant_id: str, subject_id: str) -> Clock:
        """The subject's clock; a zero clock if the subject has never been written."""

    def events(
        self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
        states: Sequence[EventState] | None = None, after_seq: int | None = None,
        through_seq: int | None = None, limit: int | None = None, newest_first: bool = False,
        seqs: Sequence[int] | None = None, skip_erased: bool = False,
    ) -> list[Event]:
        """Events of one subject in seq order (or newest first), filtered by id, state, seq
        range and exact seqs, at most ``limit``. With ``skip_erased``, an event that a
        deleted fact cites (erased with it: :meth:`Ledger.delete_fact
        <lossgate.ledger.Ledger.delete_fact>` deletes such events, but rows stored before it
        did may still be valid) is left out in the statement, before ``limit`` counts."""

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
        ``statuses``, if given), in seq order."""

    def retired_terms_kept(self, tenant_id: str, subject_id: str) -> bool:
        """Whether the subject's superseded and revoked facts all have their value terms kept
        (:meth:`LedgerWriteTx.update_fact`); not for a subject that retired a value before
        the store kept terms, until :meth:`LedgerWriteTx.keep_retired_terms`."""

    def retired_facts_stating(self, tenant_id: str, subject_id: str, terms: Sequence[str], *,
                              through_seq: int) -> list[Fact]:
        """The subject's superseded and revoked facts through ``through_seq`` whose kept value
        terms include any of ``terms``, and every fact of the subject through ``through_seq``
        that their supersession chains lead through (what a marker says holds now), in seq
        order. Reads what the terms name, never the subject's whole retired history."""

    def conflicts(
        self, tenant_id: str, subject_id: str, *, unresolved_only: bool = False,
        fact_id: str | None = None,
    ) -> list[Conflict]:
        """Conflicts of one subject, oldest first (``detected_at``, then ``conflict_id``);
        optionally only those involving ``fact_id``."""

    def log(self, tenant_id: str, subject_id: str, *, target_ids: Sequence[str] | None = None) -> list[LedgerEntry]:
        """The subject's operation log, oldest first (entry ids count up in creation order)."""

    @tenant_of("tenant_id")
    def taken_event_ids(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, IdTaken]:
        """For each id already used in the tenant: (subject, content hash, trust)."""

    @tenant_of("tenant_id")
    def taken_fact_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, IdTaken]:
        """For each id already used in the tenant: (subject, content hash, status)."""

    @unscoped
    def registry_document(self, version: int | None = None) -> dict[str, Any] | None:
        """The stored predicate registry (latest version by default), or ``None``."""

    @unscoped
    def latest_registry_version(self) -> int | None:
        """The newest stored registry version, or ``None`` if none was ever loaded."""

    @tenant_of("tenant_id")
    def subjects(self, tenant_id: str) -> list[str]:
        """Admin listing: every subject of a tenant that has a clock, sorted bytewise."""

    @tenant_of("tenant_id")
    def taint_policies(self, tenant_id: str) -> list[TaintPolicy]:
        """Every stored version of the tenant's taint policies, by policy id (bytewise), then
        version (the last of a policy's versions is the one in force)."""

    @tenant_of("tenant_id")
    def tenant_settings(self, tenant_id: str) -> dict[str, Any]:
        """The tenant's settings record (a JSON object: today its tier policy), ``{}`` if
        none was ever saved."""

    def events_matching(self, tenant_id: str, subject_id: str, *, kind: str | None,
                        actor: str | None) -> list[tuple[str, str, str, str]]:
        """The subject's valid events of ``kind`` by ``actor`` (either ``None``: any) as
        ``(event_id, kind, actor, trust)``, in seq order (what a taint policy reaches)."""

    def tier_events(self, tenant_id: str, subject_id: str, tier: Tier, *,
                    recorded_through: datetime) -> list[Event]:
        """The subject's valid events in ``tier`` recorded at or before the instant
        ``recorded_through``, in seq order: what demotion may move (:mod:`lossgate.tiers`).
        Read through an index (tenant, subject, tier, ``recorded_at`` of valid events), so
        that its cost follows the answer, not the subject's history."""

    def tier_oldest(self, tenant_id: str, subject_id: str) -> dict[Tier, datetime]:
        """For each tier that holds any of the subject's valid events, the ``recorded_at`` of
        its oldest (in UTC); a tier with none is absent. One index probe per tier: whether
        anything is due for demotion, without reading an event."""


class LedgerWriteTx(LedgerReadTx, Protocol):
    """Ledger writes. The caller has checked ids and seqs; a store enforces them anyway:
    ``(tenant, subject, seq)`` and ``(tenant, event_id)`` / ``(tenant, fact_id)`` are keys,
    and a violation raises :class:`~lossgate.errors.IdempotencyConflict`."""

    @locks_itself
    def lock_clock(self, tenant_id: str, subject_id: str) -> Clock:
        """Lock the subject's clock row for this transaction (creating it) and return it:
        the explicit form of the first-touch lock, which also works for a subject with no
        clock yet."""

    @subject_of("clock")
    def save_clock(self, clock: Clock) -> None:
        """Write a clock previously returned by :meth:`lock_clock`."""

    @subjects_of("items", item=0)
    def insert_events(self, items: Sequence[tuple[NewEvent, int, str, str]], *, recorded_at: datetime) -> None:
        """Insert new events as (event, seq, content hash, ISO occurred_at); ids and seqs are
        already checked free.

        Takes the caller's :class:`NewEvent` rather than a built :class:`Event`: appends are the
        hot path, and building a model per row would cost more than the insert itself."""

    def set_event_state(self, tenant_id: str, subject_id: str, event_id: str, state: EventState, *, purge: bool) -> None:
        """Change an event's state; ``purge`` erases its actor, text and payload (id, seq,
        hash, kind, trust and times stay), from the search index too."""

    def set_event_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust) -> None:
        """Change an event's trust level."""

    @subjects_of("facts")
    def insert_facts(self, facts: Sequence[Fact]) -> None:
        """Insert new facts and their source links."""

    def update_fact(
        self, tenant_id: str, subject_id: str, fact_id: str, *, status: FactStatus,
        superseded_by: str | None = None, purge: bool = False, terms: Sequence[str] = (),
    ) -> None:
        """Change a fact's status; ``purge`` erases its value and qualifiers. The value terms
        the fact had kept are removed; a fact that becomes superseded or revoked (unpurged)
        keeps ``terms`` instead (:func:`lossgate.gate.superseded.value_terms`), in this
        transaction."""

    def keep_retired_terms(self, tenant_id: str, subject_id: str, terms: Mapping[str, Sequence[str]]) -> None:
        """Keep the value terms of the subject's retired facts (fact id to terms) that retired
        before the store kept them, and mark the subject's terms complete
        (:meth:`LedgerReadTx.retired_terms_kept`)."""

    @subject_of("conflict")
    def insert_conflict(self, conflict: Conflict) -> None:
        """Record a new unresolved conflict."""

    def resolve_conflict(self, tenant_id: str, subject_id: str, conflict_id: str, *, at: datetime, resolution: str) -> None:
        """Mark a conflict resolved, saying how."""

    def add_log(self, tenant_id: str, subject_id: str, *, at: datetime, op: str, target_id: str, detail: dict[str, Any]) -> None:
        """Append a line to the subject's operation log."""

    @unscoped
    def save_registry(self, version: int, document: dict[str, Any], content_hash: str) -> bool:
        """Store a registry version; False if that version already exists with this hash
        (also when another transaction stores it at the same moment).

        Raises :class:`~lossgate.errors.IdempotencyConflict` if it exists with another hash.
        """

    @tenant_of("policy")
    def save_taint_policy(self, policy: TaintPolicy) -> None:
        """Store a new version of a taint policy. Raises
        :class:`~lossgate.errors.IdempotencyConflict` if that version is already stored."""

    @tenant_of("tenant_id")
    def save_tenant_settings(self, tenant_id: str, record: dict[str, Any], *, at: datetime) -> None:
        """Store the tenant's settings record (a JSON object), replacing the previous one."""


# -- derived -------------------------------------------------------------------------------

class DerivedReadTx(Protocol):
    """Reads of what consolidation derived: artifacts, lineage, the alias, attempts, recall
    records and extraction proposals; what the response boundary left (guard results and
    response records); and what the daily fidelity runs measured."""

    def alias(self, tenant_id: str, subject_id: str, *, lane: Lane = "live") -> Alias:
        """The subject's alias (with ``lane="shadow"``, its shadow alias, which recall never
        reads); an empty one (no artifact, epoch 0, covers 0) if never published."""

    def artifact(self, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact | None:
        """One artifact of the subject, in any state."""

    def recall_head(self, tenant_id: str, subject_id: str) -> tuple[Clock, Alias, ArtifactHead | None]:
        """The clock, the alias and the head of the artifact it points at, read together
        (recall's first step, in one statement where the backend can)."""

    def artifact_head(self, tenant_id: str, subject_id: str, artifact_id: str) -> ArtifactHead | None:
        """State, summary and open items of one artifact (the recall hot path: no manifest)."""

    def artifact_gate(self, tenant_id: str, subject_id: str,
                      artifact_id: str) -> tuple[ArtifactState, str | None] | None:
        """State and gate outcome (the gate report's ``outcome``) of one artifact, or
        ``None``: what demotion needs of the summary that stands in for the events. Neither
        the manifest nor the rest of the gate report is decoded: both can grow with the
        subject's history (a direct consolidation's manifest names every input)."""

    def artifact_drops(self, tenant_id: str, subject_id: str,
                       artifact_ids: Sequence[str]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
        """For each of ``artifact_ids`` the subject has an artifact with, what recall's loss-aware
        ranking reads of its manifest: ``(dropped, carried)`` (``Manifest.dropped``, the events
        holding an atom it dropped; ``Manifest.carried``, the parts a root keeps from the root it
        extends). Nothing else of the manifest is decoded: it can grow with the history."""

    def artifacts(self, tenant_id: str, subject_id: str, *, states: Sequence[str] | None = None) -> list[Artifact]:
        """The subject's artifacts, oldest first (``created_at``, ties in creation order)."""

    def lineage(self, tenant_id: str, subject_id: str, artifact_id: str) -> list[LineageEdge]:
        """What ``artifact_id`` was derived from, sorted by (input kind, input id)."""

    def descendants(self, tenant_id: str, subject_id: str, input_ids: Sequence[str]) -> list[str]:
        """Ids of every artifact derived, directly or through other artifacts, from any of
        ``input_ids``, sorted bytewise."""

    def attempts(self, tenant_id: str, subject_id: str) -> list[Attempt]:
        """Every consolidation attempt of the subject, in order (attempt number, then start)."""

    def attempt(self, tenant_id: str, subject_id: str, attempt_id: str) -> Attempt | None:
        """One attempt of the subject by id, or None."""

    def attempt_tail(self, tenant_id: str, subject_id: str) -> tuple[int, list[Attempt]]:
        """How many attempts the subject has, and those numbered after its latest published
        one (all of them if none was published), in order: what a consolidation needs to
        number its attempt and count the failures in a row, without reading the history."""

    @tenant_of("tenant_id")
    def artifact_ids(self, tenant_id: str, *, after: str | None = None, limit: int) -> list[tuple[str, str]]:
        """Admin listing of one tenant, for a migration of the stored format: ``(artifact id,
        subject id)`` of the tenant's artifacts, every subject's, in artifact id order
        (bytewise), only ids after ``after``, at most ``limit``. Never waits for a subject's
        writers."""

    @tenant_of("tenant_id")
    def artifact_documents(self, tenant_id: str, artifact_ids: Sequence[str]) -> list[ArtifactDocument]:
        """Admin read of one tenant, for a migration of the stored format: the stored documents
        of the tenant's artifacts named in ``artifact_ids`` (of any subject), in artifact id
        order; an id the tenant has no artifact with is left out. Never waits for a subject's
        writers."""

    def recalls(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[RecallRecord]:
        """The subject's most recent recall records, newest first (``at``, ties newest
        created first)."""

    def recalls_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[RecallRecord]:
        """The subject's recall records that still hold a query and touched any of ``ids``: a
        candidate id among them, or (in summary mode) the alias's artifact among them; oldest
        first (``at``, ties in creation order). Reads every recall record of the subject;
        deletions are rare, recalls are not."""

    def recall_record(self, tenant_id: str, subject_id: str, recall_id: str) -> RecallRecord | None:
        """One recall record of the subject by id, or ``None``."""

    def guard_result(self, tenant_id: str, subject_id: str, guard_id: str) -> GuardResult | None:
        """One guard result of the subject by id, or ``None``."""

    def guard_results(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[GuardResult]:
        """The subject's most recent guard results, newest first (``at``, ties newest created first)."""

    def responses(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[ResponseRecord]:
        """The subject's most recent response records, newest first (``at``, ties newest
        created first)."""

    def guard_results_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[GuardResult]:
        """The subject's guard results not redacted yet that touched any of ``ids``: a refusal
        naming one of them (its fact, its conflict or a source event), or a recall record
        they are tied to that touched one (as :meth:`recalls_touching` reads it, the query
        aside); oldest first (``at``, ties in creation order)."""

    def responses_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[ResponseRecord]:
        """The subject's response records not redacted yet whose recall record touched any of
        ``ids`` (as :meth:`recalls_touching` reads it, the query aside), or whose guard result
        is one of ``ids``; oldest first (``at``, ties in creation order)."""

    def proposals(self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
                  statuses: Sequence[str] | None = None) -> list[Proposal]:
        """The subject's extraction proposals, oldest first (``created_at``, then id; only
        ``ids`` / ``statuses`` if given)."""

    def extracted_through(self, tenant_id: str, subject_id: str) -> int:
        """The seq up to which the subject's events have been read by the extractor."""

    @tenant_of("tenant_id")
    def daily_metrics(self, tenant_id: str, *, since: date | None = None, until: date | None = None,
                      metrics: Sequence[str] | None = None, run_id: str | None = None) -> list[DailyMetric]:
        """The tenant's stored daily metrics (:mod:`lossgate.ops.daily`) with ``since <= day <=
        until`` (either ``None``: unbounded), only the ``metrics`` named and the run ``run_id``
        if given; oldest first: by day, then ``recorded_at`` (an instant), then run id, metric
        and dimension (its canonical JSON), the last three compared bytewise. Values come
        back as floats, days as dates, dimensions as they were stored. Never waits for a
        subject's writers."""


class DerivedWriteTx(DerivedReadTx, Protocol):
    """Writes of the derived layer.

    **The switch.** :meth:`lock_alias` locks the subject's *clock* first, then reads the
    alias (creating its row): every transaction that locks both takes them in that order,
    so a publication never deadlocks with a ledger change, and an alias held means the
    clock cannot move. :meth:`cas_alias` compares with NULL-safe equality: an expected
    parent of ``None`` matches an alias that was never published, and nothing else does.
    """

    @locks_itself
    def lock_alias(self, tenant_id: str, subject_id: str, *, lane: Lane = "live") -> Alias:
        """Lock the subject's clock, then its alias row of ``lane`` (creating both), and return the alias."""

    def cas_alias(
        self, tenant_id: str, subject_id: str, *, expected: ExpectedAlias, artifact_id: str,
        source_epoch: int, covers_through: int, at: datetime, lane: Lane = "live",
    ) -> bool:
        """Compare-and-swap the alias: succeeds (True) only if its artifact, source epoch and
        coverage still equal ``expected`` (the artifact compared NULL-safely: ``None`` equals
        only ``None``) and ``covers_through`` does not regress. Exactly one row changes or
        none does."""

    @subject_of("artifact")
    def insert_artifact(self, artifact: Artifact, edges: Sequence[LineageEdge]) -> None:
        """Store an artifact with its manifest and lineage edges."""

    def set_artifact_state(
        self, tenant_id: str, subject_id: str, artifact_ids: Sequence[str], state: str, *, reason: str,
        from_states: Sequence[str] | None = None,
    ) -> list[str]:
        """Move artifacts to ``state`` (published, retired, stale, failed, abandoned), only those
        currently in ``from_states`` if given. Returns the ids that moved, sorted bytewise."""

    @subject_of("attempt")
    def save_attempt(self, attempt: Attempt) -> None:
        """Insert or replace an attempt record (by attempt id)."""

    def replace_artifact_body(self, tenant_id: str, subject_id: str, artifact_id: str, body: ArtifactBody,
                              gate: dict[str, Any] | None = None) -> None:
        """Overwrite an artifact's body, and its gate report when ``gate`` is given (used only to
        purge deleted content; manifest and lineage stay)."""

    @subjects_of("changes", item=0)
    def replace_artifact_documents(self, changes: Sequence[tuple[ArtifactDocument, str, str]]) -> list[str]:
        """Compare-and-swap stored documents, for a migration of the stored format: each
        ``(document as read, new body, new manifest)`` replaces that artifact's body and
        manifest (JSON text) only if they still hold what the document read holds. Returns
        the ids replaced, sorted bytewise; one changed since it was read is left as it is.
        State, gate report and lineage stay."""

    @tenant_of("record")
    def insert_recall(self, record: RecallRecord) -> None:
        """Persist the evidence of one recall. Evidence, not memory: it never waits for the
        subject's writers."""

    @subject_of("record")
    def replace_recall(self, record: RecallRecord) -> None:
        """Overwrite a stored recall record (same tenant and recall id); used to redact it."""

    @subject_of("result")
    def record_guard(self, result: GuardResult) -> None:
        """Store one guard result. Written under the subject's lock, in the transaction that
        read the facts it was checked against: a deletion that redacts guard results never
        misses one. Its id taken in the tenant: :class:`~lossgate.errors.IdempotencyConflict`."""

    @subject_of("result")
    def replace_guard(self, result: GuardResult) -> None:
        """Overwrite a stored guard result (same tenant, subject and guard id); used to redact it."""

    @subject_of("response")
    def record_response(self, response: ResponseRecord) -> None:
        """Store one response record, under the subject's lock (as :meth:`record_guard`). Its id
        taken in the tenant: :class:`~lossgate.errors.IdempotencyConflict`."""

    @subject_of("response")
    def replace_response(self, response: ResponseRecord) -> None:
        """Overwrite a stored response record (same tenant, subject and response id); used to
        redact it."""

    def forget_records(self, tenant_id: str, subject_id: str, *, before: datetime) -> int:
        """Delete the subject's recall records, guard results and responses made before
        ``before`` (a retention policy's time to live for them); returns how many went."""

    def set_tier(self, tenant_id: str, subject_id: str, *, through_seq: int, tier: str,
                 event_ids: Sequence[str] | None = None) -> int:
        """Move the subject's events with seq <= ``through_seq`` (and, with ``event_ids``,
        among those ids) to ``tier`` (``hot``, ``warm``, ``cold``); return how many moved."""

    @subjects_of("proposals")
    def save_proposals(self, proposals: Sequence[Proposal]) -> None:
        """Insert proposals, or replace stored ones with the same id (their outcome changed)."""

    def set_extracted_through(self, tenant_id: str, subject_id: str, seq: int) -> None:
        """Record that the subject's events up to ``seq`` have been read by the extractor."""

    @tenant_of("tenant_id")
    def save_daily_metrics(self, tenant_id: str, metrics: Sequence[DailyMetric]) -> int:
        """Store one run's figures for the tenant; returns how many. Every metric must name
        ``tenant_id`` (:class:`~lossgate.errors.InvalidInput` otherwise, before anything is written). ``(tenant,
        run_id, metric, dimension)`` is a key: storing one again raises
        :class:`~lossgate.errors.IdempotencyConflict`. Rows are never updated or deleted."""


# -- queue ---------------------------------------------------------------------------------

class QueueReadTx(Protocol):
    """Reads of the rebuild queue."""

    @tenant_of("tenant_id")
    def jobs(self, tenant_id: str, subject_id: str | None, *, statuses: Sequence[str] | None = None) -> list[Job]:
        """The subject's rebuild jobs, oldest first (creation order), optionally of some
        statuses. With ``subject_id=None`` an admin listing of the whole tenant (``review``
        jobs: the subjects a person must look at). Never waits for the subject's writers."""


class QueueWriteTx(QueueReadTx, Protocol):
    """The rebuild queue: at most one *pending* job per subject.

    **A retry folds into the job already pending.** :meth:`finish_job` with status
    ``pending`` (retry later) ends the job ``done`` instead when the subject already has a
    pending job (queued while this one ran): the pending one covers it, and the subject
    keeps one pending job. Claiming takes the oldest due job first (``run_after``, then
    creation order); a job whose lease expired is due again."""

    def enqueue_job(self, tenant_id: str, subject_id: str, *, reason: str, run_after: datetime, at: datetime) -> bool:
        """Queue a rebuild unless one is already pending for the subject (True if queued)."""

    @unscoped
    def claim_job(self, *, owner: str, lease_seconds: float, now: datetime) -> Job | None:
        """Claim the oldest due pending job, or one whose lease expired, for ``owner``.
        Admin-level: the only primitive that is not scoped to one subject."""

    @unscoped
    def heartbeat_job(self, job_id: int, *, owner: str, lease_expires_at: datetime) -> bool:
        """Extend ``owner``'s lease on a running job; False if the lease was lost."""

    def finish_job(self, tenant_id: str, subject_id: str, job_id: int, *, owner: str, status: str,
                   at: datetime, run_after: datetime | None = None) -> bool:
        """Release a claimed job as done, review or pending again (retry at ``run_after``;
        folded into a job already pending, see the class). False if ``owner`` no longer
        holds the lease."""

    def cancel_pending_jobs(self, tenant_id: str, subject_id: str, *, at: datetime, reason: str) -> int:
        """Mark the subject's pending jobs, and those waiting for review, done (a publication
        already covers them); returns how many."""


# -- search --------------------------------------------------------------------------------

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

    def search_events(self, tenant_id: str, subject_id: str, query: str, *, limit: int,
                      skip_erased: bool = False) -> list[str]:
        """Ids of the subject's valid events matching any word of ``query`` (full-text,
        stemmed), best first. A blank query matches nothing. ``skip_erased`` leaves out an
        event that a deleted fact cites, as :meth:`LedgerReadTx.events` does, before
        ``limit`` counts. A search reads at most about a thousand matches a word, newest
        first: a word in more events than that counts only in its newest ones
        (:mod:`lossgate.store.core.ranking`)."""

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

    def unembedded(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind, *,
                   after_seq: int, limit: int) -> list[tuple[str, int, str]]:
        """Valid events (``actor: text``) or active facts (their search text) with ``seq >
        after_seq`` and no vector of ``model`` yet, as ``(item_id, seq, text)``, oldest first."""


class SearchWriteTx(SearchReadTx, Protocol):
    """Index maintenance and vector storage."""

    @unscoped
    def refresh_search_index(self) -> int:
        """Bring the full-text index up to date for what this transaction may see (backends that
        index lazily; PostgreSQL indexes the subjects this transaction has locked, as row-level
        security confines it to their tenants). Returns the rows indexed."""

    def put_vectors(self, tenant_id: str, subject_id: str, model: str,
                    items: Sequence[tuple[VectorKind, str, bytes]]) -> int:
        """Store ``(kind, item_id, float32 bytes)`` vectors of ``model``. An item that is no
        longer a valid event or an active fact (deleted while it was being embedded) gets no
        vector; one that has a vector already keeps it. Returns how many were stored."""

    def drop_vectors(self, tenant_id: str, subject_id: str, model: str) -> int:
        """Delete the subject's vectors of ``model`` (to embed it again with another model
        of that name); returns how many."""


# -- access --------------------------------------------------------------------------------

class AccessReadTx(Protocol):
    """Reads of the HTTP service's API keys and idempotency records (:mod:`lossgate.access`).

    **Authentication comes before the tenant is known.** :meth:`api_key_by_hash` is the
    one read that finds a row without its tenant: by the sha256 of a secret that only the
    key's holder knows. Every other primitive here is scoped to the tenant it names. On
    PostgreSQL, row-level security lets a transaction see a key's row either by its tenant
    (the tenant it has set) or by its hash (``lossgate.key_hash``, which only
    :meth:`api_key_by_hash` sets): a transaction that does not know a secret's hash sees
    no other tenant's keys."""

    @unscoped
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key whose secret hashes to ``key_hash``, whatever its tenant, revoked or not,
        or ``None``."""

    @tenant_of("tenant_id")
    def api_keys(self, tenant_id: str) -> list[ApiKey]:
        """Every key of the tenant, revoked ones included, oldest first (``created_at``,
        then ``key_id`` bytewise)."""

    @tenant_of("tenant_id")
    def idempotency_record(self, tenant_id: str, idempotency_key: str) -> IdempotencyRecord | None:
        """The answer stored for the tenant's idempotency key, or ``None``."""


class AccessWriteTx(AccessReadTx, Protocol):
    """Writes of API keys and idempotency records. Neither is ever deleted: a key is
    revoked (kept for audit), and an idempotency record holds no content to erase."""

    @tenant_of("key")
    def insert_api_key(self, key: ApiKey) -> None:
        """Store a new key. Raises :class:`~lossgate.errors.IdempotencyConflict` if its id is
        taken in the tenant or its hash anywhere."""

    @tenant_of("tenant_id")
    def revoke_api_key(self, tenant_id: str, key_id: str, *, at: datetime) -> bool:
        """Mark the tenant's key revoked at ``at``; True if it was active (False if it was
        already revoked or is not the tenant's)."""

    @tenant_of("record")
    def save_idempotency_record(self, record: IdempotencyRecord) -> None:
        """Store the answer to a request under its tenant and idempotency key. Raises
        :class:`~lossgate.errors.IdempotencyConflict` if the key already has one (a
        concurrent request with the same key committed first)."""


# -- the whole ---------------------------------------------------------------------------

class ReadTx(LedgerReadTx, DerivedReadTx, QueueReadTx, SearchReadTx, AccessReadTx, Protocol):
    """A consistent read view (one snapshot of the database): every tier's reads."""


class WriteTx(ReadTx, LedgerWriteTx, DerivedWriteTx, QueueWriteTx, SearchWriteTx, AccessWriteTx, Protocol):
    """A read-write transaction, serialised per subject (see the module's rules): every
    tier's reads and writes."""


def primitives(protocol: type) -> dict[str, Callable[..., Any]]:
    """The public methods of a protocol class (with those it inherits), by name."""
    return {name: member for klass in reversed(protocol.__mro__) if klass.__module__ == __name__
            for name, member in vars(klass).items() if callable(member) and not name.startswith("_")}


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
        WAL segments, archives and replicas is the operator's retention (see the README).
        Takes the write lock for its duration; raises :class:`~lossgate.errors.StoreBusy`
        if another connection kept the WAL from being truncated."""

    def close(self) -> None:
        """Release connections."""
