"""SQLite primitives of the derived layer: artifacts, the alias, lineage, attempts,
recall records, search and the rebuild queue. Mixed into the transactions of
:mod:`lossgate.store.sqlite` (as :mod:`lossgate.store.pg_derived` is for PostgreSQL)."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Sequence

import orjson

from lossgate.derived import Alias, Artifact, ArtifactHead, Attempt, ExpectedAlias, Job, LineageEdge, RecallRecord
from lossgate.records import ArtifactBody, Clock, Proposal
from lossgate.store import rows
from lossgate.store.protocol import VectorKind
from lossgate.store.sql_util import EMBEDDABLE, chunks as _chunks, marks as _marks

__all__ = ["SQLiteDerivedReads", "SQLiteDerivedWrites"]


class SQLiteDerivedReads:
    """Derived-layer reads over one SQLite connection inside an open transaction."""

    _c: sqlite3.Connection

    if TYPE_CHECKING:  # provided by SQLiteReadTx, which mixes this class in
        def clock(self, tenant_id: str, subject_id: str) -> Clock: ...

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._c.execute(sql, args).fetchall()

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

    def recall_head(self, tenant_id: str, subject_id: str) -> tuple[Clock, Alias, ArtifactHead | None]:
        # In-process: three indexed look-ups cost less than building one joined statement.
        alias = self.alias(tenant_id, subject_id)
        head = self.artifact_head(tenant_id, subject_id, alias.artifact_id) if alias.artifact_id else None
        return self.clock(tenant_id, subject_id), alias, head

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
        mark, top = self._c.execute("SELECT indexed_through, (SELECT COALESCE(MAX(rowid), 0) FROM events) "
                                    "FROM events_fts_watermark WHERE id=1").fetchone()
        if top <= mark:
            return hits  # nothing past the index (the usual case): no scan at all
        words = [w.lower() for w in query.split() if w]
        likes = " OR ".join("lower(text) LIKE ?" for _ in words)
        # rowid as a bound parameter: SQLite walks the rowid range past the mark (at most
        # recall.SEARCH_BACKLOG rows), never the subject's whole history.
        fresh = self._all(
            "SELECT event_id FROM events WHERE rowid > ? AND tenant_id=? AND subject_id=? AND state='valid' "
            f"AND ({likes}) ORDER BY seq DESC LIMIT ?", [mark, tenant_id, subject_id, *[f"%{w}%" for w in words], limit])
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

    def search_backlog(self, tenant_id: str, subject_id: str) -> int:
        return self._c.execute(
            "SELECT (SELECT COALESCE(MAX(rowid), 0) FROM events) - indexed_through FROM events_fts_watermark WHERE id=1"
        ).fetchone()[0]

    def recalls_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[RecallRecord]:
        wanted = orjson.dumps(list(ids)).decode()
        return [rows.recall_from_json(r[0]) for r in self._all(
            "SELECT record FROM recalls r WHERE tenant_id=? AND subject_id=? "
            "AND json_extract(record, '$.query') IS NOT NULL AND ("
            " EXISTS (SELECT 1 FROM json_each(r.record, '$.candidate_ids') c WHERE c.value IN (SELECT value FROM json_each(?)))"
            " OR (r.mode = 'summary' AND json_extract(r.record, '$.alias.artifact_id') IN (SELECT value FROM json_each(?))))"
            " ORDER BY at, rowid", (tenant_id, subject_id, wanted, wanted))]

    def vectors(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind) -> list[tuple[str, bytes]]:
        return self._all("SELECT item_id, vector FROM vectors WHERE tenant_id=? AND subject_id=? AND kind=? "
                         "AND model=?", (tenant_id, subject_id, kind, model))

    def proposals(self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
                  statuses: Sequence[str] | None = None) -> list[Proposal]:
        where, args = ["tenant_id=?", "subject_id=?"], [tenant_id, subject_id]
        if ids is not None:
            where.append(f"proposal_id IN ({_marks(len(ids))})")
            args += list(ids)
        if statuses is not None:
            where.append(f"status IN ({_marks(len(statuses))})")
            args += list(statuses)
        return [Proposal.model_validate_json(r[0]) for r in self._all(
            f"SELECT record FROM proposals WHERE {' AND '.join(where)} ORDER BY created_at, proposal_id", args)]

    def extracted_through(self, tenant_id: str, subject_id: str) -> int:
        row = self._c.execute("SELECT extracted_through FROM clocks WHERE tenant_id=? AND subject_id=?",
                              (tenant_id, subject_id)).fetchone()
        return row[0] if row else 0

    def vector_size(self, tenant_id: str, subject_id: str, model: str) -> int | None:
        row = self._c.execute("SELECT length(vector) FROM vectors WHERE tenant_id=? AND subject_id=? AND model=? "
                              "LIMIT 1", (tenant_id, subject_id, model)).fetchone()
        return row[0] if row else None

    def vectors_version(self, tenant_id: str, subject_id: str) -> int:
        row = self._c.execute("SELECT vectors_version FROM clocks WHERE tenant_id=? AND subject_id=?",
                              (tenant_id, subject_id)).fetchone()
        return row[0] if row else 0

    def unembedded(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind, *,
                   after_seq: int, limit: int) -> list[tuple[str, int, str]]:
        table, item, text, live = EMBEDDABLE[kind]
        return self._all(
            f"SELECT x.{item}, x.seq, {text} FROM {table} x WHERE x.tenant_id=? AND x.subject_id=? AND x.seq > ? "
            f"AND {live} AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.tenant_id=x.tenant_id "
            f"AND v.subject_id=x.subject_id AND v.kind=? AND v.item_id=x.{item} AND v.model=?) ORDER BY x.seq LIMIT ?",
            (tenant_id, subject_id, after_seq, kind, model, limit))

    def jobs(self, tenant_id: str, subject_id: str | None, *, statuses: Sequence[str] | None = None) -> list[Job]:
        where, args = ["tenant_id=?"], [tenant_id]
        if subject_id is not None:
            where.append("subject_id=?")
            args.append(subject_id)
        if statuses is not None:
            where.append(f"status IN ({_marks(len(statuses))})")
            args += statuses
        return [rows.job_from_row(r) for r in self._all(
            f"SELECT {','.join(rows.JOB_COLUMNS)} FROM jobs WHERE {' AND '.join(where)} ORDER BY job_id", args)]


class SQLiteDerivedWrites:
    """Derived-layer writes; the caller holds SQLite's writer lock (BEGIN IMMEDIATE)."""

    _c: sqlite3.Connection

    def refresh_search_index(self) -> int:
        """Index every event appended since the last refresh; returns how many."""
        mark = self._c.execute("SELECT indexed_through FROM events_fts_watermark WHERE id=1").fetchone()[0]
        top = self._c.execute("SELECT COALESCE(MAX(rowid), 0) FROM events").fetchone()[0]
        if top <= mark:
            return 0
        n = self._c.execute(
            "INSERT INTO events_fts (rowid, text, actor) SELECT rowid, text, actor FROM events "
            "WHERE rowid > ? AND rowid <= ? "
            "AND text IS NOT NULL", (mark, top)).rowcount
        self._c.execute("UPDATE events_fts_watermark SET indexed_through=? WHERE id=1", (top,))
        return n

    def put_vectors(self, tenant_id: str, subject_id: str, model: str,
                    items: Sequence[tuple[VectorKind, str, bytes]]) -> int:
        stored = 0
        for kind in ("event", "fact"):
            table, item, _, live = EMBEDDABLE[kind]
            stored += self._c.executemany(
                "INSERT INTO vectors (tenant_id, subject_id, kind, item_id, model, vector) SELECT ?,?,?,?,?,? "
                f"WHERE EXISTS (SELECT 1 FROM {table} x WHERE x.tenant_id=? AND x.{item}=? AND x.subject_id=? "
                f"AND {live}) ON CONFLICT DO NOTHING",
                [(tenant_id, subject_id, kind, i, model, v, tenant_id, i, subject_id) for k, i, v in items if k == kind],
            ).rowcount
        if stored:
            self._c.execute("UPDATE clocks SET vectors_version = vectors_version + 1 WHERE tenant_id=? AND subject_id=?",
                            (tenant_id, subject_id))
        return stored

    def save_proposals(self, proposals: Sequence[Proposal]) -> None:
        self._c.executemany(
            "INSERT INTO proposals (tenant_id, subject_id, proposal_id, status, created_at, record) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT (tenant_id, proposal_id) DO UPDATE SET status=excluded.status, "
            "record=excluded.record",
            [(p.tenant_id, p.subject_id, p.proposal_id, p.status, p.created_at.isoformat(), p.model_dump_json())
             for p in proposals])

    def set_extracted_through(self, tenant_id: str, subject_id: str, seq: int) -> None:
        self._c.execute("UPDATE clocks SET extracted_through=? WHERE tenant_id=? AND subject_id=?",
                        (seq, tenant_id, subject_id))

    def drop_vectors(self, tenant_id: str, subject_id: str, model: str) -> int:
        dropped = self._c.execute("DELETE FROM vectors WHERE tenant_id=? AND subject_id=? AND model=?",
                                  (tenant_id, subject_id, model)).rowcount
        self._c.execute("UPDATE clocks SET vectors_version = vectors_version + 1 WHERE tenant_id=? AND subject_id=?",
                        (tenant_id, subject_id))
        return dropped

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

    def replace_artifact_body(self, tenant_id: str, subject_id: str, artifact_id: str, body: ArtifactBody,
                              gate: dict[str, Any] | None = None) -> None:
        self._c.execute(
            f"UPDATE artifacts SET body=?{', gate=?' if gate is not None else ''} "
            "WHERE tenant_id=? AND subject_id=? AND artifact_id=?",
            (body.model_dump_json(), *([rows.dumps(gate)] if gate is not None else []), tenant_id, subject_id, artifact_id),
        )

    def cancel_pending_jobs(self, tenant_id: str, subject_id: str, *, at: datetime, reason: str) -> int:
        return self._c.execute(
            "UPDATE jobs SET status='done', finished_at=?, reason=reason || ' (' || ? || ')' "
            "WHERE tenant_id=? AND subject_id=? AND status IN ('pending', 'review')",
            (at.isoformat(), reason, tenant_id, subject_id),
        ).rowcount

    def insert_recall(self, record: RecallRecord) -> None:
        self._c.execute(
            "INSERT INTO recalls (tenant_id, subject_id, recall_id, at, mode, record) VALUES (?,?,?,?,?,?)",
            (record.tenant_id, record.subject_id, record.recall_id, record.at.isoformat(), record.mode,
             record.model_dump_json()),
        )

    def replace_recall(self, record: RecallRecord) -> None:
        self._c.execute("UPDATE recalls SET record=? WHERE tenant_id=? AND subject_id=? AND recall_id=?",
                        (record.model_dump_json(), record.tenant_id, record.subject_id, record.recall_id))

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
