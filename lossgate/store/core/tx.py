"""The ledger tier's primitives, written once for both SQL engines.

Each statement is written with ``?`` placeholders and run through the
transaction's dialect (:mod:`lossgate.store.core.dialect`); what an engine does
its own way (locking the clock, bulk-loading events, purging an event from its
search index, looking up facts by source) it overrides or supplies in its own
``tx.py``. The derived, queue and search tiers' shared primitives come from
:mod:`lossgate.store.core.derived`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, get_args

import orjson

from lossgate.errors import IdempotencyConflict
from lossgate.model.records import (
    Clock,
    Conflict,
    Event,
    EventState,
    Fact,
    FactStatus,
    LedgerEntry,
    Tier,
    Trust,
    utcnow,
)
from lossgate.store import rows
from lossgate.store.core.access import CoreAccessReads, CoreAccessWrites
from lossgate.store.core.base import Select, by_tenant
from lossgate.store.core.derived import CoreDerivedReads, CoreDerivedWrites
from lossgate.store.core.metrics import CoreMetricsReads, CoreMetricsWrites
from lossgate.store.core.taint import CoreTaintReads, CoreTaintWrites
from lossgate.store.protocol import FactFilter, IdTaken

__all__ = ["CoreReadTx", "CoreWriteTx", "UNERASED"]

_EVENT_SELECT = f"SELECT {','.join(rows.EVENT_COLUMNS)} FROM events"
_FACT_SELECT = f"SELECT {','.join(rows.FACT_COLUMNS)} FROM facts"
_FACT_INSERT = (
    f"INSERT INTO facts ({','.join(rows.FACT_INSERT_COLUMNS)}) VALUES ({','.join('?' * len(rows.FACT_INSERT_COLUMNS))})"
)
# The oldest valid event of one tier, through the partial index events_by_tier (tenant,
# subject, tier, recorded_at WHERE state='valid'): one probe of its first entry. state='valid'
# is written out, never bound, or neither planner would know the partial index applies.
_TIER_OLDEST = "(SELECT min(recorded_at) FROM events WHERE tenant_id=? AND subject_id=? AND tier=? AND state='valid')"
_TIERS: tuple[Tier, ...] = get_args(Tier)
# An event that no deleted fact cites (recall never returns what a deleted fact was drawn
# from). Per event: one probe of fact_sources_by_event (tenant, subject, event_id), then the
# citing facts by primary key; never a read of the subject's deleted facts, which grow with
# its history. {e} names the events table or its alias; {fence} is the dialect's
# (Dialect.fence): PostgreSQL would otherwise turn the NOT EXISTS into a hash anti-join
# over every source of every deleted fact of the subject.
UNERASED = (
    "NOT EXISTS (SELECT 1 FROM fact_sources s JOIN facts d ON d.tenant_id = s.tenant_id "
    "AND d.fact_id = s.fact_id WHERE s.tenant_id = {e}.tenant_id AND s.subject_id = {e}.subject_id "
    "AND s.event_id = {e}.event_id AND d.status = 'deleted'{fence})"
)
_CONFLICT_INSERT = (
    f"INSERT INTO conflicts ({','.join(rows.CONFLICT_COLUMNS)}) VALUES ({','.join('?' * len(rows.CONFLICT_COLUMNS))})"
)


class CoreReadTx(CoreTaintReads, CoreMetricsReads, CoreAccessReads, CoreDerivedReads):
    """The ledger reads every SQL engine shares."""

    def clock(self, tenant_id: str, subject_id: str) -> Clock:
        row = self._one(
            "SELECT high_water, input_epoch FROM clocks WHERE tenant_id=? AND subject_id=?", (tenant_id, subject_id)
        )
        hw, ep = row if row else (0, 0)
        return Clock(tenant_id=tenant_id, subject_id=subject_id, high_water=hw, input_epoch=ep)

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
        sel = self._subject_select(_EVENT_SELECT, "event_id", 2, tenant_id, subject_id, ids, newest_first, limit)
        if seqs is not None:
            sel.when(*self._in("seq", seqs))
        if states is not None:
            sel.when(*self._in("state", states))
        if after_seq is not None:
            sel.when("seq>?", after_seq)
        if through_seq is not None:
            sel.when("seq<=?", through_seq)
        if skip_erased:
            sel.when(UNERASED.format(e="events", fence=self._d.fence))
        return [rows.event_from_row(r) for r in self._fetch([sel])[0]]

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
        return self.fact_sets(
            tenant_id,
            subject_id,
            [
                FactFilter(
                    ids=ids,
                    statuses=statuses,
                    predicate=predicate,
                    through_seq=through_seq,
                    criticalities=criticalities,
                    limit=limit,
                    newest_first=newest_first,
                )
            ],
        )[0]

    def fact_sets(self, tenant_id: str, subject_id: str, filters: Sequence[FactFilter]) -> list[list[Fact]]:
        found = self._fetch([self._fact_select(tenant_id, subject_id, f) for f in filters])
        return [[rows.fact_from_row(r) for r in rows_of_one] for rows_of_one in found]

    def tier_events(self, tenant_id: str, subject_id: str, tier: Tier, *, recorded_through: datetime) -> list[Event]:
        # A range of events_by_tier. Sorted here, not by ORDER BY seq, which could tempt a
        # planner onto the (tenant, subject, seq) key and through the subject's whole history.
        found = self._all(
            f"{_EVENT_SELECT} WHERE tenant_id=? AND subject_id=? AND tier=? AND state='valid' AND recorded_at<=?",
            (tenant_id, subject_id, tier, self._d.ts(recorded_through)),
        )
        return sorted((rows.event_from_row(r) for r in found), key=lambda e: e.seq)

    def tier_oldest(self, tenant_id: str, subject_id: str) -> dict[Tier, datetime]:
        row = self._one(
            f"SELECT {', '.join([_TIER_OLDEST] * len(_TIERS))}",
            [a for tier in _TIERS for a in (tenant_id, subject_id, tier)],
        )
        return {tier: rows.instant_from(v) for tier, v in zip(_TIERS, row or (), strict=False) if v is not None}

    def _fact_select(self, tenant_id: str, subject_id: str, f: FactFilter) -> Select:
        sel = self._subject_select(_FACT_SELECT, "fact_id", 3, tenant_id, subject_id, f.ids, f.newest_first, f.limit)
        if f.criticalities is not None:
            sel.when(*self._in("criticality", f.criticalities))
        if f.statuses is not None:
            sel.when(*self._in("status", f.statuses))
        if f.predicate is not None:
            sel.when("predicate=?", f.predicate)
        if f.through_seq is not None:
            sel.when("seq<=?", f.through_seq)
        return sel

    @staticmethod
    def _subject_select(
        head: str,
        id_column: str,
        seq_index: int,
        tenant_id: str,
        subject_id: str,
        ids: Sequence[str] | None,
        newest_first: bool,
        limit: int | None,
    ) -> Select:
        return Select(
            head,
            id_column,
            seq_index,
            ["tenant_id=?", "subject_id=?"],
            [tenant_id, subject_id],
            ids=None if ids is None else list(ids),
            newest_first=newest_first,
            limit=limit,
        )

    def retired_terms_kept(self, tenant_id: str, subject_id: str) -> bool:
        return (
            self._one("SELECT 1 FROM retired_terms_pending WHERE tenant_id=? AND subject_id=?", (tenant_id, subject_id))
            is None
        )

    def retired_facts_stating(
        self, tenant_id: str, subject_id: str, terms: Sequence[str], *, through_seq: int
    ) -> list[Fact]:
        hits: set[str] = set()
        for chunk in self._d.chunks(sorted(set(terms))):  # a probe of the primary key per term
            condition, args = self._d.in_("term", chunk)
            hits.update(
                r[0]
                for r in self._all(
                    f"SELECT fact_id FROM retired_terms WHERE tenant_id=? AND subject_id=? AND {condition}",
                    (tenant_id, subject_id, *args),
                )
            )
        if not hits:
            return []
        # Each hit's supersession chain, walked by primary key to the fact that holds now.
        condition, args = self._d.in_("fact_id", sorted(hits))
        chain = (
            "WITH RECURSIVE chain(fact_id) AS ("
            f"SELECT fact_id FROM facts WHERE tenant_id=? AND subject_id=? AND {condition} "
            "UNION SELECT f.superseded_by FROM facts f JOIN chain c ON f.tenant_id=? AND f.fact_id=c.fact_id "
            "WHERE f.superseded_by IS NOT NULL) "
            f"{_FACT_SELECT} WHERE tenant_id=? AND subject_id=? AND seq<=? "
            "AND fact_id IN (SELECT fact_id FROM chain) ORDER BY seq"
        )
        found = self._all(chain, (tenant_id, subject_id, *args, tenant_id, tenant_id, subject_id, through_seq))
        return [
            f for f in map(rows.fact_from_row, found) if f.fact_id not in hits or f.status in ("superseded", "revoked")
        ]

    def _in(self, column: str, values: Sequence[Any]) -> tuple[Any, ...]:
        condition, args = self._d.in_(column, values)
        return (condition, *args)

    def conflicts(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        unresolved_only: bool = False,
        fact_id: str | None = None,
    ) -> list[Conflict]:
        sql = f"SELECT {','.join(rows.CONFLICT_COLUMNS)} FROM conflicts WHERE tenant_id=? AND subject_id=?"
        args: list[Any] = [tenant_id, subject_id]
        if unresolved_only:
            sql += " AND status='unresolved'"
        if fact_id is not None:
            sql += " AND (fact_a=? OR fact_b=?)"
            args += [fact_id, fact_id]
        return [rows.conflict_from_row(r) for r in self._all(sql + " ORDER BY detected_at, conflict_id", args)]

    def log(self, tenant_id: str, subject_id: str, *, target_ids: Sequence[str] | None = None) -> list[LedgerEntry]:
        sql = f"SELECT {','.join(rows.LOG_COLUMNS)} FROM ledger_log WHERE tenant_id=? AND subject_id=?"
        args: list[Any] = [tenant_id, subject_id]
        if target_ids is not None:
            condition, more = self._d.in_("target_id", target_ids)
            sql += f" AND {condition}"
            args += more
        return [rows.log_from_row(r) for r in self._all(sql + " ORDER BY entry_id", args)]

    def _taken(self, table: str, col: str, third: str, tenant_id: str, ids: Sequence[str]) -> dict[str, IdTaken]:
        out: dict[str, IdTaken] = {}
        for chunk in self._d.chunks(list(ids)):
            condition, args = self._d.in_(col, chunk)
            for r in self._all(
                f"SELECT {col}, subject_id, content_hash, {third} FROM {table} WHERE tenant_id=? AND {condition}",
                [tenant_id, *args],
            ):
                out[r[0]] = (r[1], r[2], r[3])
        return out

    def taken_event_ids(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, IdTaken]:
        return self._taken("events", "event_id", "trust", tenant_id, event_ids)

    def taken_fact_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, IdTaken]:
        return self._taken("facts", "fact_id", "status", tenant_id, fact_ids)

    def registry_document(self, version: int | None = None) -> dict[str, Any] | None:
        if version is None:
            row = self._one("SELECT document FROM registries ORDER BY version DESC LIMIT 1")
        else:
            row = self._one("SELECT document FROM registries WHERE version=?", (version,))
        return orjson.loads(row[0]) if row else None

    def latest_registry_version(self) -> int | None:
        return self._value("SELECT MAX(version) FROM registries")  # type: ignore[no-any-return]

    def subjects(self, tenant_id: str) -> list[str]:
        return [
            r[0] for r in self._all("SELECT subject_id FROM clocks WHERE tenant_id=? ORDER BY subject_id", (tenant_id,))
        ]


class CoreWriteTx(CoreTaintWrites, CoreMetricsWrites, CoreAccessWrites, CoreDerivedWrites, CoreReadTx):
    """The ledger writes every SQL engine shares. ``lock_clock`` and ``insert_events`` are
    each engine's own."""

    def save_clock(self, clock: Clock) -> None:
        self._run(
            "UPDATE clocks SET high_water=?, input_epoch=? WHERE tenant_id=? AND subject_id=?",
            (clock.high_water, clock.input_epoch, clock.tenant_id, clock.subject_id),
        )

    def set_event_state(
        self, tenant_id: str, subject_id: str, event_id: str, state: EventState, *, purge: bool
    ) -> None:
        purge_sql = ", actor=NULL, text=NULL, payload=NULL" if purge else ""
        self._run(
            f"UPDATE events SET state=?{purge_sql} WHERE tenant_id=? AND subject_id=? AND event_id=?",
            (state, tenant_id, subject_id, event_id),
        )

    def set_event_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust) -> None:
        self._run(
            "UPDATE events SET trust=? WHERE tenant_id=? AND subject_id=? AND event_id=?",
            (trust, tenant_id, subject_id, event_id),
        )

    def insert_facts(self, facts: Sequence[Fact]) -> None:
        for tenant_id, run in by_tenant(facts, lambda f: f.tenant_id):
            self._use_tenant(tenant_id)
            self._many(_FACT_INSERT, [rows.fact_row(f) for f in run])
            sources = [(f.tenant_id, f.subject_id, f.fact_id, e) for f in run for e in f.source_event_ids]
            if sources:
                self._many(
                    "INSERT INTO fact_sources (tenant_id, subject_id, fact_id, event_id) VALUES (?,?,?,?)", sources
                )

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
        sets: list[str] = ["status=?"]
        args: list[Any] = [status]
        if superseded_by is not None:
            sets.append("superseded_by=?")
            args.append(superseded_by)
        if purge:
            sets.append("value=NULL, qualifiers=NULL, search_text=NULL")
        self._run(
            f"UPDATE facts SET {', '.join(sets)} WHERE tenant_id=? AND subject_id=? AND fact_id=?",
            (*args, tenant_id, subject_id, fact_id),
        )
        # The terms a retired value is looked up by leave with it (a deleted value's words are
        # never looked up again), or come with a retirement.
        self._run("DELETE FROM retired_terms WHERE tenant_id=? AND fact_id=?", (tenant_id, fact_id))
        if status in ("superseded", "revoked") and not purge:
            self._keep_terms(tenant_id, subject_id, {fact_id: terms})

    def _keep_terms(self, tenant_id: str, subject_id: str, terms: Mapping[str, Sequence[str]]) -> None:
        pairs = [(tenant_id, subject_id, term, fact_id) for fact_id, kept in terms.items() for term in set(kept)]
        if pairs:
            self._many(
                "INSERT INTO retired_terms (tenant_id, subject_id, term, fact_id) VALUES (?,?,?,?) "
                "ON CONFLICT DO NOTHING",
                pairs,
            )

    def keep_retired_terms(self, tenant_id: str, subject_id: str, terms: Mapping[str, Sequence[str]]) -> None:
        self._keep_terms(tenant_id, subject_id, terms)
        self._run("DELETE FROM retired_terms_pending WHERE tenant_id=? AND subject_id=?", (tenant_id, subject_id))

    def insert_conflict(self, conflict: Conflict) -> None:
        self._run(_CONFLICT_INSERT, rows.conflict_row(conflict))

    def resolve_conflict(
        self, tenant_id: str, subject_id: str, conflict_id: str, *, at: datetime, resolution: str
    ) -> None:
        self._run(
            "UPDATE conflicts SET status='resolved', resolved_at=?, resolution=? "
            "WHERE tenant_id=? AND subject_id=? AND conflict_id=?",
            (self._d.ts(at), resolution, tenant_id, subject_id, conflict_id),
        )

    def add_log(
        self, tenant_id: str, subject_id: str, *, at: datetime, op: str, target_id: str, detail: dict[str, Any]
    ) -> None:
        self._run(
            "INSERT INTO ledger_log (tenant_id, subject_id, at, op, target_id, detail) VALUES (?,?,?,?,?,?)",
            (tenant_id, subject_id, self._d.ts(at), op, target_id, rows.dumps(detail)),
        )

    def save_registry(self, version: int, document: dict[str, Any], content_hash: str) -> bool:
        # Insert first and compare after: two processes loading the same version
        # at once both succeed instead of one tripping over the primary key.
        if self._all(
            "INSERT INTO registries (version, content_hash, document, loaded_at) VALUES (?,?,?,?) "
            "ON CONFLICT (version) DO NOTHING RETURNING version",
            (version, content_hash, rows.dumps(document), self._d.ts(utcnow())),
        ):
            return True
        stored = self._value("SELECT content_hash FROM registries WHERE version=?", (version,))
        if stored is not None and stored != content_hash:
            raise IdempotencyConflict(f"registry version {version} is already stored with different content")
        return False
