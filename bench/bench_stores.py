"""Both stores in one run: append throughput, recall latency and consolidation jobs per
second with 1, 2 and 4 worker processes, each against a same-run baseline on the same
server (a plain bulk insert; a plain indexed SELECT of the rows recall returns; one worker).

    python bench/bench_stores.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]

PostgreSQL runs when ``--pg`` or ``LOSSGATE_BENCH_PG_URL`` names a server; the benchmark
creates and drops its own database there.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate  # noqa: E402
from bench._util import median, percentile  # noqa: E402
from lossgate.records import NewEvent, NewFact  # noqa: E402
from lossgate.worker import run_pool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
T = "bench"


def _events(n: int, subject: str, prefix: str = "e") -> list[NewEvent]:
    return [NewEvent(tenant_id=T, subject_id=subject, event_id=f"{subject}-{prefix}{i}",
                     occurred_at=T0 + timedelta(seconds=i), actor="user" if i % 2 else "agent",
                     text=f"turn {i}: customer cust_{i % 977} asked about invoice INV-{9000 + i % 500}")
            for i in range(n)]


def _rows(events: list[NewEvent]) -> list[tuple]:
    return [(e.tenant_id, e.subject_id, i, e.event_id, e.kind, e.actor, e.trust, e.text, "{}",
             e.occurred_at.isoformat()) for i, e in enumerate(events)]


BARE = ("CREATE TABLE bare_events (tenant_id TEXT, subject_id TEXT, seq INTEGER, event_id TEXT, kind TEXT, "
        "actor TEXT, trust TEXT, text TEXT, payload TEXT, occurred_at TEXT, "
        "PRIMARY KEY (tenant_id, subject_id, seq), UNIQUE (tenant_id, event_id))")


def bare_insert(url: str, rows: list[tuple], batch: int) -> float:
    """Plain bulk insert of the same rows: executemany on SQLite, COPY on PostgreSQL."""
    t0 = time.perf_counter()
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url[len("sqlite:///"):], isolation_level=None)
        conn.execute(BARE)
        for i in range(0, len(rows), batch):
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO bare_events VALUES (?,?,?,?,?,?,?,?,?,?)", rows[i:i + batch])
            conn.execute("COMMIT")
        conn.close()
    else:
        import psycopg

        with psycopg.connect(url) as conn:
            conn.execute(BARE)
            conn.commit()
            t0 = time.perf_counter()
            for i in range(0, len(rows), batch):
                with conn.cursor() as cur, cur.copy("COPY bare_events FROM STDIN") as copy:
                    for r in rows[i:i + batch]:
                        copy.write_row(r)
                conn.commit()
    return time.perf_counter() - t0


def bench_append(url: str, n: int, batch: int) -> dict:
    mem = lossgate.open(url)
    events = _events(n, "append")
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        mem.append(events[i:i + batch])
    ours = time.perf_counter() - t0
    mem.close()
    bare = bare_insert(url, _rows(events), batch)
    return {"events_per_s": n / ours, "bare_per_s": n / bare, "ratio": bare / ours}


def bench_recall(url: str, facts: int, calls: int) -> dict:
    mem = lossgate.open(url)
    mem.append(_events(500, "recall"))
    with mem.transaction() as led:
        led.assert_facts([NewFact(tenant_id=T, subject_id="recall", fact_id=f"rf{j}",
                                  predicate="account.scope" if j % 100 == 0 else "chat.topic",
                                  value=f"v{j}", source_event_ids=[f"recall-e{j % 500}"]) for j in range(facts)])
    mem.consolidate(T, "recall")
    if not url.startswith("sqlite"):
        import psycopg

        # Fresh tables have no statistics until autovacuum runs: plan both sides on real ones.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
    for _ in range(20):
        res = mem.recall(T, "recall")
    lat = []
    for _ in range(calls):
        t0 = time.perf_counter()
        res = mem.recall(T, "recall", k=20)
        lat.append(time.perf_counter() - t0)
    ids = [f.fact_id for f in res.facts]
    base = []
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url[len("sqlite:///"):])
        q = f"SELECT * FROM facts WHERE tenant_id=? AND subject_id=? AND fact_id IN ({','.join('?' * len(ids))})"
        for _ in range(calls):
            t0 = time.perf_counter()
            conn.execute(q, (T, "recall", *ids)).fetchall()
            conn.execute("SELECT * FROM events WHERE tenant_id=? AND subject_id=? ORDER BY seq DESC LIMIT 20",
                         (T, "recall")).fetchall()
            base.append(time.perf_counter() - t0)
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for _ in range(calls):
                t0 = time.perf_counter()
                conn.execute("SELECT * FROM facts WHERE tenant_id=%s AND subject_id=%s AND fact_id = ANY(%s)",
                             (T, "recall", ids)).fetchall()
                conn.execute("SELECT * FROM events WHERE tenant_id=%s AND subject_id=%s ORDER BY seq DESC LIMIT 20",
                             (T, "recall")).fetchall()
                base.append(time.perf_counter() - t0)
    mem.close()
    return {"p50_ms": median(lat) * 1e3, "p99_ms": percentile(lat, 99) * 1e3,
            "base_p50_ms": median(base) * 1e3, "base_p99_ms": percentile(base, 99) * 1e3}


def bench_jobs(url: str, subjects: int, workers: int, round_: int) -> float:
    mem = lossgate.open(url)
    names = [f"w{round_}-{i}" for i in range(subjects)]
    for s in names:
        mem.append(_events(20, s))
        mem.assert_fact(NewFact(tenant_id=T, subject_id=s, fact_id=f"{s}-tz", predicate="timezone",
                                value="UTC+01:00", source_event_ids=[f"{s}-e0"]))
        mem.request_consolidation(T, s)
    mem.close()
    code = run_pool(url, workers, exit_when_idle=True)
    assert code == 0
    mem = lossgate.open(url)
    done = sum(1 for s in names if mem.alias(T, s).artifact_id)
    # Throughput from the attempt log (first start to last finish): process start-up is
    # a one-off cost of a long-running worker, not part of its throughput.
    attempts = [a for s in names for a in mem.attempts(T, s)]
    mem.close()
    assert done == subjects, (done, subjects)
    span = max(a.finished_at for a in attempts) - min(a.started_at for a in attempts)
    return subjects / span.total_seconds()


def run_store(name: str, url: str, args: argparse.Namespace) -> dict:
    lossgate.open(url).load_predicates(ROOT / "examples" / "predicates.toml")
    out = {"append": bench_append(url, args.events, args.batch), "recall": bench_recall(url, args.facts, args.calls)}
    out["jobs"] = {w: bench_jobs(url, args.subjects, w, i) for i, w in enumerate((1, 2, 4))}
    a, r, j = out["append"], out["recall"], out["jobs"]
    print(f"[{name}]")
    print(f"  append   {a['events_per_s']:>9,.0f} events/s   bare bulk insert {a['bare_per_s']:>9,.0f}/s   ratio {a['ratio']:.2f}")
    print(f"  recall   p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms   plain SELECT p50 {r['base_p50_ms']:.2f} ms "
          f"p99 {r['base_p99_ms']:.2f} ms   ratio p50 {r['p50_ms'] / r['base_p50_ms']:.1f}x")
    print("  jobs/s   " + "   ".join(f"{w} worker{'s' if w > 1 else ''}: {v:.1f} ({v / j[1]:.2f}x)" for w, v in j.items()))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pg", default=os.environ.get("LOSSGATE_BENCH_PG_URL"))
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--facts", type=int, default=2_000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--subjects", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as d:
        results["sqlite"] = run_store("sqlite", f"sqlite:///{d}/bench.db", args)
    if args.pg:
        from lossgate.testing.postgres import create_database, drop_database

        url = create_database(args.pg, prefix="lossgate_bench")
        try:
            results["postgres"] = run_store("postgres", url, args)
        finally:
            drop_database(url)
    print("cores:", os.cpu_count(), "- jobs/s stops growing once the workers outnumber the cores")
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    return results


if __name__ == "__main__":
    main()
