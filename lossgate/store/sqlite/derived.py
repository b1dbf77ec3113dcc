"""SQLite's own primitives of the derived, queue and search tiers: FTS5 search with its
watermark, the recall head, the records touching ids (recalls, guard results and
responses: JSON1), vectors, and claiming a job under the file's writer lock. Mixed into :mod:`lossgate.store.sqlite.tx`'s
transactions, beside the shared ones of :mod:`lossgate.store.core.derived`."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson

from lossgate.model.derived_records import Alias, ArtifactHead, GuardResult, Job, RecallRecord, ResponseRecord
from lossgate.model.records import Clock
from lossgate.store import rows
from lossgate.store.core.bm25 import K1, B, bm25_order, idf
from lossgate.store.core.derived import EMBEDDABLE, CoreDerivedReads, CoreDerivedWrites
from lossgate.store.core.tx import UNERASED
from lossgate.store.protocol import VectorKind

__all__ = ["SQLiteDerivedReads", "SQLiteDerivedWrites"]

_JOB_SELECT = f"SELECT {','.join(rows.JOB_COLUMNS)} FROM jobs"
# The recall record {tied} names touched one of the ids (a JSON array bound twice, as in
# recalls_touching): a candidate, or the summary it read.
_RECALL_TOUCHED = (
    "EXISTS (SELECT 1 FROM recalls c WHERE c.tenant_id={tied}.tenant_id AND c.subject_id={tied}.subject_id"
    " AND c.recall_id={tied}.recall_id AND ("
    "  EXISTS (SELECT 1 FROM json_each(c.record, '$.candidate_ids') x WHERE x.value IN (SELECT value FROM json_each(?)))"
    "  OR (c.mode = 'summary' AND json_extract(c.record, '$.alias.artifact_id') IN (SELECT value FROM json_each(?)))))"
)


def _fts_terms(query: str) -> list[str]:
    """Each word of ``query``, quoted (FTS5 syntax never comes from the caller). A quoted
    identifier (``"inv-5"``) is tokenized by FTS5 into its pieces, matched as a phrase."""
    return ['"' + t.replace('"', '""') + '"' for t in query.split() if t]


def _varints(data: bytes | None) -> list[int]:
    """SQLite varints (7 bits a byte, the 9th whole), as FTS5 writes its averages record
    (``%_data`` row 1: the row count, then each column's token count) and each row's column
    sizes (``%_docsize``)."""
    out: list[int] = []
    data, at = data or b"", 0
    while at < len(data):
        value = 0
        for n in range(9):
            byte = data[at]
            at += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


_TOKEN = re.compile(r"\w+")


def _frequency(weight: float, length: int, mean: float) -> float:
    """The term frequency behind ``weight``, a term's BM25 weight in a row of ``length``
    tokens against the index's ``mean`` (:func:`lossgate.store.core.bm25.term_weight`
    solved for the frequency)."""
    saturation = K1 * (1 - B + B * length / max(mean, 1e-9))
    return weight * saturation / max(K1 + 1 - weight, 1e-9)


def _row_length(sizes: bytes | None) -> int:
    """A full-text row's length in tokens, from its column sizes (``%_docsize``): one byte a
    column below 128 tokens (the usual case), varints past it."""
    return sum(sizes) if sizes and sizes.isascii() else sum(_varints(sizes))


def _frequencies(weights: Sequence[dict[int, float]], lengths: dict[int, int], mean: float) -> list[dict[int, float]]:
    """For each term, its frequency in each of the rows of ``lengths`` it matched, read back
    from its ``weights`` (:meth:`SQLiteDerivedReads._fts_weights`) against the index's ``mean``."""
    return [
        {rowid: _frequency(w, lengths[rowid], mean) for rowid, w in weight.items() if rowid in lengths}
        for weight in weights
    ]


def _ranked(frequencies: Sequence[dict[int, float]], lengths: dict[int, int], total: int) -> list[int]:
    """The rows of ``lengths`` (by position: newer higher), best first by BM25 as PostgreSQL
    ranks (:func:`lossgate.store.core.bm25.bm25_order`): each term weighed by its matches among
    them (of ``total`` in the subject), each row's length against the mean length of the rows
    matched; ties to the newest. Every match of each term is in ``frequencies``."""
    stats = [sorted(((at, tf, lengths[at]) for at, tf in f.items()), reverse=True) for f in frequencies]
    return bm25_order(stats, total, cap=max(map(len, stats), default=0) + 1)


