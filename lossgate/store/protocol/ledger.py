"""The ledger tier: the per-subject clock, the append-only events, the facts with their
lifecycle, conflicts, the operation log and the predicate registry. Everything else rests
on it: a store implements this tier first (:class:`~lossgate.testing.store_contract.LedgerContract`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from lossgate.model.records import Clock, Conflict, Event, EventState, Fact, FactStatus, LedgerEntry, NewEvent, Trust
from lossgate.store.protocol.scope import locks_itself, subject_of, subjects_of, tenant_of, unscoped

__all__ = ["IdTaken", "FactFilter", "LedgerReadTx", "LedgerWriteTx"]

# (subject_id, content_hash, trust or status) of an id already present in the tenant.
IdTaken = tuple[str, str, str]


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


class LedgerReadTx(Protocol):
    """Ledger reads over one consistent view.

    Events and facts come in ``seq`` order (or newest first); a subject that was never
    written reads as empty, with a zero clock."""

    def clock(self, tenant_id: str, subject_id: str) -> Clock:
        """The subject's clock; a zero clock if the subject has never been written."""

    def events(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        ids: Sequence[str] | None = None,
        states: Sequence[EventState] | None = None,
        after_seq: int | None = None,
        through_seq: int | None = None,
        limit: int | None = None,
        newest_first: bool = False,
        seqs: Sequence[int] | None = None,
        skip_erased: bool = False,
    ) -> list[Event]:
        """Events of one subject in seq order (or newest first), filtered by id, state, seq
        range and exact seqs, at most ``limit``. With ``skip_erased``, an event that a
        deleted fact cites (erased with it: :meth:`Ledger.delete_fact
        <lossgate.ledger.lifecycle.Ledger.delete_fact>` deletes such events, but rows stored before it
        did may still be valid) is left out in the statement, before ``limit`` counts."""

    def facts(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        ids: Sequence[str] | None = None,
        statuses: Sequence[FactStatus] | None = None,
        predicate: str | None = None,
        through_seq: int | None = None,
        criticalities: Sequence[str] | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Fact]:
        """Facts of one subject in seq order (or newest first), filtered by id, status,
        predicate, seq and criticality, at most ``limit``."""

    def fact_sets(self, tenant_id: str, subject_id: str, filters: Sequence[FactFilter]) -> list[list[Fact]]:
        """:meth:`facts` for each filter, in order; PostgreSQL sends them in one round trip."""

    def facts_citing(
        self, tenant_id: str, subject_id: str, event_ids: Sequence[str], *, statuses: Sequence[FactStatus] | None = None
    ) -> list[Fact]:
        """Facts of one subject that list any of ``event_ids`` among their sources (only those in
        ``statuses``, if given), in seq order."""

    def retired_terms_kept(self, tenant_id: str, subject_id: str) -> bool:
        """Whether the subject's superseded and revoked facts all have their value terms kept
        (:meth:`LedgerWriteTx.update_fact`); not for a subject that retired a value before
        the store kept terms, until :meth:`LedgerWriteTx.keep_retired_terms`."""

    def retired_facts_stating(
        self, tenant_id: str, subject_id: str, terms: Sequence[str], *, through_seq: int
    ) -> list[Fact]:
        """The subject's superseded and revoked facts through ``through_seq`` whose kept value
        terms include any of ``terms``, and every fact of the subject through ``through_seq``
        that their supersession chains lead through (what a marker says holds now), in seq
        order. Reads what the terms name, never the subject's whole retired history."""

    def conflicts(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        unresolved_only: bool = False,
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

    def set_event_state(
        self, tenant_id: str, subject_id: str, event_id: str, state: EventState, *, purge: bool
    ) -> None:
        """Change an event's state; ``purge`` erases its actor, text and payload (id, seq,
        hash, kind, trust and times stay), from the search index too."""

    def set_event_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust) -> None:
        """Change an event's trust level."""

    @subjects_of("facts")
    def insert_facts(self, facts: Sequence[Fact]) -> None:
        """Insert new facts and their source links."""

    def update_fact(
        self,
        tenant_id: str,
        subject_id: str,
        fact_id: str,
        *,
        status: FactStatus,
        superseded_by: str | None = None,
        purge: bool = False,
        terms: Sequence[str] = (),
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

    def resolve_conflict(
        self, tenant_id: str, subject_id: str, conflict_id: str, *, at: datetime, resolution: str
    ) -> None:
        """Mark a conflict resolved, saying how."""

    def add_log(
        self, tenant_id: str, subject_id: str, *, at: datetime, op: str, target_id: str, detail: dict[str, Any]
    ) -> None:
        """Append a line to the subject's operation log."""

    @unscoped
    def save_registry(self, version: int, document: dict[str, Any], content_hash: str) -> bool:
        """Store a registry version; False if that version already exists with this hash
        (also when another transaction stores it at the same moment).

        Raises :class:`~lossgate.errors.IdempotencyConflict` if it exists with another hash.
        """
