"""PostgreSQL's own primitives of the derived, queue and search tiers: the recall head in
one statement, full-text search over the lazily indexed ``event_terms`` and the fresh
tail, the records touching ids (recalls, guard results and responses: json operators), vectors as ``bytea`` arrays, the
recall record written without waiting for a lock or the WAL, and the worker's claim
through its ``SECURITY DEFINER`` functions.

Mixed into :mod:`lossgate.store.postgres.tx`'s transactions beside the shared ones of
:mod:`lossgate.store.core.derived`; they use the transaction's ``_c`` (the
connection), ``_use_tenant`` and ``_batch``. Every primitive is scoped before its body
runs (:mod:`lossgate.store.core.base`): none of them sets its tenant or locks its
subject by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
import psycopg

from lossgate.model.derived_records import Alias, ArtifactHead, GuardResult, Job, RecallRecord, ResponseRecord
from lossgate.model.records import Clock
from lossgate.model.search_terms import SEARCH_SEPARATORS, searchable
from lossgate.store import rows
from lossgate.store.core.bm25 import bm25_order, cap_for
from lossgate.store.core.derived import EMBEDDABLE, CoreDerivedReads, CoreDerivedWrites, search_terms
from lossgate.store.protocol import VectorKind

__all__ = ["PostgresDerivedReads", "PostgresDerivedWrites"]

_JOB_COLS = ",".join(rows.JOB_COLUMNS)
# 'english' stems like SQLite FTS5's Porter tokenizer (schema 7); recall drops stop words
# before it searches. Indexed lazily: see migrations/0003_lazy_search.sql.
# Who said it, and what, with the punctuation that glues words into one token of the
# parser replaced by spaces (lossgate.model.search_terms.SEARCH_SEPARATORS; schema 19).
_TSV = (
    "to_tsvector('english', translate(coalesce(e.actor, '') || ' ' || coalesce(e.text, ''), "
    f"'{SEARCH_SEPARATORS}', '{' ' * len(SEARCH_SEPARATORS)}'))"
)
_QUERY = "websearch_to_tsquery('english', %(q)s)"
# The subject's events past its index mark (FROM ... WHERE, for a select of e's columns): the
# range (mark, high_water] read through the clock row, which the planner prices as a short
# primary-key range (a lone "seq > mark" was priced as a third of the subject and scanned it all).
_PAST_MARK = (
    "FROM clocks c JOIN LATERAL ("
    " SELECT * FROM events e WHERE e.tenant_id=c.tenant_id AND e.subject_id=c.subject_id"
    " AND e.seq > c.search_indexed_through AND e.seq <= c.high_water OFFSET 0) e ON true"
    " WHERE c.tenant_id=%(t)s AND c.subject_id=%(s)s"
)
# The recall record {tied} names touched one of %(ids)s, as recalls_touching reads it: a
# candidate, or the summary it read.
_RECALL_TOUCHED = (
    "EXISTS (SELECT 1 FROM recalls c WHERE c.tenant_id={tied}.tenant_id AND c.subject_id={tied}.subject_id"
    " AND c.recall_id={tied}.recall_id AND ("
    "  EXISTS (SELECT 1 FROM json_array_elements_text(c.record->'candidate_ids') x WHERE x = ANY(%(ids)s))"
    "  OR (c.mode = 'summary' AND c.record->'alias'->>'artifact_id' = ANY(%(ids)s))))"
)


def _tsquery(query: str) -> str | None:
    """Any word of ``query``, each quoted so that it stays literal (websearch_to_tsquery never
    raises on user input; FTS5's OR on the SQLite side); ``None`` when it has no word. An
    identifier's pieces (``inv-5``) become the phrase of its pieces, as they are indexed."""
    terms = [searchable(t.replace('"', " ")) for t in query.split() if t.strip('"')]
    return " or ".join(f'"{t}"' for t in terms) if terms else None


class PostgresDerivedReads(CoreDerivedReads):
    """PostgreSQL's own derived-layer and search reads."""

    _c: psycopg.Connection[Any]

    if TYPE_CHECKING:  # provided by PostgresReadTx

        def _batch(self, statements: int) -> AbstractContextManager[Any]: ...

    def recall_head(self, tenant_id: str, subject_id: str) -> tuple[Clock, Alias, ArtifactHead | None]:
        # One round trip for what recall reads first (it is round-trip bound on PostgreSQL).
        row = self._c.execute(
            "SELECT c.high_water, c.input_epoch, a.artifact_id, a.source_epoch, a.covers_through, a.updated_at, "
            "ar.state, ar.body->>'summary', ar.body->'open_items' FROM clocks c "
            "LEFT JOIN aliases a ON a.tenant_id = c.tenant_id AND a.subject_id = c.subject_id "
            "LEFT JOIN artifacts ar ON ar.tenant_id = a.tenant_id AND ar.subject_id = a.subject_id "
            "AND ar.artifact_id = a.artifact_id WHERE c.tenant_id=%s AND c.subject_id=%s",
            (tenant_id, subject_id),
        ).fetchone()
        if row is None:
            return (
                Clock(tenant_id=tenant_id, subject_id=subject_id),
                Alias(tenant_id=tenant_id, subject_id=subject_id),
                None,
            )
        clock = Clock(tenant_id=tenant_id, subject_id=subject_id, high_water=row[0], input_epoch=row[1])
        if row[2] is None:
            alias = Alias(
                tenant_id=tenant_id,
                subject_id=subject_id,
                source_epoch=row[3] or 0,
                covers_through=row[4] or 0,
                updated_at=row[5],
            )
            return clock, alias, None
        alias = rows.alias_from_row((tenant_id, subject_id, *row[2:6]))
        head = (
            None
            if row[6] is None
            else ArtifactHead(
                artifact_id=row[2], state=row[6], summary=row[7] or "", open_items=tuple(orjson.loads(row[8] or "[]"))
            )
        )
        return clock, alias, head

    def search_events(
        self, tenant_id: str, subject_id: str, query: str, *, limit: int, skip_erased: bool = False
    ) -> list[str]:
        # Ranked by BM25 (lossgate.store.core.bm25.bm25_order) over each term's newest
        # matches, at most TERM_CAP and one more a term: ts_rank has no document frequency.
        terms = search_terms(query)
        if not terms:
            return []
        cap = cap_for(len(terms), self.term_cap)
        order = bm25_order(
            self._term_stats(tenant_id, subject_id, terms, cap=cap + 1),
            self.clock(tenant_id, subject_id).high_water,
            cap,
        )
        return self._valid_in_order(tenant_id, subject_id, order, limit=limit, skip_erased=skip_erased)

    def _term_stats(
        self, tenant_id: str, subject_id: str, terms: Sequence[str], *, cap: int
    ) -> list[list[tuple[int, int, int]]]:
        """For each term (a word, or an identifier matched as the phrase of its pieces), the
        subject's newest valid events matching it, at most ``cap``, newest first, as ``(seq,
        tf, length)``: indexed ones through lossgate_event_term_stats (migrations/0025, 0027), the
        events past the index mark on their text here, in one statement for every term."""
        # what lossgate_event_term_stats computes of an indexed event's terms, for one read here
        fresh = (
            f"SELECT x.seq, s.f, s.l FROM (SELECT e.seq, {_TSV} AS v {_PAST_MARK} AND e.state = 'valid'"
            f" AND {_TSV} @@ websearch_to_tsquery('english', o.q) ORDER BY e.seq DESC LIMIT %(n)s) x"
            " CROSS JOIN LATERAL (SELECT coalesce(min(u.n) FILTER (WHERE u.lexeme = ANY ("
            "tsvector_to_array(to_tsvector('english', o.q)))), 1)::integer AS f, coalesce(sum(u.n), 1)::integer AS l"
            " FROM (SELECT t.lexeme, coalesce(array_length(t.positions, 1), 1) AS n FROM unnest(x.v) t) u) s"
        )
        rows = self._c.execute(
            "SELECT o.i, p.seq, p.f, p.l FROM unnest(%(qs)s::text[]) WITH ORDINALITY o(q, i) CROSS JOIN LATERAL ("
            f" ({fresh}) UNION ALL SELECT h.seq, h.tf, h.dl FROM lossgate_event_term_stats(%(s)s, o.q, %(n)s) h"
            ") p(seq, f, l)",
            {"qs": [_tsquery(t) or '""' for t in terms], "t": tenant_id, "s": subject_id, "n": cap},
        ).fetchall()
        found: list[list[tuple[int, int, int]]] = [[] for _ in terms]
        for i, seq, f, n in rows:
            found[i - 1].append((seq, f, n))
        return [sorted(stats, reverse=True)[:cap] for stats in found]

    def search_facts(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        q = _tsquery(query)
        if q is None:
            return []
        # Through the partial GIN index of active facts, in lossgate_fact_hits (migrations/0018:
        # under the tenant policy the non-LEAKPROOF match could use no index).
        found = self._c.execute(
            "SELECT h.fact_id FROM lossgate_fact_hits(%(s)s, %(q)s) h ORDER BY h.rank DESC, h.seq DESC LIMIT %(n)s",
            {"q": q, "s": subject_id, "n": limit},
        ).fetchall()
        return [r[0] for r in found]

    def descendants(self, tenant_id: str, subject_id: str, input_ids: Sequence[str]) -> list[str]:
        # Level by level, each input looked up alone through lineage_by_input (an equality on
        # every column; OFFSET 0 keeps the look-up from being flattened into a join): a
        # recursive join, on tables without statistics (before autovacuum's first ANALYZE),
        # was planned as a walk of the subject's whole lineage at every level, 115 ms a
        # revocation at 30,000 events.
        found: set[str] = set()
        frontier = list(dict.fromkeys(input_ids))
        kind = ""  # the inputs may be events, facts or artifacts; then only artifacts
        while frontier:
            step = {
                r[0]
                for r in self._all(
                    "SELECT l.artifact_id FROM unnest(?::text[]) AS wanted(id) CROSS JOIN LATERAL ("
                    " SELECT artifact_id, input_kind FROM lineage"
                    " WHERE tenant_id=? AND subject_id=? AND input_id = wanted.id OFFSET 0) l"
                    f" WHERE true{kind}",
                    [frontier, tenant_id, subject_id],
                )
            } - found
            found |= step
            frontier, kind = sorted(step), " AND l.input_kind='artifact'"
        return sorted(found)  # ids are compared bytewise on both engines: code point order

    def search_backlog(self, tenant_id: str, subject_id: str) -> int:
        return self._value(  # type: ignore[no-any-return]
            "SELECT high_water - search_indexed_through FROM clocks WHERE tenant_id=? AND subject_id=?",
            (tenant_id, subject_id),
            0,
        )

    def recalls_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[RecallRecord]:
        found = self._c.execute(
            "SELECT record FROM recalls r WHERE tenant_id=%(t)s AND subject_id=%(s)s AND record->>'query' IS NOT NULL AND ("
            " EXISTS (SELECT 1 FROM json_array_elements_text(r.record->'candidate_ids') c WHERE c = ANY(%(ids)s))"
            " OR (r.mode = 'summary' AND r.record->'alias'->>'artifact_id' = ANY(%(ids)s)))"
            " ORDER BY at, recall_no",
            {"t": tenant_id, "s": subject_id, "ids": list(ids)},
        ).fetchall()
        return [rows.recall_from_json(r[0]) for r in found]

    def guard_results_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[GuardResult]:
        found = self._c.execute(
            "SELECT record FROM guard_results g WHERE tenant_id=%(t)s AND subject_id=%(s)s"
            " AND record->>'redacted' IS NULL AND ("
            " EXISTS (SELECT 1 FROM json_array_elements(g.record->'refusals') f"
            "  WHERE f->>'fact_id' = ANY(%(ids)s) OR f->>'conflict_id' = ANY(%(ids)s)"
            "  OR EXISTS (SELECT 1 FROM json_array_elements_text(f->'source_event_ids') e WHERE e = ANY(%(ids)s)))"
            " OR EXISTS (SELECT 1 FROM json_array_elements_text(coalesce(g.record->'read', '[]'::json)) r"
            "  WHERE r = ANY(%(ids)s))"
            f" OR {_RECALL_TOUCHED.format(tied='g')}) ORDER BY at, guard_no",
            {"t": tenant_id, "s": subject_id, "ids": list(ids)},
        ).fetchall()
        return [rows.guard_from_json(r[0]) for r in found]

    def responses_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[ResponseRecord]:
        found = self._c.execute(
            "SELECT record FROM responses r WHERE tenant_id=%(t)s AND subject_id=%(s)s"
            f" AND record->>'redacted' IS NULL AND ({_RECALL_TOUCHED.format(tied='r')}"
            " OR record->>'guard_id' = ANY(%(ids)s)) ORDER BY at, response_no",
            {"t": tenant_id, "s": subject_id, "ids": list(ids)},
        ).fetchall()
        return [rows.response_from_json(r[0]) for r in found]

    def vectors(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind) -> list[tuple[str, bytes]]:
        with self._c.cursor(binary=True) as cur:  # bytea as raw bytes, not hex text
            cur.execute(
                "SELECT item_id, vector FROM vectors WHERE tenant_id=%s AND subject_id=%s AND kind=%s AND model=%s",
                (tenant_id, subject_id, kind, model),
            )
            return [(item, bytes(vector)) for item, vector in cur.fetchall()]


class PostgresDerivedWrites(CoreDerivedWrites):
    """PostgreSQL's own derived-layer, queue and search writes."""

    _c: psycopg.Connection[Any]
    _locked: set[tuple[str, str]]

    if TYPE_CHECKING:  # provided by PostgresReadTx

        def _batch(self, statements: int) -> AbstractContextManager[Any]: ...

    def put_vectors(
        self, tenant_id: str, subject_id: str, model: str, items: Sequence[tuple[VectorKind, str, bytes]]
    ) -> int:
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
                {
                    "t": tenant_id,
                    "s": subject_id,
                    "k": kind,
                    "m": model,
                    "ids": [i for i, _ in wanted],
                    "vs": [v for _, v in wanted],
                },
            ).rowcount
        if stored:
            self._bump_vectors_version(tenant_id, subject_id)
        return stored

    def insert_recall(self, record: RecallRecord) -> None:
        # Evidence, not memory: it takes no clock lock (a recall never waits behind a writer:
        # the protocol declares it tenant-only) and does not wait for the WAL flush; the
        # tenant switch and the two statements go in one round trip.
        with self._batch(3):
            self._use_tenant(record.tenant_id)
            self._c.execute("SET LOCAL synchronous_commit TO OFF")
            self._c.execute(
                "INSERT INTO recalls (tenant_id, subject_id, recall_id, at, mode, record) VALUES (%s,%s,%s,%s,%s,%s)",
                (
                    record.tenant_id,
                    record.subject_id,
                    record.recall_id,
                    record.at,
                    record.mode,
                    record.model_dump_json(),
                ),
            )

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
