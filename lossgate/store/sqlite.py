"""The embedded SQLite store: one file, WAL, no server.

Write transactions start with ``BEGIN IMMEDIATE``, which takes SQLite's single
writer lock up front, so the clock read at the start of a transaction cannot
change before it commits (SQLite's equivalent of ``SELECT ... FOR UPDATE``).
Each thread gets its own connection; any number of processes may share the
file, serialised by that lock.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from functools import lru_cache
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Sequence

import orjson

from lossgate.errors import IdempotencyConflict, StoreError
from lossgate.derived import Alias, Artifact, ArtifactHead, Attempt, ExpectedAlias, Job, LineageEdge, RecallRecord
from lossgate.records import ArtifactBody, Clock, Conflict, Event, EventState, Fact, FactStatus, LedgerEntry, NewEvent, Trust, utcnow
from lossgate.store import rows
from lossgate.store.protocol import IdTaken

__all__ = ["SQLiteStore"]

_CHUNK = 500


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(ids), _CHUNK):
        yield ids[i : i + _CHUNK]


def _marks(n: int) -> str:
    return ",".join("?" * n)


@lru_cache(maxsize=1)
def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("lossgate.store") / "sql" / "sqlite"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.read_text(encoding="utf-8")))
    return sorted(found)


def _statements(script: str) -> Iterator[str]:
    """Split a migration into statements (trigger bodies contain semicolons)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                yield buf
            buf = ""
    if buf.strip() and not all(l.strip().startswith("--") or not l.strip() for l in buf.splitlines()):
        raise StoreError(f"incomplete SQL statement in migration: {buf[:80]!r}")


