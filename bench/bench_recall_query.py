"""Recall with a query on a 10,000-event subject, against a fair full-text query of the same rows.

    python bench/bench_recall_query.py [--events 10000] [--runs 300] [--pg URL]

For each store: one subject of ``--events`` events (and a published summary, so the
index is warm and the summary covers them all: the cold tier). Alternately (A B A B ...)
over a fixed set of questions whose words each match a few dozen events:

* A, ``Memory.recall(query=..., budget=2000)``: head, critical facts, ranked fact and event
  hits with their neighbours, the budget filled in relevance order, the recall record written;
* B, the baseline: the same event rows read well, in one read transaction: one statement
  through the store's full-text index for the ranked hits (FTS5 ``MATCH ... ORDER BY bm25``
  on SQLite; on PostgreSQL the GIN-indexed ``event_terms`` ranked by the same BM25 in one
  statement over every match), then the
  turns around them (recall's neighbours) by primary key.

Eight untimed calls of each side first (first-use costs: imports, caches, the database's
pages). Prints p50 and p99 of both and the ratio of the medians. PostgreSQL runs with ``--pg`` or
``LOSSGATE_BENCH_PG_URL``; it creates and drops its own database there.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, percentile, pg_url, skip_pg
from lossgate.model.records import NewEvent
from lossgate.model.search_terms import query_terms

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
T, S = "bench", "subject-1"
# 1,728 made-up content words; each event names two, so a question's words match a few
# dozen events of 10,000 (as names, places and things do in a real conversation).
_SYL = ["ka", "lo", "mi", "ne", "ru", "to", "sa", "vi", "po", "de", "gu", "fa"]
WORDS = [a + b + c + "n" for a in _SYL for b in _SYL for c in _SYL][:1728]
QUESTIONS = [
    f"What did the customer say about the {WORDS[i * 37 % 1728]} and the {WORDS[i * 91 % 1728]}?" for i in range(64)
]


def build(memory: lossgate.Memory, n: int) -> None:
    memory.admin.load_predicates(ROOT / "examples" / "predicates.toml")
    for lo in range(0, n, 5000):
        memory.append(
            [
                NewEvent(
                    tenant_id=T,
                    subject_id=S,
                    event_id=f"e{i}",
                    occurred_at=T0 + timedelta(minutes=i),
                    actor="user" if i % 2 else "agent",
                    text=f"turn {i}: about the {WORDS[i % 1728]} of order {i % 977}, "
                    f"the {WORDS[(i * 7) % 1728]} came up again",
                )
                for i in range(lo, min(n, lo + 5000))
            ]
        )
    assert memory.consolidate(T, S).status == "published"


def _neighbours(seqs: list[int]) -> list[int]:
    """The seqs recall adds around its hits (the turn before and after each)."""
    return sorted({s + d for s in seqs for d in (-1, 1)} - set(seqs))


def sqlite_baseline(path: str, limit: int):
    conn = sqlite3.connect(path, isolation_level=None)

    def run(question: str) -> None:
        match = " OR ".join(f'"{t}"' for t in query_terms(question))
        conn.execute("BEGIN")
        hits = conn.execute(
            "SELECT e.event_id, e.seq, e.actor, e.trust, e.text, e.occurred_at FROM events_fts f "
            "JOIN events e ON e.rowid = f.rowid WHERE events_fts MATCH ? AND e.tenant_id=? AND e.subject_id=? "
            "AND e.state='valid' ORDER BY bm25(events_fts) LIMIT ?",
            (match, T, S, limit),
        ).fetchall()
        around = _neighbours([h[1] for h in hits])
        conn.execute(
            "SELECT event_id, seq, actor, trust, text, occurred_at FROM events WHERE tenant_id=? AND subject_id=? "
            f"AND seq IN ({','.join('?' * len(around))}) AND state='valid'",
            (T, S, *around),
        ).fetchall()
        conn.execute("COMMIT")

    return run


# BM25 as FTS5 computes it (k1 1.2, b 0.75, idf at least 1e-6), in one statement over every
# match through the GIN index: each query lexeme's frequency in each match, the matches'
# lengths and mean length, the subject's event count.
_PG_BM25 = (
    "WITH m AS MATERIALIZED (SELECT x.seq, x.terms FROM event_terms x WHERE x.tenant_id=%(t)s AND x.subject_id=%(s)s"
    " AND x.terms @@ websearch_to_tsquery('english', %(q)s)),"
    " l AS (SELECT m.seq, sum(coalesce(array_length(u.positions, 1), 1)) AS dl FROM m, unnest(m.terms) u GROUP BY m.seq),"
    " f AS (SELECT m.seq, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf FROM m, unnest(m.terms) u"
    " WHERE u.lexeme = ANY (tsvector_to_array(to_tsvector('english', %(q)s)))),"
    " d AS (SELECT lexeme, count(*) AS df FROM f GROUP BY lexeme),"
    " k AS (SELECT c.high_water AS n, (SELECT avg(dl) FROM l) AS avgdl FROM clocks c"
    " WHERE c.tenant_id=%(t)s AND c.subject_id=%(s)s),"
    " r AS (SELECT f.seq, sum(greatest(ln((k.n - d.df + 0.5) / (d.df + 0.5)), 1e-6) * f.tf * 2.2"
    " / (f.tf + 1.2 * (0.25 + 0.75 * l.dl / k.avgdl))) AS score FROM f JOIN d USING (lexeme) JOIN l USING (seq), k"
    " GROUP BY f.seq)"
    " SELECT e.event_id, e.seq, e.actor, e.trust, e.text, e.occurred_at FROM r JOIN events e"
    " ON e.tenant_id=%(t)s AND e.subject_id=%(s)s AND e.seq = r.seq WHERE e.state='valid'"
    " ORDER BY r.score DESC, r.seq DESC LIMIT %(n)s"
)


def pg_baseline(memory: lossgate.Memory, limit: int):
    def run(question: str) -> None:
        q = " or ".join(f'"{t}"' for t in query_terms(question))
        with memory.store.tenant_connection(T) as conn:
            hits = conn.execute(_PG_BM25, {"q": q, "t": T, "s": S, "n": limit}).fetchall()
            conn.execute(
                "SELECT event_id, seq, actor, trust, text, occurred_at FROM events WHERE tenant_id=%s AND subject_id=%s "
                "AND seq = ANY(%s) AND state='valid'",
                (T, S, _neighbours([h[1] for h in hits])),
            ).fetchall()

    return run


def measure(name: str, memory: lossgate.Memory, baseline, runs: int) -> None:
    for q in QUESTIONS[:8]:  # untimed: the process's and the database's first-use costs
        memory.recall(T, S, query=q, budget=2000)
        baseline(q)
    a, b = [], []
    for i in range(runs):
        q = QUESTIONS[i % len(QUESTIONS)]
        t0 = time.perf_counter()
        memory.recall(T, S, query=q, budget=2000)
        a.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        baseline(q)
        b.append(time.perf_counter() - t0)
    ms = lambda xs, p: percentile(xs, p) * 1000  # noqa: E731
    print(
        f"{name:10} recall p50 {ms(a, 50):6.2f} ms  p99 {ms(a, 99):6.2f} ms | FTS-keyed SELECT + neighbours p50 "
        f"{ms(b, 50):6.2f} ms  p99 {ms(b, 99):6.2f} ms | ratio of medians {median(a) / median(b):.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    args = ap.parse_args()
    limit = 2000 // 16  # what recall asks the index for at a 2,000-token budget
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "bench.db")
        memory = lossgate.open(f"sqlite:///{path}")
        build(memory, args.events)
        measure("sqlite", memory, sqlite_baseline(path, limit), args.runs)
        memory.close()
    pg = pg_url(args.pg)
    if pg:
        import psycopg

        from lossgate.testing.postgres import scratch_database

        with scratch_database(pg) as url:  # created here, dropped after
            memory = lossgate.open(url)
            build(memory, args.events)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE")  # plans as on a server whose autovacuum has run
            measure("postgresql", memory, pg_baseline(memory, limit), args.runs)
            memory.close()
    else:
        skip_pg("recall with a query")


if __name__ == "__main__":
    main()