def _like(word: str) -> str:
    """``word`` as a LIKE pattern's literal (``\\`` escapes): "a_1" does not match "ab1"."""
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class SQLiteDerivedReads(CoreDerivedReads):
    """SQLite's own derived-layer and search reads."""

    _c: sqlite3.Connection

    def recall_head(self, tenant_id: str, subject_id: str) -> tuple[Clock, Alias, ArtifactHead | None]:
        # In-process: three indexed look-ups cost less than building one joined statement.
        alias = self.alias(tenant_id, subject_id)
        head = self.artifact_head(tenant_id, subject_id, alias.artifact_id) if alias.artifact_id else None
        return self.clock(tenant_id, subject_id), alias, head

    def _term_matches(
        self, tenant_id: str, subject_id: str, terms: Sequence[str], *, cap: int
    ) -> list[list[int]] | None:
        # The index in its own order, newest first (FTS5 walks a term's rowids backwards
        # without ranking them). The index is one for the file: first each term's matches in
        # the file alone, which settle it when every term has fewer than cap (the usual case
        # but for a subject's common words, at no look-up of an event; one OR of a long
        # query's terms walks slower than the terms one by one); then
        # each match's event looked up by rowid ("+": not through the subject's indexes),
        # and the events past the index matched on their text.
        mark, top = self._one(
            "SELECT indexed_through, (SELECT COALESCE(MAX(rowid), 0) FROM events) FROM events_fts_watermark WHERE id=1"
        ) or (0, 0)
        quoted = ['"' + term.replace('"', '""') + '"' for term in terms]
        backlog = max(0, top - mark)
        if all(
            len(
                self._all("SELECT rowid FROM events_fts WHERE events_fts MATCH ? ORDER BY rowid DESC LIMIT ?", (q, cap))
            )
            + backlog
            < cap
            for q in quoted
        ):
            return None
        found = []
        for term, q in zip(terms, quoted, strict=False):
            fresh = (
                []
                if top <= mark
                else [
                    r[0] for r in self._past_index("e.seq", mark, tenant_id, subject_id, [term.strip('"')], limit=cap)
                ]
            )
            found.append(
                fresh
                + [
                    r[0]
                    for r in self._all(
                        "SELECT e.seq FROM events_fts f CROSS JOIN events e ON e.rowid = f.rowid "
                        f"WHERE events_fts MATCH ? AND {self._d.no_index('e.tenant_id')}=? "
                        f"AND {self._d.no_index('e.subject_id')}=? AND e.state='valid' ORDER BY f.rowid DESC LIMIT ?",
                        (q, tenant_id, subject_id, cap - len(fresh)),
                    )
                ]
            )
        return found

    def _ranked_events(
        self, tenant_id: str, subject_id: str, query: str, *, limit: int, skip_erased: bool
    ) -> list[str]:
        # Events appended since the last index refresh are not in the index yet: they are
        # matched on their text and ranked with the indexed ones, so a search never misses
        # fresh text (refresh_search_index catches up).
        quoted = _fts_terms(query)
        if not quoted:
            return []
        unerased = f" AND {UNERASED.format(e='e', fence='')}" if skip_erased else ""
        mark, top = self._one(
            "SELECT indexed_through, (SELECT COALESCE(MAX(rowid), 0) FROM events) FROM events_fts_watermark WHERE id=1"
        ) or (0, 0)
        words = query.split()
        fresh = (
            []  # nothing past the index (the usual case): no scan at all
            if top <= mark
            else self._past_index(  # every one: the newest alone may hold only a common word
                "e.rowid, e.event_id, e.text, e.actor",
                mark,
                tenant_id,
                subject_id,
                words,
                limit=top - mark,
                unerased=unerased,
            )
        )
        return self._subject_bm25(quoted, words, fresh, tenant_id, subject_id, limit, unerased)

    def _past_index(
        self,
        columns: str,
        mark: int,
        tenant_id: str,
        subject_id: str,
        words: Sequence[str],
        *,
        limit: int,
        unerased: str = "",
    ) -> list[tuple[Any, ...]]:
        """``columns`` (of ``e``) of the subject's valid events past the index mark that hold any of
        ``words``, newest first. They are matched on what the index covers (text and actor),
        by case-insensitive substring: not stemmed as the index is (see SearchReadTx in
        protocol/search.py). The rowid range past the mark is walked ("+": not the subject's
        indexes, which would walk its whole history): at most recall.SEARCH_BACKLOG rows."""
        patterns = [f"%{_like(w.lower())}%" for w in words if w]
        if not patterns:
            return []
        likes = " OR ".join("lower(e.text) LIKE ? ESCAPE '\\' OR lower(e.actor) LIKE ? ESCAPE '\\'" for _ in patterns)
        return self._all(
            f"SELECT {columns} FROM events e WHERE e.rowid > ? AND {self._d.no_index('e.tenant_id')}=? "
            f"AND {self._d.no_index('e.subject_id')}=? AND e.state='valid' AND ({likes}){unerased} "
            "ORDER BY e.rowid DESC LIMIT ?",
            [mark, tenant_id, subject_id, *[p for p in patterns for _ in (0, 1)], limit],
        )

    def _subject_bm25(
        self,
        quoted: Sequence[str],
        words: Sequence[str],
        fresh: Sequence[tuple[Any, ...]],
        tenant_id: str,
        subject_id: str,
        limit: int,
        unerased: str,
    ) -> list[str]:
        """The events matching any of ``quoted`` (FTS5 phrases, one a term; ``words``, the same
        terms as written), of the subject, valid (and unerased, when ``unerased`` says so),
        best first by BM25 with the subject's own statistics, at most ``limit``: the indexed
        ones, and ``fresh``, the ``(rowid, event_id, text, actor)`` of those past the index
        mark that hold a word. Called when every term has fewer than TERM_CAP matches in the
        file: each term's matches are all read.

        The index is one for the file, and FTS5's ``bm25()`` weighs a term by how many of
        the file's events hold it, and an event's length against the mean of the file's:
        another subject's or tenant's history would decide how one subject's events rank (a
        name said in every turn of this subject and nowhere else weighs as a rare word). So
        each term is matched alone, and its ``bm25()`` divided by the inverse document
        frequency FTS5 gave it (from the file's row count and token count in its averages
        record, and the term's matches in the file) and read back into the term's frequency
        in each event (:func:`_frequency`, with the event's length from FTS5's column sizes); a
        fresh event's frequency and length are counted in its text. Then each term is
        weighed as PostgreSQL weighs it (:func:`lossgate.store.core.bm25.bm25_order`): by the
        subject's document frequency and event count, each event's length against the mean
        length of the subject's events matched. Ties go to the newest."""
        file_mean, weights = self._fts_weights("events_fts", quoted)
        # the subject's valid matches: rowid -> event id, and rowid -> length in tokens
        mine: dict[int, str] = {}
        lengths: dict[int, int] = {}
        for chunk in self._d.chunks(sorted({rowid for w in weights for rowid in w})):
            # By rowid: "+" keeps the planner off (tenant, subject) indexes (the partial
            # events_by_tier too), which would walk the subject's whole history.
            condition, args = self._d.in_("e.rowid", chunk)
            for rowid, event_id, sizes in self._all(
                "SELECT e.rowid, e.event_id, d.sz FROM events e LEFT JOIN events_fts_docsize d ON d.id = e.rowid "
                f"WHERE {condition} AND {self._d.no_index('e.tenant_id')}=? "
                f"AND {self._d.no_index('e.subject_id')}=? AND e.state='valid'{unerased}",
                [*args, tenant_id, subject_id],
            ):
                mine[rowid], lengths[rowid] = event_id, _row_length(sizes)
        frequencies = _frequencies(weights, lengths, file_mean)
        for rowid, event_id, text, actor in fresh:  # counted in their text
            said = f"{actor or ''} {text or ''}"
            held = [said.lower().count(word.lower()) for word in words]
            if any(held):
                mine[rowid], lengths[rowid] = event_id, len(_TOKEN.findall(said))
                for frequency, count in zip(frequencies, held, strict=True):
                    if count:
                        frequency[rowid] = count
        order = _ranked(frequencies, lengths, self.clock(tenant_id, subject_id).high_water)
        return [mine[rowid] for rowid in order[:limit]]

    def _fts_weights(self, fts: str, quoted: Sequence[str]) -> tuple[float, list[dict[int, float]]]:
        """The mean row length of the full-text index ``fts``, and for each of ``quoted`` (one
        FTS5 phrase a term) each matching row's weight as the index gave it, its ``bm25()``
        divided by the inverse document frequency it was weighed by (from the index's row and
        token counts in its averages record, and the term's matches): the term's weight in the
        row against that mean (:func:`lossgate.store.core.bm25.term_weight`). Every match in
        the file is read."""
        averages = _varints(self._value(f"SELECT block FROM {fts}_data WHERE id=1"))
        rows = averages[0] if averages else 0
        mean = sum(averages[1:]) / rows if rows else 1.0
        weights: list[dict[int, float]] = []
        for q in quoted:
            found = self._all(f"SELECT rowid, -bm25({fts}) FROM {fts} WHERE {fts} MATCH ?", (q,))
            file_idf = idf(rows, len(found))  # what FTS5 weighed the term by
            weights.append({rowid: score / file_idf for rowid, score in found})
        return mean, weights

    def search_facts(self, tenant_id: str, subject_id: str, query: str, *, limit: int) -> list[str]:
        # Ranked as events are (_subject_bm25): one index serves the file, and how many of
        # another tenant's facts hold a word, or how long they are, must not decide which of
        # this subject's facts make the limit.
        quoted = _fts_terms(query)
        if not quoted:
            return []
        file_mean, weights = self._fts_weights("facts_fts", quoted)
        mine: dict[int, str] = {}  # rowid -> fact id (ties go to the newest row)
        lengths: dict[int, int] = {}
        for chunk in self._d.chunks(sorted({rowid for w in weights for rowid in w})):
            condition, args = self._d.in_("f.rowid", chunk)
            for rowid, fact_id, sizes in self._all(
                "SELECT f.rowid, f.fact_id, d.sz FROM facts f LEFT JOIN facts_fts_docsize d ON d.id = f.rowid "
                f"WHERE {condition} AND f.tenant_id=? AND f.subject_id=? AND f.status='active'",
                [*args, tenant_id, subject_id],
            ):
                mine[rowid], lengths[rowid] = fact_id, _row_length(sizes)
        if not mine:
            return []
        total = self._value(
            "SELECT count(*) FROM facts WHERE tenant_id=? AND subject_id=? AND status='active'", (tenant_id, subject_id)
        )
        order = _ranked(_frequencies(weights, lengths, file_mean), lengths, total)
        return [mine[rowid] for rowid in order[:limit]]

    def search_backlog(self, tenant_id: str, subject_id: str) -> int:
        return self._value(  # type: ignore[no-any-return]
            "SELECT (SELECT COALESCE(MAX(rowid), 0) FROM events) - indexed_through FROM events_fts_watermark WHERE id=1"
        )

    def recalls_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[RecallRecord]:
        wanted = orjson.dumps(list(ids)).decode()
        return [
            rows.recall_from_json(r[0])
            for r in self._all(
                "SELECT record FROM recalls r WHERE tenant_id=? AND subject_id=? "
                "AND json_extract(record, '$.query') IS NOT NULL AND ("
                " EXISTS (SELECT 1 FROM json_each(r.record, '$.candidate_ids') c WHERE c.value IN (SELECT value FROM json_each(?)))"
                " OR (r.mode = 'summary' AND json_extract(r.record, '$.alias.artifact_id') IN (SELECT value FROM json_each(?))))"
                " ORDER BY at, rowid",
                (tenant_id, subject_id, wanted, wanted),
            )
        ]

    def guard_results_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[GuardResult]:
        wanted = orjson.dumps(list(ids)).decode()
        return [
            rows.guard_from_json(r[0])
            for r in self._all(
                "SELECT record FROM guard_results g WHERE tenant_id=? AND subject_id=? "
                "AND json_extract(record, '$.redacted') IS NULL AND ("
                " EXISTS (SELECT 1 FROM json_each(g.record, '$.refusals') f WHERE"
                "  json_extract(f.value, '$.fact_id') IN (SELECT value FROM json_each(?))"
                "  OR json_extract(f.value, '$.conflict_id') IN (SELECT value FROM json_each(?))"
                "  OR EXISTS (SELECT 1 FROM json_each(f.value, '$.source_event_ids') e"
                "   WHERE e.value IN (SELECT value FROM json_each(?))))"
                " OR EXISTS (SELECT 1 FROM json_each(g.record, '$.read') r WHERE r.value IN (SELECT value FROM json_each(?)))"
                f" OR {_RECALL_TOUCHED.format(tied='g')}) ORDER BY at, rowid",
                (tenant_id, subject_id, wanted, wanted, wanted, wanted, wanted, wanted),
            )
        ]

    def responses_touching(self, tenant_id: str, subject_id: str, ids: Sequence[str]) -> list[ResponseRecord]:
        wanted = orjson.dumps(list(ids)).decode()
        return [
            rows.response_from_json(r[0])
            for r in self._all(
                "SELECT record FROM responses r WHERE tenant_id=? AND subject_id=? "
                f"AND json_extract(record, '$.redacted') IS NULL AND ({_RECALL_TOUCHED.format(tied='r')}"
                " OR json_extract(record, '$.guard_id') IN (SELECT value FROM json_each(?))) "
                "ORDER BY at, rowid",
                (tenant_id, subject_id, wanted, wanted, wanted),
            )
        ]

    def vectors(self, tenant_id: str, subject_id: str, model: str, kind: VectorKind) -> list[tuple[str, bytes]]:
        return self._all(
            "SELECT item_id, vector FROM vectors WHERE tenant_id=? AND subject_id=? AND kind=? AND model=?",
            (tenant_id, subject_id, kind, model),
        )