class SQLiteReadTx:
    """Read primitives over one SQLite connection inside an open transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._c = conn

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._c.execute(sql, args).fetchall()

    def clock(self, tenant_id: str, subject_id: str) -> Clock:
        row = self._c.execute(
            "SELECT high_water, input_epoch FROM clocks WHERE tenant_id=? AND subject_id=?",
            (tenant_id, subject_id),
        ).fetchone()
        hw, ep = row if row else (0, 0)
        return Clock(tenant_id=tenant_id, subject_id=subject_id, high_water=hw, input_epoch=ep)

    def events(
        self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
        states: Sequence[EventState] | None = None, after_seq: int | None = None,
        through_seq: int | None = None, limit: int | None = None, newest_first: bool = False,
    ) -> list[Event]:
        where, args = ["tenant_id=?", "subject_id=?"], [tenant_id, subject_id]
        if states is not None:
            where.append(f"state IN ({_marks(len(states))})")
            args += states
        if after_seq is not None:
            where.append("seq>?")
            args.append(after_seq)
        if through_seq is not None:
            where.append("seq<=?")
            args.append(through_seq)
        sql = f"SELECT {','.join(rows.EVENT_COLUMNS)} FROM events WHERE {' AND '.join(where)}"
        if ids is None:
            tail = " ORDER BY seq" + (" DESC" if newest_first else "")
            tail += f" LIMIT {int(limit)}" if limit is not None else ""
            return [rows.event_from_row(r) for r in self._all(sql + tail, args)]
        found = []
        for chunk in _chunks(list(ids)):
            found += self._all(sql + f" AND event_id IN ({_marks(len(chunk))})", args + list(chunk))
        found.sort(key=lambda r: r[2], reverse=newest_first)
        return [rows.event_from_row(r) for r in found[:limit]]

    def facts(
        self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
        statuses: Sequence[FactStatus] | None = None, predicate: str | None = None,
        through_seq: int | None = None, criticalities: Sequence[str] | None = None,
        limit: int | None = None, newest_first: bool = False,
    ) -> list[Fact]:
        where, args = ["tenant_id=?", "subject_id=?"], [tenant_id, subject_id]
        if criticalities is not None:
            where.append(f"criticality IN ({_marks(len(criticalities))})")
            args += criticalities
        if statuses is not None:
            where.append(f"status IN ({_marks(len(statuses))})")
            args += statuses
        if predicate is not None:
            where.append("predicate=?")
            args.append(predicate)
        if through_seq is not None:
            where.append("seq<=?")
            args.append(through_seq)
        sql = f"SELECT {','.join(rows.FACT_COLUMNS)} FROM facts WHERE {' AND '.join(where)}"
        if ids is None:
            tail = " ORDER BY seq" + (" DESC" if newest_first else "")
            tail += f" LIMIT {int(limit)}" if limit is not None else ""
            return [rows.fact_from_row(r) for r in self._all(sql + tail, args)]
        found = []
        for chunk in _chunks(list(ids)):
            found += self._all(sql + f" AND fact_id IN ({_marks(len(chunk))})", args + list(chunk))
        found.sort(key=lambda r: r[3], reverse=newest_first)
        return [rows.fact_from_row(r) for r in found[:limit]]

    def facts_citing(self, tenant_id: str, subject_id: str, event_ids: Sequence[str]) -> list[Fact]:
        fact_ids: set[str] = set()
        for chunk in _chunks(list(event_ids)):
            fact_ids.update(r[0] for r in self._all(
                "SELECT fact_id FROM fact_sources WHERE tenant_id=? AND subject_id=? "
                f"AND event_id IN ({_marks(len(chunk))})", [tenant_id, subject_id, *chunk],
            ))
        return self.facts(tenant_id, subject_id, ids=sorted(fact_ids)) if fact_ids else []

    def conflicts(
        self, tenant_id: str, subject_id: str, *, unresolved_only: bool = False,
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
            sql += f" AND target_id IN ({_marks(len(target_ids))})"
            args += list(target_ids)
        return [rows.log_from_row(r) for r in self._all(sql + " ORDER BY entry_id", args)]

    def _taken(self, table: str, col: str, third: str, tenant_id: str, ids: Sequence[str]) -> dict[str, IdTaken]:
        out: dict[str, IdTaken] = {}
        for chunk in _chunks(list(ids)):
            for r in self._all(
                f"SELECT {col}, subject_id, content_hash, {third} FROM {table} "
                f"WHERE tenant_id=? AND {col} IN ({_marks(len(chunk))})", [tenant_id, *chunk],
            ):
                out[r[0]] = (r[1], r[2], r[3])
        return out

    def taken_event_ids(self, tenant_id: str, event_ids: Sequence[str]) -> dict[str, IdTaken]:
        return self._taken("events", "event_id", "trust", tenant_id, event_ids)

    def taken_fact_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, IdTaken]:
        return self._taken("facts", "fact_id", "status", tenant_id, fact_ids)

    def registry_document(self, version: int | None = None) -> dict[str, Any] | None:
        if version is None:
            row = self._c.execute("SELECT document FROM registries ORDER BY version DESC LIMIT 1").fetchone()
        else:
            row = self._c.execute("SELECT document FROM registries WHERE version=?", (version,)).fetchone()
        return orjson.loads(row[0]) if row else None

    def latest_registry_version(self) -> int | None:
        return self._c.execute("SELECT MAX(version) FROM registries").fetchone()[0]

    def subjects(self, tenant_id: str) -> list[str]:
        return [r[0] for r in self._all(
            "SELECT subject_id FROM clocks WHERE tenant_id=? ORDER BY subject_id", (tenant_id,))]

    # -- derived layer ---------------------------------------------------------------
    def alias(self, tenant_id: str, subject_id: str) -> Alias:
        row = self._c.execute(
            f"SELECT {','.join(rows.ALIAS_COLUMNS)} FROM aliases WHERE tenant_id=? AND subject_id=?",
            (tenant_id, subject_id),
        ).fetchone()
        return rows.alias_from_row(row) if row else Alias(tenant_id=tenant_id, subject_id=subject_id)

    def artifact(self, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact | None:
        row = self._c.execute(
            f"SELECT {','.join(rows.ARTIFACT_COLUMNS)} FROM artifacts WHERE tenant_id=? AND subject_id=? AND artifact_id=?",
            (tenant_id, subject_id, artifact_id),
        ).fetchone()
        return rows.artifact_from_row(row) if row else None

    def artifact_head(self, tenant_id: str, subject_id: str, artifact_id: str) -> ArtifactHead | None:
        row = self._c.execute(
            "SELECT artifact_id, state, json_extract(body, '$.summary'), json_extract(body, '$.open_items') "
            "FROM artifacts WHERE tenant_id=? AND subject_id=? AND artifact_id=?",
            (tenant_id, subject_id, artifact_id),
        ).fetchone()
        if row is None:
            return None
        return ArtifactHead(artifact_id=row[0], state=row[1], summary=row[2] or "",
                            open_items=tuple(orjson.loads(row[3] or "[]")))

    def artifacts(self, tenant_id: str, subject_id: str, *, states: Sequence[str] | None = None) -> list[Artifact]:
        sql = f"SELECT {','.join(rows.ARTIFACT_COLUMNS)} FROM artifacts WHERE tenant_id=? AND subject_id=?"
        args: list[Any] = [tenant_id, subject_id]
        if states is not None:
            sql += f" AND state IN ({_marks(len(states))})"
            args += list(states)
        return [rows.artifact_from_row(r) for r in self._all(sql + " ORDER BY created_at, rowid", args)]

    def lineage(self, tenant_id: str, subject_id: str, artifact_id: str) -> list[LineageEdge]:
        return [
            LineageEdge(tenant_id=tenant_id, subject_id=subject_id, artifact_id=artifact_id, input_kind=k, input_id=i)
            for k, i in self._all(
                "SELECT input_kind, input_id FROM lineage WHERE tenant_id=? AND subject_id=? AND artifact_id=? "
                "ORDER BY input_kind, input_id", (tenant_id, subject_id, artifact_id))
        ]

    def descendants(self, tenant_id: str, subject_id: str, input_ids: Sequence[str]) -> list[str]:
        if not input_ids:
            return []
        found: set[str] = set()
        for chunk in _chunks(list(input_ids)):
            found.update(r[0] for r in self._all(
                "WITH RECURSIVE d(id) AS ("
                " SELECT artifact_id FROM lineage WHERE tenant_id=? AND subject_id=?"
                f"  AND input_id IN ({_marks(len(chunk))})"
                " UNION SELECT l.artifact_id FROM lineage l JOIN d ON l.input_id = d.id"
                "  WHERE l.tenant_id=? AND l.subject_id=? AND l.input_kind='artifact')"
                " SELECT id FROM d", [tenant_id, subject_id, *chunk, tenant_id, subject_id],
            ))
        return sorted(found)

    def attempts(self, tenant_id: str, subject_id: str) -> list[Attempt]:
        return [rows.attempt_from_json(r[0]) for r in self._all(
            "SELECT record FROM attempts WHERE tenant_id=? AND subject_id=? ORDER BY number, started_at",
            (tenant_id, subject_id))]

    def search_events(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        # Events appended since the last index refresh are not in the index yet: search them
        # directly so a search never misses fresh text (refresh_search_index catches up).
        terms = " OR ".join('"' + t.replace('"', '""') + '"' for t in query.split() if t)
        if not terms:
            return []
        hits = [r[0] for r in self._all(
            "SELECT e.event_id FROM events_fts f JOIN events e ON e.rowid = f.rowid "
            "WHERE events_fts MATCH ? AND e.tenant_id=? AND e.subject_id=? AND e.state='valid' "
            "ORDER BY bm25(events_fts), e.seq DESC LIMIT ?", (terms, tenant_id, subject_id, limit))]
        words = [w.lower() for w in query.split() if w]
        likes = " OR ".join("lower(text) LIKE ?" for _ in words)
        fresh = self._all(
            "SELECT event_id FROM events WHERE tenant_id=? AND subject_id=? AND state='valid' "
            f"AND rowid > (SELECT indexed_through FROM events_fts_watermark WHERE id=1) AND ({likes}) "
            "ORDER BY seq DESC LIMIT ?", [tenant_id, subject_id, *[f"%{w}%" for w in words], limit])
        return ([r[0] for r in fresh] + hits)[:limit]

    def search_facts(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        terms = " OR ".join('"' + t.replace('"', '""') + '"' for t in query.split() if t)
        if not terms:
            return []
        return [r[0] for r in self._all(
            "SELECT f.fact_id FROM facts_fts x JOIN facts f ON f.rowid = x.rowid "
            "WHERE facts_fts MATCH ? AND f.tenant_id=? AND f.subject_id=? AND f.status='active' "
            "ORDER BY bm25(facts_fts), f.seq DESC LIMIT ?", (terms, tenant_id, subject_id, limit))]

    def recalls(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[RecallRecord]:
        return [rows.recall_from_json(r[0]) for r in self._all(
            "SELECT record FROM recalls WHERE tenant_id=? AND subject_id=? ORDER BY at DESC, rowid DESC LIMIT ?",
            (tenant_id, subject_id, limit))]

    def jobs(self, tenant_id: str, subject_id: str) -> list[Job]:
        return [rows.job_from_row(r) for r in self._all(
            f"SELECT {','.join(rows.JOB_COLUMNS)} FROM jobs WHERE tenant_id=? AND subject_id=? ORDER BY job_id",
            (tenant_id, subject_id))]


class SQLiteWriteTx(SQLiteReadTx):
    """Write primitives; the caller holds SQLite's writer lock (BEGIN IMMEDIATE)."""

    def refresh_search_index(self) -> int:
        """Index every event appended since the last refresh; returns how many."""
        mark = self._c.execute("SELECT indexed_through FROM events_fts_watermark WHERE id=1").fetchone()[0]
        top = self._c.execute("SELECT COALESCE(MAX(rowid), 0) FROM events").fetchone()[0]
        if top <= mark:
            return 0
        n = self._c.execute(
            "INSERT INTO events_fts (rowid, text) SELECT rowid, text FROM events WHERE rowid > ? AND rowid <= ? "
            "AND text IS NOT NULL", (mark, top)).rowcount
        self._c.execute("UPDATE events_fts_watermark SET indexed_through=? WHERE id=1", (top,))
        return n

    def lock_clock(self, tenant_id: str, subject_id: str) -> Clock:
        self._c.execute(
            "INSERT INTO clocks (tenant_id, subject_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (tenant_id, subject_id),
        )
        return self.clock(tenant_id, subject_id)

    def save_clock(self, clock: Clock) -> None:
        self._c.execute(
            "UPDATE clocks SET high_water=?, input_epoch=? WHERE tenant_id=? AND subject_id=?",
            (clock.high_water, clock.input_epoch, clock.tenant_id, clock.subject_id),
        )

    def insert_events(self, items: Sequence[tuple[NewEvent, int, str, str]], *, recorded_at: datetime) -> None:
        at = recorded_at.isoformat()
        self._c.executemany(
            f"INSERT INTO events ({','.join(rows.EVENT_COLUMNS)}) VALUES ({_marks(len(rows.EVENT_COLUMNS))})",
            [rows.new_event_row(ev, seq, h, iso, at) for ev, seq, h, iso in items],
        )

    def set_event_state(self, tenant_id: str, subject_id: str, event_id: str, state: EventState, *, purge: bool) -> None:
        purge_sql = ", text=NULL, payload=NULL" if purge else ""
        self._c.execute(
            f"UPDATE events SET state=?{purge_sql} WHERE tenant_id=? AND subject_id=? AND event_id=?",
            (state, tenant_id, subject_id, event_id),
        )

    def set_event_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust) -> None:
        self._c.execute(
            "UPDATE events SET trust=? WHERE tenant_id=? AND subject_id=? AND event_id=?",
            (trust, tenant_id, subject_id, event_id),
        )

    def insert_facts(self, facts: Sequence[Fact]) -> None:
        self._c.executemany(
            f"INSERT INTO facts ({','.join(rows.FACT_INSERT_COLUMNS)}) VALUES ({_marks(len(rows.FACT_INSERT_COLUMNS))})",
            [rows.fact_row(f) for f in facts],
        )
        self._c.executemany(
            "INSERT INTO fact_sources (tenant_id, subject_id, fact_id, event_id) VALUES (?,?,?,?)",
            [(f.tenant_id, f.subject_id, f.fact_id, e) for f in facts for e in f.source_event_ids],
        )

    def update_fact(
        self, tenant_id: str, subject_id: str, fact_id: str, *, status: FactStatus,
        superseded_by: str | None = None, purge: bool = False,
    ) -> None:
        sets, args = ["status=?"], [status]
        if superseded_by is not None:
            sets.append("superseded_by=?")
            args.append(superseded_by)
        if purge:
            sets.append("value=NULL, qualifiers=NULL, search_text=NULL")
        self._c.execute(
            f"UPDATE facts SET {', '.join(sets)} WHERE tenant_id=? AND subject_id=? AND fact_id=?",
            (*args, tenant_id, subject_id, fact_id),
        )

    def insert_conflict(self, conflict: Conflict) -> None:
        self._c.execute(
            f"INSERT INTO conflicts ({','.join(rows.CONFLICT_COLUMNS)}) VALUES ({_marks(len(rows.CONFLICT_COLUMNS))})",
            rows.conflict_row(conflict),
        )

    def resolve_conflict(self, tenant_id: str, subject_id: str, conflict_id: str, *, at: datetime, resolution: str) -> None:
        self._c.execute(
            "UPDATE conflicts SET status='resolved', resolved_at=?, resolution=? "
            "WHERE tenant_id=? AND subject_id=? AND conflict_id=?",
            (at.isoformat(), resolution, tenant_id, subject_id, conflict_id),
        )

    def add_log(self, tenant_id: str, subject_id: str, *, at: datetime, op: str, target_id: str, detail: dict[str, Any]) -> None:
        self._c.execute(
            "INSERT INTO ledger_log (tenant_id, subject_id, at, op, target_id, detail) VALUES (?,?,?,?,?,?)",
            (tenant_id, subject_id, at.isoformat(), op, target_id, rows.dumps(detail)),
        )

    # -- derived layer ---------------------------------------------------------------
    def lock_alias(self, tenant_id: str, subject_id: str) -> Alias:
        self.lock_clock(tenant_id, subject_id)  # the alias row references the clock row
        self._c.execute(
            "INSERT INTO aliases (tenant_id, subject_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (tenant_id, subject_id),
        )
        return self.alias(tenant_id, subject_id)

    def cas_alias(
        self, tenant_id: str, subject_id: str, *, expected: ExpectedAlias, artifact_id: str,
        source_epoch: int, covers_through: int, at: datetime,
    ) -> bool:
        cur = self._c.execute(
            "UPDATE aliases SET artifact_id=?, source_epoch=?, covers_through=?, updated_at=? "
            "WHERE tenant_id=? AND subject_id=? AND artifact_id IS ? AND source_epoch=? "
            "AND covers_through=? AND ? >= covers_through",
            (artifact_id, source_epoch, covers_through, at.isoformat(), tenant_id, subject_id,
             expected.parent_artifact_id, expected.source_epoch, expected.covers_through, covers_through),
        )
        return cur.rowcount == 1

    def insert_artifact(self, artifact: Artifact, edges: Sequence[LineageEdge]) -> None:
        self._c.execute(
            f"INSERT INTO artifacts ({','.join(rows.ARTIFACT_COLUMNS)}) VALUES ({_marks(len(rows.ARTIFACT_COLUMNS))})",
            rows.artifact_row(artifact),
        )
        self._c.executemany(
            "INSERT INTO lineage (tenant_id, subject_id, artifact_id, input_kind, input_id) VALUES (?,?,?,?,?)",
            [(e.tenant_id, e.subject_id, e.artifact_id, e.input_kind, e.input_id) for e in edges],
        )

    def set_artifact_state(
        self, tenant_id: str, subject_id: str, artifact_ids: Sequence[str], state: str, *, reason: str,
        from_states: Sequence[str] | None = None,
    ) -> list[str]:
        moved: list[str] = []
        only = f" AND state IN ({_marks(len(from_states))})" if from_states else ""
        for chunk in _chunks(list(artifact_ids)):
            moved += [r[0] for r in self._all(
                f"UPDATE artifacts SET state=?, state_reason=? WHERE tenant_id=? AND subject_id=? "
                f"AND artifact_id IN ({_marks(len(chunk))}){only} RETURNING artifact_id",
                (state, reason, tenant_id, subject_id, *chunk, *(from_states or ())),
            )]
        return sorted(moved)

    def save_attempt(self, attempt: Attempt) -> None:
        self._c.execute(
            "INSERT INTO attempts (tenant_id, subject_id, attempt_id, number, status, record, started_at) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT (tenant_id, attempt_id) DO UPDATE SET "
            "status=excluded.status, record=excluded.record",
            (attempt.tenant_id, attempt.subject_id, attempt.attempt_id, attempt.number, attempt.status,
             attempt.model_dump_json(), attempt.started_at.isoformat()),
        )

    def replace_artifact_body(self, tenant_id: str, subject_id: str, artifact_id: str, body: ArtifactBody) -> None:
        self._c.execute(
            "UPDATE artifacts SET body=? WHERE tenant_id=? AND subject_id=? AND artifact_id=?",
            (body.model_dump_json(), tenant_id, subject_id, artifact_id),
        )

    def cancel_pending_jobs(self, tenant_id: str, subject_id: str, *, at: datetime, reason: str) -> int:
        return self._c.execute(
            "UPDATE jobs SET status='done', finished_at=?, reason=reason || ' (' || ? || ')' "
            "WHERE tenant_id=? AND subject_id=? AND status='pending'",
            (at.isoformat(), reason, tenant_id, subject_id),
        ).rowcount

    def insert_recall(self, record: RecallRecord) -> None:
        self._c.execute(
            "INSERT INTO recalls (tenant_id, subject_id, recall_id, at, mode, record) VALUES (?,?,?,?,?,?)",
            (record.tenant_id, record.subject_id, record.recall_id, record.at.isoformat(), record.mode,
             record.model_dump_json()),
        )

    def set_tier(self, tenant_id: str, subject_id: str, *, through_seq: int, tier: str) -> int:
        return self._c.execute(
            "UPDATE events SET tier=? WHERE tenant_id=? AND subject_id=? AND seq<=? AND tier<>?",
            (tier, tenant_id, subject_id, through_seq, tier),
        ).rowcount

    def enqueue_job(self, tenant_id: str, subject_id: str, *, reason: str, run_after: datetime, at: datetime) -> bool:
        return self._c.execute(
            "INSERT INTO jobs (tenant_id, subject_id, status, reason, run_after, enqueued_at) "
            "VALUES (?,?,'pending',?,?,?) ON CONFLICT (tenant_id, subject_id) WHERE status='pending' DO NOTHING",
            (tenant_id, subject_id, reason, run_after.isoformat(), at.isoformat()),
        ).rowcount == 1

    def claim_job(self, *, owner: str, lease_seconds: float, now: datetime) -> Job | None:
        row = self._c.execute(
            f"SELECT {','.join(rows.JOB_COLUMNS)} FROM jobs WHERE (status='pending' AND run_after<=?) "
            "OR (status='running' AND lease_expires_at<?) ORDER BY run_after, job_id LIMIT 1",
            (now.isoformat(), now.isoformat()),
        ).fetchone()
        if row is None:
            return None
        expires = (now + timedelta(seconds=lease_seconds)).isoformat()
        self._c.execute(
            "UPDATE jobs SET status='running', lease_owner=?, lease_expires_at=?, tries=tries+1 WHERE job_id=?",
            (owner, expires, row[0]),
        )
        return rows.job_from_row(self._c.execute(
            f"SELECT {','.join(rows.JOB_COLUMNS)} FROM jobs WHERE job_id=?", (row[0],)).fetchone())

    def heartbeat_job(self, job_id: int, *, owner: str, lease_expires_at: datetime) -> bool:
        return self._c.execute(
            "UPDATE jobs SET lease_expires_at=? WHERE job_id=? AND status='running' AND lease_owner=?",
            (lease_expires_at.isoformat(), job_id, owner),
        ).rowcount == 1

    def finish_job(self, tenant_id: str, subject_id: str, job_id: int, *, owner: str, status: str,
                   at: datetime, run_after: datetime | None = None) -> bool:
        if status == "pending":
            # Retrying: fold into an already pending job for the subject if there is one.
            pending = self._c.execute(
                "SELECT 1 FROM jobs WHERE tenant_id=? AND subject_id=? AND status='pending'",
                (tenant_id, subject_id)).fetchone()
            if pending:
                status = "done"
        cur = self._c.execute(
            "UPDATE jobs SET status=?, run_after=COALESCE(?, run_after), lease_owner=NULL, "
            "lease_expires_at=NULL, finished_at=? WHERE tenant_id=? AND subject_id=? AND job_id=? "
            "AND status='running' AND lease_owner=?",
            (status, run_after.isoformat() if run_after else None, at.isoformat(), tenant_id, subject_id,
             job_id, owner),
        )
        return cur.rowcount == 1

    def save_registry(self, version: int, document: dict[str, Any], content_hash: str) -> bool:
        row = self._c.execute("SELECT content_hash FROM registries WHERE version=?", (version,)).fetchone()
        if row:
            if row[0] != content_hash:
                raise IdempotencyConflict(f"registry version {version} is already stored with different content")
            return False
        self._c.execute(
            "INSERT INTO registries (version, content_hash, document, loaded_at) VALUES (?,?,?,?)",
            (version, content_hash, rows.dumps(document), utcnow().isoformat()),
        )
        return True


