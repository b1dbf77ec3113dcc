"""PostgreSQL primitives of the derived layer: alias, artifacts, lineage, attempts,
recall records, full-text search and the rebuild queue.

Mixed into :class:`lossgate.store.pg_tx.PostgresReadTx` and ``PostgresWriteTx``,
whose ``_c`` (the connection), ``_scope`` (set the tenant; in a write, lock the
subject) and ``_use_tenant`` they use.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
import psycopg

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
from lossgate.records import ArtifactBody, Clock, Proposal
from lossgate.store import rows
from lossgate.store.protocol import VectorKind
from lossgate.store.sql_util import EMBEDDABLE

__all__ = ["DerivedReads", "DerivedWrites"]

_ALIAS_COLS = ",".join(rows.ALIAS_COLUMNS)
_ARTIFACT_COLS = ",".join(rows.ARTIFACT_COLUMNS)
_JOB_COLS = ",".join(rows.JOB_COLUMNS)
# 'english' stems like SQLite FTS5's Porter tokenizer (schema 7); recall drops stop words
# before it searches. Indexed lazily: see sql/postgres/0003_lazy_search.sql.
_TSV = "to_tsvector('english', coalesce(e.actor, '') || ' ' || coalesce(e.text, ''))"  # who said it, and what
_QUERY = "websearch_to_tsquery('english', %(q)s)"


class _Tx:
    """What the mixins need from the transaction class they are mixed into."""

    _c: psycopg.Connection[Any]

    _locked: set[tuple[str, str]]

    if TYPE_CHECKING:
        def _scope(self, tenant_id: str, subject_id: str) -> None: ...
        def _use_tenant(self, tenant_id: str) -> None: ...
        def _batch(self, statements: int) -> AbstractContextManager[Any]: ...
        def lock_clock(self, tenant_id: str, subject_id: str) -> Clock: ...
        def alias(self, tenant_id: str, subject_id: str) -> Alias: ...


class DerivedReads(_Tx):

    def alias(self, tenant_id: str, subject_id: str) -> Alias:
        self._scope(tenant_id, subject_id)
        row = self._c.execute(
            f"SELECT {_ALIAS_COLS} FROM aliases WHERE tenant_id=%s AND subject_id=%s", (tenant_id, subject_id),
        ).fetchone()
        return rows.alias_from_row(row) if row else Alias(tenant_id=tenant_id, subject_id=subject_id)

    def recall_head(self, tenant_id: str, subject_id: str) -> tuple[Clock, Alias, ArtifactHead | None]:
        # One round trip for what recall reads first (it is round-trip bound on PostgreSQL).
        self._scope(tenant_id, subject_id)
        row = self._c.execute(
            "SELECT c.high_water, c.input_epoch, a.artifact_id, a.source_epoch, a.covers_through, a.updated_at, "
            "ar.state, ar.body->>'summary', ar.body->'open_items' FROM clocks c "
            "LEFT JOIN aliases a ON a.tenant_id = c.tenant_id AND a.subject_id = c.subject_id "
            "LEFT JOIN artifacts ar ON ar.tenant_id = a.tenant_id AND ar.subject_id = a.subject_id "
            "AND ar.artifact_id = a.artifact_id WHERE c.tenant_id=%s AND c.subject_id=%s",
            (tenant_id, subject_id),
        ).fetchone()
        if row is None:
            return (Clock(tenant_id=tenant_id, subject_id=subject_id),
                    Alias(tenant_id=tenant_id, subject_id=subject_id), None)
        clock = Clock(tenant_id=tenant_id, subject_id=subject_id, high_water=row[0], input_epoch=row[1])
        if row[2] is None:
            alias = Alias(tenant_id=tenant_id, subject_id=subject_id, source_epoch=row[3] or 0,
                          covers_through=row[4] or 0, updated_at=row[5])
            return clock, alias, None
        alias = rows.alias_from_row((tenant_id, subject_id, *row[2:6]))
        head = None if row[6] is None else ArtifactHead(
            artifact_id=row[2], state=row[6], summary=row[7] or "", open_items=tuple(orjson.loads(row[8] or "[]")))
        return clock, alias, head

    def artifact(self, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact | None:
        self._scope(tenant_id, subject_id)
        row = self._c.execute(
            f"SELECT {_ARTIFACT_COLS} FROM artifacts WHERE tenant_id=%s AND subject_id=%s AND artifact_id=%s",
            (tenant_id, subject_id, artifact_id),
        ).fetchone()
        return rows.artifact_from_row(row) if row else None

    def artifact_head(self, tenant_id: str, subject_id: str, artifact_id: str) -> ArtifactHead | None:
        self._scope(tenant_id, subject_id)
        row = self._c.execute(
            "SELECT artifact_id, state, body->>'summary', body->'open_items' "
            "FROM artifacts WHERE tenant_id=%s AND subject_id=%s AND artifact_id=%s",
            (tenant_id, subject_id, artifact_id),
        ).fetchone()
        if row is None:
            return None
        return ArtifactHead(artifact_id=row[0], state=row[1], summary=row[2] or "",
                            open_items=tuple(orjson.loads(row[3] or "[]")))

    def artifacts(self, tenant_id: str, subject_id: str, *, states: Sequence[str] | None = None) -> list[Artifact]:
        self._scope(tenant_id, subject_id)
        sql = f"SELECT {_ARTIFACT_COLS} FROM artifacts WHERE tenant_id=%s AND subject_id=%s"
        args: list[Any] = [tenant_id, subject_id]
        if states is not None:
            sql += " AND state = ANY(%s)"
            args.append(list(states))
        found = self._c.execute(sql + " ORDER BY created_at, created_no", args).fetchall()
        return [rows.artifact_from_row(r) for r in found]

    def lineage(self, tenant_id: str, subject_id: str, artifact_id: str) -> list[LineageEdge]:
        self._scope(tenant_id, subject_id)
        found = self._c.execute(
            "SELECT input_kind, input_id FROM lineage WHERE tenant_id=%s AND subject_id=%s AND artifact_id=%s "
            "ORDER BY input_kind, input_id", (tenant_id, subject_id, artifact_id),
        ).fetchall()
        return [
            LineageEdge(tenant_id=tenant_id, subject_id=subject_id, artifact_id=artifact_id, input_kind=k, input_id=i)
            for k, i in found
        ]

    def descendants(self, tenant_id: str, subject_id: str, input_ids: Sequence[str]) -> list[str]:
        if not input_ids:
            return []
        self._scope(tenant_id, subject_id)
        found = self._c.execute(
            "WITH RECURSIVE d(id) AS ("
            " SELECT artifact_id FROM lineage WHERE tenant_id=%(t)s AND subject_id=%(s)s AND input_id = ANY(%(ids)s)"
            " UNION SELECT l.artifact_id FROM lineage l JOIN d ON l.input_id = d.id"
            "  WHERE l.tenant_id=%(t)s AND l.subject_id=%(s)s AND l.input_kind='artifact')"
            " SELECT id FROM d ORDER BY id",
            {"t": tenant_id, "s": subject_id, "ids": list(input_ids)},
        ).fetchall()
        return [r[0] for r in found]

    def attempts(self, tenant_id: str, subject_id: str) -> list[Attempt]:
        self._scope(tenant_id, subject_id)
        found = self._c.execute(
            "SELECT record FROM attempts WHERE tenant_id=%s AND subject_id=%s ORDER BY number, started_at",
            (tenant_id, subject_id),
        ).fetchall()
        return [rows.attempt_from_json(r[0]) for r in found]

    def search_events(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        # Any term may match (FTS5's OR on the SQLite side); websearch_to_tsquery
        # never raises on user input, and quoting keeps each term literal. Events
        # past the subject's index mark are matched on their text directly.
        terms = [t.replace('"', " ") for t in query.split() if t.strip('"')]
        if not terms:
            return []
        self._scope(tenant_id, subject_id)
        found = self._c.execute(
            # Written so that the plan is good with and without table statistics (a subject
            # loaded a moment ago has none until autovacuum's ANALYZE):
            # - the tsquery is spelled out in each predicate, not joined from a CTE: only
            #   then can the planner match it against the GIN index;
            # - MATERIALIZED: the hits are computed once (inlined, a stale estimate of one
            #   row made the planner re-run the match for every event of the subject);
            # - the events past the index mark are read through the clock row as the range
            #   (mark, high_water], which the planner prices as a short primary-key range: a
            #   lone "seq > mark" was priced as a third of the subject and scanned it all;
            # - OFFSET 0 keeps each LATERAL a per-row primary-key look-up, not a join the
            #   planner may turn into a scan of the subject's events.
            "WITH hits AS MATERIALIZED ("
            f" SELECT x.seq, ts_rank(x.terms, {_QUERY}) AS rank FROM event_terms x"
            f" WHERE x.tenant_id=%(t)s AND x.subject_id=%(s)s AND x.terms @@ {_QUERY}"
            f" UNION ALL SELECT e.seq, ts_rank({_TSV}, {_QUERY}) FROM clocks c JOIN LATERAL ("
            " SELECT * FROM events e WHERE e.tenant_id=c.tenant_id AND e.subject_id=c.subject_id"
            " AND e.seq > c.search_indexed_through AND e.seq <= c.high_water OFFSET 0) e ON true"
            f" WHERE c.tenant_id=%(t)s AND c.subject_id=%(s)s AND {_TSV} @@ {_QUERY})"
            " SELECT e.event_id FROM hits JOIN LATERAL (SELECT event_id, seq FROM events e"
            " WHERE e.tenant_id=%(t)s AND e.subject_id=%(s)s AND e.seq=hits.seq AND e.state='valid' OFFSET 0) e"
            " ON true ORDER BY hits.rank DESC, e.seq DESC LIMIT %(n)s",
            {"q": " or ".join(f'"{t}"' for t in terms), "t": tenant_id, "s": subject_id, "n": limit},
        ).fetchall()
        return [r[0] for r in found]

    def search_facts(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        terms = [t.replace('"', " ") for t in query.split() if t.strip('"')]
        if not terms:
            return []
        self._scope(tenant_id, subject_id)
        found = self._c.execute(
            "SELECT f.fact_id FROM facts f WHERE f.tenant_id=%(t)s AND f.subject_id=%(s)s AND f.status='active' "
            f"AND to_tsvector('english', coalesce(f.search_text, '')) @@ {_QUERY} "  # the GIN index facts_search
            f"ORDER BY ts_rank(to_tsvector('english', coalesce(f.search_text, '')), {_QUERY}) DESC, f.seq DESC "
            "LIMIT %(n)s",
            {"q": " or ".join(f'"{t}"' for t in terms), "t": tenant_id, "s": subject_id, "n": limit},
        ).fetchall()
        return [r[0] for r in found]

    def vectors(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind) -> list[tuple[str, bytes]]:
        self._scope(tenant_id, subject_id)
        with self._c.cursor(binary=True) as cur:  # bytea as raw bytes, not hex text
            cur.execute("SELECT item_id, vector FROM vectors WHERE tenant_id=%s AND subject_id=%s AND kind=%s "
                        "AND model=%s", (tenant_id, subject_id, kind, model))
            return [(item, bytes(vector)) for item, vector in cur.fetchall()]

    def proposals(self, tenant_id: str, subject_id: str, *, ids: Sequence[str] | None = None,
                  statuses: Sequence[str] | None = None) -> list[Proposal]:
        self._scope(tenant_id, subject_id)
        where, args = ["tenant_id=%s", "subject_id=%s"], [tenant_id, subject_id]
        if ids is not None:
            where.append("proposal_id = ANY(%s)")
            args.append(list(ids))
        if statuses is not None:
            where.append("status = ANY(%s)")
            args.append(list(statuses))
        return [Proposal.model_validate_json(r[0]) for r in self._all(
            f"SELECT record::text FROM proposals WHERE {' AND '.join(where)} ORDER BY created_at, proposal_id", args)]

    def extracted_through(self, tenant_id: str, subject_id: str) -> int:
        self._scope(tenant_id, subject_id)
        row = self._c.execute("SELECT extracted_through FROM clocks WHERE tenant_id=%s AND subject_id=%s",
                              (tenant_id, subject_id)).fetchone()
        return row[0] if row else 0

    def vector_size(self, tenant_id: str, subject_id: str, model: str) -> int | None:
        self._scope(tenant_id, subject_id)
        row = self._c.execute("SELECT octet_length(vector) FROM vectors WHERE tenant_id=%s AND subject_id=%s "
                              "AND model=%s LIMIT 1", (tenant_id, subject_id, model)).fetchone()
        return row[0] if row else None

    def vectors_version(self, tenant_id: str, subject_id: str) -> int:
        self._scope(tenant_id, subject_id)
        row = self._c.execute("SELECT vectors_version FROM clocks WHERE tenant_id=%s AND subject_id=%s",
                              (tenant_id, subject_id)).fetchone()
        return row[0] if row else 0

    def unembedded(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind, *,
                   after_seq: int, limit: int) -> list[tuple[str, int, str]]:
        self._scope(tenant_id, subject_id)
        table, item, text, live = EMBEDDABLE[kind]
        return self._all(
            f"SELECT x.{item}, x.seq, {text} FROM {table} x WHERE x.tenant_id=%s AND x.subject_id=%s AND x.seq > %s "
            f"AND {live} AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.tenant_id=x.tenant_id "
            f"AND v.subject_id=x.subject_id AND v.kind=%s AND v.item_id=x.{item} AND v.model=%s) ORDER BY x.seq LIMIT %s",
            (tenant_id, subject_id, after_seq, kind, model, limit))

    def recalls(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[RecallRecord]:
        self._scope(tenant_id, subject_id)
        found = self._c.execute(
            "SELECT record FROM recalls WHERE tenant_id=%s AND subject_id=%s ORDER BY at DESC, recall_no DESC LIMIT %s",
            (tenant_id, subject_id, limit),
        ).fetchall()
        return [rows.recall_from_json(r[0]) for r in found]

    def search_backlog(self, tenant_id: str, subject_id: str) -> int:
        self._scope(tenant_id, subject_id)
        row = self._c.execute(
            "SELECT high_water - search_indexed_through FROM clocks WHERE tenant_id=%s AND subject_id=%s",
            (tenant_id, subject_id)).fetchone()
        return row[0] if row else 0

    def recalls_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[RecallRecord]:
        self._scope(tenant_id, subject_id)
        found = self._c.execute(
            "SELECT record FROM recalls r WHERE tenant_id=%(t)s AND subject_id=%(s)s AND record->>'query' IS NOT NULL AND ("
            " EXISTS (SELECT 1 FROM json_array_elements_text(r.record->'candidate_ids') c WHERE c = ANY(%(ids)s))"
            " OR (r.mode = 'summary' AND r.record->'alias'->>'artifact_id' = ANY(%(ids)s)))"
            " ORDER BY at, recall_no", {"t": tenant_id, "s": subject_id, "ids": list(ids)},
        ).fetchall()
        return [rows.recall_from_json(r[0]) for r in found]

    def jobs(self, tenant_id: str, subject_id: str | None, *, statuses: Sequence[str] | None = None) -> list[Job]:
        self._use_tenant(tenant_id)
        where, args = ["tenant_id=%s"], [tenant_id]
        if subject_id is not None:
            where.append("subject_id=%s")
            args.append(subject_id)
        if statuses is not None:
            where.append("status = ANY(%s)")
            args.append(list(statuses))
        found = self._c.execute(f"SELECT {_JOB_COLS} FROM jobs WHERE {' AND '.join(where)} ORDER BY job_id", args)
        return [rows.job_from_row(r) for r in found.fetchall()]


class DerivedWrites(_Tx):

    def put_vectors(self, tenant_id: str, subject_id: str, model: str,
                    items: Sequence[tuple[VectorKind, str, bytes]]) -> int:
        self._scope(tenant_id, subject_id)
        stored = 0
        for kind in ("event", "fact"):
            table, item, _, live = EMBEDDABLE[kind]
            wanted = [(i, v) for k, i, v in items if k == kind]
            if not wanted:
                continue
            # Only items still embeddable under this transaction's lock of the subject: one
            # deleted while it was being embedded gets no vector.
            stored += self._c.execute(
                "INSERT INTO vectors (tenant_id, subject_id, kind, item_id, model, vector) "
                f"SELECT %(t)s, %(s)s, %(k)s, w.item, %(m)s, w.vector FROM unnest(%(ids)s::text[], %(vs)s::bytea[]) "
                f"AS w(item, vector) WHERE EXISTS (SELECT 1 FROM {table} x WHERE x.tenant_id=%(t)s "
                f"AND x.subject_id=%(s)s AND x.{item}=w.item AND {live}) ON CONFLICT DO NOTHING",
                {"t": tenant_id, "s": subject_id, "k": kind, "m": model,
                 "ids": [i for i, _ in wanted], "vs": [v for _, v in wanted]},
            ).rowcount
        if stored:
            self._c.execute("UPDATE clocks SET vectors_version = vectors_version + 1 "
                            "WHERE tenant_id=%s AND subject_id=%s", (tenant_id, subject_id))
        return stored

    def save_proposals(self, proposals: Sequence[Proposal]) -> None:
        for tenant_id, subject_id in {(p.tenant_id, p.subject_id) for p in proposals}:
            self._scope(tenant_id, subject_id)
        with self._c.cursor() as cur:
            cur.executemany(
                "INSERT INTO proposals (tenant_id, subject_id, proposal_id, status, created_at, record) "
                "VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (tenant_id, proposal_id) DO UPDATE SET "
                "status=excluded.status, record=excluded.record",
                [(p.tenant_id, p.subject_id, p.proposal_id, p.status, p.created_at, p.model_dump_json())
                 for p in proposals])

    def set_extracted_through(self, tenant_id: str, subject_id: str, seq: int) -> None:
        self._scope(tenant_id, subject_id)
        self._c.execute("UPDATE clocks SET extracted_through=%s WHERE tenant_id=%s AND subject_id=%s",
                        (seq, tenant_id, subject_id))

    def drop_vectors(self, tenant_id: str, subject_id: str, model: str) -> int:
        self._scope(tenant_id, subject_id)
        dropped = self._c.execute("DELETE FROM vectors WHERE tenant_id=%s AND subject_id=%s AND model=%s",
                                  (tenant_id, subject_id, model)).rowcount
        self._c.execute("UPDATE clocks SET vectors_version = vectors_version + 1 WHERE tenant_id=%s AND subject_id=%s",
                        (tenant_id, subject_id))
        return dropped

    def lock_alias(self, tenant_id: str, subject_id: str) -> Alias:
        self.lock_clock(tenant_id, subject_id)  # the alias row references the clock row; this locks both
        self._c.execute(
            "INSERT INTO aliases (tenant_id, subject_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (tenant_id, subject_id),
        )
        return self.alias(tenant_id, subject_id)

    def cas_alias(
        self, tenant_id: str, subject_id: str, *, expected: ExpectedAlias, artifact_id: str,
        source_epoch: int, covers_through: int, at: datetime,
    ) -> bool:
        self._scope(tenant_id, subject_id)
        cur = self._c.execute(
            "UPDATE aliases SET artifact_id=%s, source_epoch=%s, covers_through=%s, updated_at=%s "
            "WHERE tenant_id=%s AND subject_id=%s AND artifact_id IS NOT DISTINCT FROM %s AND source_epoch=%s "
            "AND covers_through=%s AND %s >= covers_through",
            (artifact_id, source_epoch, covers_through, at, tenant_id, subject_id,
             expected.parent_artifact_id, expected.source_epoch, expected.covers_through, covers_through),
        )
        return cur.rowcount == 1

    def insert_artifact(self, artifact: Artifact, edges: Sequence[LineageEdge]) -> None:
        self._scope(artifact.tenant_id, artifact.subject_id)
        with self._c.cursor() as cur:
            cur.execute(
                f"INSERT INTO artifacts ({_ARTIFACT_COLS}) VALUES ({','.join(['%s'] * len(rows.ARTIFACT_COLUMNS))})",
                rows.artifact_row(artifact),
            )
            if edges:  # an edge naming another tenant is refused by the row policy
                cur.executemany(
                    "INSERT INTO lineage (tenant_id, subject_id, artifact_id, input_kind, input_id) "
                    "VALUES (%s,%s,%s,%s,%s)",
                    [(e.tenant_id, e.subject_id, e.artifact_id, e.input_kind, e.input_id) for e in edges],
                )

    def set_artifact_state(
        self, tenant_id: str, subject_id: str, artifact_ids: Sequence[str], state: str, *, reason: str,
        from_states: Sequence[str] | None = None,
    ) -> list[str]:
        self._scope(tenant_id, subject_id)
        only = " AND state = ANY(%s)" if from_states else ""
        found = self._c.execute(
            "UPDATE artifacts SET state=%s, state_reason=%s "
            f"WHERE tenant_id=%s AND subject_id=%s AND artifact_id = ANY(%s){only} RETURNING artifact_id",
            (state, reason, tenant_id, subject_id, list(artifact_ids), *([list(from_states)] if from_states else [])),
        ).fetchall()
        return sorted(r[0] for r in found)

    def replace_artifact_body(self, tenant_id: str, subject_id: str, artifact_id: str, body: ArtifactBody,
                              gate: dict[str, Any] | None = None) -> None:
        self._scope(tenant_id, subject_id)
        self._c.execute(
            f"UPDATE artifacts SET body=%s{', gate=%s' if gate is not None else ''} "
            "WHERE tenant_id=%s AND subject_id=%s AND artifact_id=%s",
            (body.model_dump_json(), *([rows.dumps(gate)] if gate is not None else []), tenant_id, subject_id, artifact_id),
        )

    def cancel_pending_jobs(self, tenant_id: str, subject_id: str, *, at: datetime, reason: str) -> int:
        self._scope(tenant_id, subject_id)
        return self._c.execute(
            "UPDATE jobs SET status='done', finished_at=%s, reason=reason || ' (' || %s || ')' "
            "WHERE tenant_id=%s AND subject_id=%s AND status IN ('pending', 'review')",
            (at, reason, tenant_id, subject_id),
        ).rowcount

    def save_attempt(self, attempt: Attempt) -> None:
        self._scope(attempt.tenant_id, attempt.subject_id)
        self._c.execute(
            "INSERT INTO attempts (tenant_id, subject_id, attempt_id, number, status, record, started_at) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (tenant_id, attempt_id) DO UPDATE SET "
            "status=excluded.status, record=excluded.record",
            (attempt.tenant_id, attempt.subject_id, attempt.attempt_id, attempt.number, attempt.status,
             attempt.model_dump_json(), attempt.started_at),
        )

    def insert_recall(self, record: RecallRecord) -> None:
        # Evidence, not memory: it takes no clock lock (a recall never waits behind a writer)
        # and does not wait for the WAL flush; the three statements go in one round trip.
        with self._batch(3):
            self._use_tenant(record.tenant_id)
            self._c.execute("SET LOCAL synchronous_commit TO OFF")
            self._c.execute(
                "INSERT INTO recalls (tenant_id, subject_id, recall_id, at, mode, record) VALUES (%s,%s,%s,%s,%s,%s)",
                (record.tenant_id, record.subject_id, record.recall_id, record.at, record.mode,
                 record.model_dump_json()),
            )

    def replace_recall(self, record: RecallRecord) -> None:
        self._scope(record.tenant_id, record.subject_id)
        self._c.execute("UPDATE recalls SET record=%s WHERE tenant_id=%s AND subject_id=%s AND recall_id=%s",
                        (record.model_dump_json(), record.tenant_id, record.subject_id, record.recall_id))

    def set_tier(self, tenant_id: str, subject_id: str, *, through_seq: int, tier: str) -> int:
        self._scope(tenant_id, subject_id)
        return self._c.execute(
            "UPDATE events SET tier=%s WHERE tenant_id=%s AND subject_id=%s AND seq<=%s AND tier<>%s",
            (tier, tenant_id, subject_id, through_seq, tier),
        ).rowcount

    def enqueue_job(self, tenant_id: str, subject_id: str, *, reason: str, run_after: datetime, at: datetime) -> bool:
        self._scope(tenant_id, subject_id)
        return self._c.execute(
            "INSERT INTO jobs (tenant_id, subject_id, status, reason, run_after, enqueued_at) "
            "VALUES (%s,%s,'pending',%s,%s,%s) "
            "ON CONFLICT (tenant_id, subject_id) WHERE status='pending' DO NOTHING",
            (tenant_id, subject_id, reason, run_after, at),
        ).rowcount == 1

    def claim_job(self, *, owner: str, lease_seconds: float, now: datetime) -> Job | None:
        # Workers on any host share the queue: SKIP LOCKED lets each take a different
        # job instead of queueing behind one. Seeing every tenant's jobs is reserved
        # to the queue role, reached only through this function (0005_queue_role.sql).
        row = self._c.execute(
            f"SELECT {_JOB_COLS} FROM lossgate_claim_job(%s, %s, %s)",
            (owner, now + timedelta(seconds=lease_seconds), now),
        ).fetchone()
        return rows.job_from_row(row) if row else None

    def heartbeat_job(self, job_id: int, *, owner: str, lease_expires_at: datetime) -> bool:
        row = self._c.execute("SELECT lossgate_heartbeat_job(%s, %s, %s)", (job_id, owner, lease_expires_at)).fetchone()
        return bool(row and row[0])

    def refresh_search_index(self) -> int:
        # Row-level security confines a transaction to its tenants, so "everything"
        # means the subjects this transaction has locked: the consolidator calls
        # this with its subject locked. Indexing under the lock is what makes the
        # per-subject mark exact.
        indexed = 0
        for tenant_id, subject_id in sorted(self._locked):
            self._use_tenant(tenant_id)
            row = self._c.execute(
                "WITH c AS (SELECT search_indexed_through AS mark, high_water FROM clocks"
                "  WHERE tenant_id=%(t)s AND subject_id=%(s)s),"
                " ins AS (INSERT INTO event_terms (tenant_id, subject_id, seq, terms)"
                f"  SELECT e.tenant_id, e.subject_id, e.seq, {_TSV} FROM events e, c"
                "  WHERE e.tenant_id=%(t)s AND e.subject_id=%(s)s AND e.seq > c.mark AND e.seq <= c.high_water"
                "  RETURNING 1),"
                " upd AS (UPDATE clocks SET search_indexed_through = c.high_water FROM c"
                "  WHERE tenant_id=%(t)s AND subject_id=%(s)s AND c.high_water > c.mark)"
                " SELECT count(*) FROM ins",
                {"t": tenant_id, "s": subject_id},
            ).fetchone()
            indexed += row[0] if row else 0
        return indexed

    def finish_job(self, tenant_id: str, subject_id: str, job_id: int, *, owner: str, status: str,
                   at: datetime, run_after: datetime | None = None) -> bool:
        self._scope(tenant_id, subject_id)
        if status == "pending" and self._c.execute(
            "SELECT 1 FROM jobs WHERE tenant_id=%s AND subject_id=%s AND status='pending'", (tenant_id, subject_id),
        ).fetchone():
            status = "done"  # retrying: fold into the job already pending for the subject
        cur = self._c.execute(
            "UPDATE jobs SET status=%s, run_after=COALESCE(%s, run_after), lease_owner=NULL, "
            "lease_expires_at=NULL, finished_at=%s WHERE tenant_id=%s AND subject_id=%s AND job_id=%s "
            "AND status='running' AND lease_owner=%s",
            (status, run_after, at, tenant_id, subject_id, job_id, owner),
        )
        return cur.rowcount == 1