class SQLiteDerivedWrites(CoreDerivedWrites):
    """SQLite's own derived-layer, queue and search writes; the caller holds the writer lock."""

    _c: sqlite3.Connection

    def refresh_search_index(self) -> int:
        """Index every event appended since the last refresh; returns how many."""
        mark = self._value("SELECT indexed_through FROM events_fts_watermark WHERE id=1")
        top = self._value("SELECT COALESCE(MAX(rowid), 0) FROM events")
        if top <= mark:
            return 0
        n = self._run(
            "INSERT INTO events_fts (rowid, text, actor) SELECT rowid, text, actor FROM events "
            "WHERE rowid > ? AND rowid <= ? AND text IS NOT NULL",
            (mark, top),
        )
        self._run("UPDATE events_fts_watermark SET indexed_through=? WHERE id=1", (top,))
        return n

    def put_vectors(
        self, tenant_id: str, subject_id: str, model: str, items: Sequence[tuple[VectorKind, str, bytes]]
    ) -> int:
        stored = 0
        for kind in ("event", "fact"):
            table, item, _, live = EMBEDDABLE[kind]
            stored += self._c.executemany(
                "INSERT INTO vectors (tenant_id, subject_id, kind, item_id, model, vector) SELECT ?,?,?,?,?,? "
                f"WHERE EXISTS (SELECT 1 FROM {table} x WHERE x.tenant_id=? AND x.{item}=? AND x.subject_id=? "
                f"AND {live}) ON CONFLICT DO NOTHING",
                [
                    (tenant_id, subject_id, kind, i, model, v, tenant_id, i, subject_id)
                    for k, i, v in items
                    if k == kind
                ],
            ).rowcount
        if stored:
            self._bump_vectors_version(tenant_id, subject_id)
        return stored

    def insert_recall(self, record: RecallRecord) -> None:
        self._run(
            "INSERT INTO recalls (tenant_id, subject_id, recall_id, at, mode, record) VALUES (?,?,?,?,?,?)",
            (
                record.tenant_id,
                record.subject_id,
                record.recall_id,
                rows.instant(record.at),
                record.mode,
                record.model_dump_json(),
            ),
        )

    def claim_job(self, *, owner: str, lease_seconds: float, now: datetime) -> Job | None:
        # The writer lock is held: nothing can claim the same job between the read and the update.
        row = self._one(
            f"{_JOB_SELECT} WHERE (status='pending' AND run_after<=?) "
            "OR (status='running' AND lease_expires_at<?) ORDER BY run_after, job_id LIMIT 1",
            (rows.instant(now), rows.instant(now)),
        )
        if row is None:
            return None
        expires = rows.instant(now + timedelta(seconds=lease_seconds))
        self._run(
            "UPDATE jobs SET status='running', lease_owner=?, lease_expires_at=?, tries=tries+1 WHERE job_id=?",
            (owner, expires, row[0]),
        )
        claimed = self._one(f"{_JOB_SELECT} WHERE job_id=?", (row[0],))
        assert claimed is not None
        return rows.job_from_row(claimed)

    def heartbeat_job(self, job_id: int, *, owner: str, lease_expires_at: datetime) -> bool:
        return (
            self._run(
                "UPDATE jobs SET lease_expires_at=? WHERE job_id=? AND status='running' AND lease_owner=?",
                (rows.instant(lease_expires_at), job_id, owner),
            )
            == 1
        )