class SQLiteStore:
    """A lossgate database in one SQLite file (``sqlite:///path.db``)."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self._busy = busy_timeout_ms
        self._local = threading.local()

    # -- connections -------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy / 1000)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"PRAGMA busy_timeout={self._busy}")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from exc
            self._local.conn = conn
        return conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute(begin)
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite: {exc}") from exc
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"SQLite commit failed: {exc}") from exc

    @contextmanager
    def _translated(self) -> Iterator[None]:
        # The one choke point where driver errors become lossgate errors.
        try:
            yield
        except sqlite3.IntegrityError as exc:
            raise IdempotencyConflict(f"integrity violation: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite: {exc}") from exc

    @contextmanager
    def read(self) -> Iterator[SQLiteReadTx]:
        with self._transaction("BEGIN"), self._translated():
            yield SQLiteReadTx(self._conn())

    @contextmanager
    def write(self) -> Iterator[SQLiteWriteTx]:
        with self._transaction("BEGIN IMMEDIATE"), self._translated():
            yield SQLiteWriteTx(self._conn())

    # -- schema ------------------------------------------------------------------------
    def schema_version(self) -> int:
        conn = self._conn()
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name='schema_migrations'").fetchone()
        if not has:
            return 0
        return conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]

    def migrate(self) -> int:
        latest = _migrations()[-1][0]
        if self.schema_version() == latest:
            return latest  # the common case: no write lock taken just to learn nothing changed
        with self._transaction("BEGIN IMMEDIATE") as conn, self._translated():
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for version, sql in _migrations():
                if version in done:
                    continue
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, datetime('now'))", (version,)
                )
        return self.schema_version()

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
