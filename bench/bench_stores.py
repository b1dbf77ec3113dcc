"""Both stores in one run: append throughput, recall latency and consolidation jobs per
second with 1, 2 and 4 worker processes, each against a same-run baseline on the same
server (a plain bulk insert; a plain indexed SELECT of the rows recall returns; one worker),
timed alternately with it (A B A B ...).

    python bench/bench_stores.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]
                                 [--rounds 5] [--jobs-rounds 5] [--subjects 200]
                                 [--parts jobs append recall] [--only sqlite|postgres]

PostgreSQL runs when ``--pg`` or ``LOSSGATE_BENCH_PG_URL`` names a server; the benchmark
creates and drops its own databases there. Otherwise its PostgreSQL side is skipped, saying so.
Each part below runs in a fresh database of its own (a file on SQLite), so no part sees
another's rows, queued rebuild jobs or table statistics.

* append: each round, lossgate appends ``--events`` new events (one subject, batches of
  ``--batch``, one transaction each) and the bare side inserts the same rows in the same
  batches and transactions (``executemany`` on SQLite, on a connection set up as the store
  sets up its own; ``COPY`` on PostgreSQL). Each clock runs from the first batch to the
  last commit: connecting and creating tables are outside it on both stores and both sides.
  The ratio is the median of the per-round throughput ratios lossgate/bare.
* recall: ``--calls`` calls, each followed by the baseline's two SELECTs.
* jobs/s: each round runs 1, 2 and 4
  workers in turn, each over ``--subjects`` fresh queued subjects (20 events and a fact
  each). A worker process starts, connects and consolidates a warm-up subject of its own
  (off the queue), then waits at a barrier; jobs/s is the number of jobs divided by the
  time from the barrier's release to the end of the last job (its ``finish_job`` commit),
  so process start-up, imports, connecting and first-use costs are excluded. Each worker
  runs lossgate's ``Worker.run_once`` loop (claim, consolidate, finish) with no embedder,
  whatever ``LOSSGATE_EMBEDDER`` says. The ratio is against the 1-worker run of the same round.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, percentile, pg_url, ratios, skip_pg
from lossgate.model.records import NewEvent, NewFact, utcnow

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
T = "bench"
WORKERS = (1, 2, 4)


def _events(n: int, subject: str, prefix: str = "e") -> list[NewEvent]:
    return [
        NewEvent(
            tenant_id=T,
            subject_id=subject,
            event_id=f"{subject}-{prefix}{i}",
            occurred_at=T0 + timedelta(seconds=i),
            actor="user" if i % 2 else "agent",
            text=f"turn {i}: customer cust_{i % 977} asked about invoice INV-{9000 + i % 500}",
        )
        for i in range(n)
    ]


def _rows(events: list[NewEvent]) -> list[tuple]:
    """The rows lossgate stores for ``events`` (one subject: seq counts from 1, as its clock does)."""
    return [
        (
            e.tenant_id,
            e.subject_id,
            i + 1,
            e.event_id,
            e.kind,
            e.actor,
            e.trust,
            e.text,
            "{}",
            e.occurred_at.isoformat(),
        )
        for i, e in enumerate(events)
    ]


BARE = (
    "CREATE TABLE bare_events (tenant_id TEXT, subject_id TEXT, seq INTEGER, event_id TEXT, kind TEXT, "
    "actor TEXT, trust TEXT, text TEXT, payload TEXT, occurred_at TEXT, "
    "PRIMARY KEY (tenant_id, subject_id, seq), UNIQUE (tenant_id, event_id))"
)


def _is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


class Bare:
    """The baseline's connection and table, set up once (untimed); :meth:`insert` is timed."""

    def __init__(self, url: str, sqlite_path: str | None) -> None:
        self.sqlite = sqlite_path is not None
        if sqlite_path is not None:
            # Its own file, so neither side's WAL checkpoints land in the other's clock;
            # set up as lossgate's SQLite store sets up its connections.
            self.conn = sqlite3.connect(sqlite_path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute(BARE)
        else:
            import psycopg

            self.conn = psycopg.connect(url)
            self.conn.execute(BARE)
            self.conn.commit()

    def insert(self, rows: list[tuple], batch: int) -> float:
        """Plain bulk insert of the rows, one transaction per batch: executemany on SQLite, COPY on PostgreSQL."""
        conn = self.conn
        t0 = time.perf_counter()
        if self.sqlite:
            for i in range(0, len(rows), batch):
                conn.execute("BEGIN IMMEDIATE")  # as lossgate's write transactions begin
                conn.executemany("INSERT INTO bare_events VALUES (?,?,?,?,?,?,?,?,?,?)", rows[i : i + batch])
                conn.execute("COMMIT")
        else:
            for i in range(0, len(rows), batch):
                with conn.cursor() as cur, cur.copy("COPY bare_events FROM STDIN") as copy:
                    for r in rows[i : i + batch]:
                        copy.write_row(r)
                conn.commit()
        return time.perf_counter() - t0

    def close(self) -> None:
        self.conn.close()


def bench_append(url: str, bare_path: str | None, n: int, batch: int, rounds: int) -> dict:
    mem = lossgate.open(url)
    bare = Bare(url, bare_path)
    ours, base = [], []
    try:
        # Untimed warm-up of both connections (statement caches; lossgate's staging table on
        # PostgreSQL), so no one-off cost lands in the first round of either side.
        warm = _events(10, "append-warm")
        mem.append(warm)
        bare.insert(_rows(warm), batch)
        for r in range(rounds):  # A B A B ...: a fresh subject per round, the same rows on both sides
            events = _events(n, f"append{r}")
            rows = _rows(events)
            t0 = time.perf_counter()
            for i in range(0, n, batch):
                mem.append(events[i : i + batch])
            ours.append(time.perf_counter() - t0)
            base.append(bare.insert(rows, batch))
    finally:
        bare.close()
        mem.close()
    rs = ratios(base, ours)  # throughput ratio lossgate/bare = bare time / lossgate time
    return {
        "events_per_s": n / median(ours),
        "bare_per_s": n / median(base),
        "ratio": median(rs),
        "ratio_min": min(rs),
        "ratio_max": max(rs),
        "rounds": rounds,
    }


def _assert_recall_facts(mem: lossgate.Memory, url: str, facts: list[NewFact]) -> None:
    if _is_sqlite(url):
        with mem.transaction() as led:
            led.assert_facts(facts)
        return
    import psycopg

    # Setup only, not measured. Asserting 2,000 facts in one transaction into never-analysed
    # tables takes minutes on PostgreSQL: each fact's facts_citing() look-up gets a nested
    # loop over all of the subject's facts and fact_sources (quadratic per call, cubic per
    # batch). In chunks with ANALYZE between them it takes seconds; the rows are the same.
    for lo in range(0, len(facts), 250):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        with mem.transaction() as led:
            led.assert_facts(facts[lo : lo + 250])


def bench_recall(url: str, facts: int, calls: int) -> dict:
    mem = lossgate.open(url)
    mem.append(_events(500, "recall"))
    _assert_recall_facts(
        mem,
        url,
        [
            NewFact(
                tenant_id=T,
                subject_id="recall",
                fact_id=f"rf{j}",
                predicate="account.scope" if j % 100 == 0 else "chat.topic",
                value=f"v{j}",
                source_event_ids=[f"recall-e{j % 500}"],
            )
            for j in range(facts)
        ],
    )
    mem.consolidate(T, "recall")
    if not _is_sqlite(url):
        import psycopg

        # Fresh tables have no statistics until autovacuum runs: plan both sides on real ones.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
    for _ in range(20):
        res = mem.recall(T, "recall")
    res = mem.recall(T, "recall", k=20)
    ids = [f.fact_id for f in res.facts]
    if _is_sqlite(url):
        conn = sqlite3.connect(url[len("sqlite:///") :])
        q = f"SELECT * FROM facts WHERE tenant_id=? AND subject_id=? AND fact_id IN ({','.join('?' * len(ids))})"

        def base() -> None:
            conn.execute(q, (T, "recall", *ids)).fetchall()
            conn.execute(
                "SELECT * FROM events WHERE tenant_id=? AND subject_id=? ORDER BY seq DESC LIMIT 20", (T, "recall")
            ).fetchall()
    else:
        import psycopg

        conn = psycopg.connect(url, autocommit=True)

        def base() -> None:
            conn.execute(
                "SELECT * FROM facts WHERE tenant_id=%s AND subject_id=%s AND fact_id = ANY(%s)", (T, "recall", ids)
            ).fetchall()
            conn.execute(
                "SELECT * FROM events WHERE tenant_id=%s AND subject_id=%s ORDER BY seq DESC LIMIT 20", (T, "recall")
            ).fetchall()

    base()  # the baseline's connection warmed up too
    lat, blat = [], []
    for _ in range(calls):  # interleaved: A B A B ...
        t0 = time.perf_counter()
        mem.recall(T, "recall", k=20)
        t1 = time.perf_counter()
        base()
        t2 = time.perf_counter()
        lat.append(t1 - t0)
        blat.append(t2 - t1)
    conn.close()
    mem.close()
    return {
        "p50_ms": median(lat) * 1e3,
        "p99_ms": percentile(lat, 99) * 1e3,
        "base_p50_ms": median(blat) * 1e3,
        "base_p99_ms": percentile(blat, 99) * 1e3,
        "ratio_p50": median(lat) / median(blat),
    }


def _fill_subjects(mem: lossgate.Memory, subjects: list[str], *, queue: bool) -> None:
    """20 events and one fact per subject, and (``queue``) a queued rebuild job each, in
    three transactions (setup, untimed: one per subject costs 3 commits per subject)."""
    # 20 events < rebuild_after: appending queues nothing by itself.
    mem.append([e for s in subjects for e in _events(20, s)])
    with mem.transaction() as led:
        led.assert_facts(
            [
                NewFact(
                    tenant_id=T,
                    subject_id=s,
                    fact_id=f"{s}-tz",
                    predicate="timezone",
                    value="UTC+01:00",
                    source_event_ids=[f"{s}-e0"],
                )
                for s in subjects
            ]
        )
    if queue:
        now = utcnow()
        with mem.store.write() as tx:  # what Memory.request_consolidation does, for all subjects at once
            for s in subjects:
                tx.lock_clock(T, s)
                assert tx.enqueue_job(T, s, reason="requested", run_after=now, at=now)


def _worker_child(url: str, warm_subject: str, barrier: object, results: object) -> None:
    """One worker process: start, connect, consolidate ``warm_subject`` (off the queue), wait
    at the barrier, then drain the queue with lossgate's worker loop."""
    from lossgate.ops.worker import Worker, WorkerConfig, open_worker_memory

    memory = open_worker_memory(url, migrate=False)  # no embedder: consolidation only
    try:
        try:
            worker = Worker(memory, config=WorkerConfig(poll_s=0.0))
            warm = worker.consolidator.run(T, warm_subject)
            assert warm.status == "published", warm.status
        except BaseException:
            barrier.abort()  # type: ignore[attr-defined]  # the parent fails now, not at its timeout
            raise
        barrier.wait()  # type: ignore[attr-defined]
        start = last = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process on the host
        while worker.run_once() is not None:
            last = time.monotonic()
        results.put((start, last, worker.processed))  # type: ignore[attr-defined]
    finally:
        memory.close()


def bench_jobs(url: str, subjects: int, workers: int, tag: str) -> float:
    """Jobs per second of ``workers`` warmed-up worker processes over ``subjects`` queued subjects."""
    import multiprocessing as mp

    mem = lossgate.open(url)
    names = [f"w{tag}-{i}" for i in range(subjects)]
    warm = [f"warm{tag}-{i}" for i in range(workers)]
    _fill_subjects(mem, warm, queue=False)
    _fill_subjects(mem, names, queue=True)
    mem.close()
    ctx = mp.get_context("spawn")  # as lossgate.ops.worker.run_pool starts its workers
    barrier = ctx.Barrier(workers + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_worker_child, args=(url, warm[i], barrier, results), name=f"bench-worker-{i}")
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    try:
        barrier.wait(timeout=300)
        got = [results.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    assert sum(g[2] for g in got) == subjects, (got, subjects)
    mem = lossgate.open(url)
    done = sum(1 for s in names if mem.admin.alias(T, s).artifact_id)
    mem.close()
    assert done == subjects, (done, subjects)
    span = max(g[1] for g in got) - min(g[0] for g in got)
    return subjects / span


def run_jobs(url: str, subjects: int, rounds: int) -> dict:
    per: dict[int, list[float]] = {w: [] for w in WORKERS}
    for r in range(rounds):  # interleaved: 1 2 4 1 2 4 ...
        for w in WORKERS:
            per[w].append(bench_jobs(url, subjects, w, f"{r}-{w}"))
    out: dict = {"rounds": rounds}
    for w in WORKERS:
        rs = ratios(per[w], per[1])  # jobs/s against the 1-worker run of the same round
        out[w] = {
            "median": median(per[w]),
            "min": min(per[w]),
            "max": max(per[w]),
            "ratio": median(rs),
            "ratio_min": min(rs),
            "ratio_max": max(rs),
        }
    return out


@contextmanager
def _database(pg: str | None, tmp: str | None, part: str) -> Iterator[tuple[str, str | None]]:
    """A fresh database for one part, predicates loaded: (its URL, the bare SQLite file or None).
    Each part gets its own, so none sees another's rows, queued jobs or table statistics."""
    if tmp is not None:
        url, bare = f"sqlite:///{tmp}/{part}.db", f"{tmp}/{part}-bare.db"
    else:
        from lossgate.testing.postgres import create_database

        assert pg is not None
        url, bare = create_database(pg, prefix="lossgate_bench"), None
    try:
        boot = lossgate.open(url)
        boot.admin.load_predicates(ROOT / "examples" / "predicates.toml")
        boot.close()
        yield url, bare
    finally:
        if tmp is None:
            from lossgate.testing.postgres import drop_database

            drop_database(url)


def run_store(name: str, args: argparse.Namespace, *, pg: str | None = None, tmp: str | None = None) -> dict:
    print(f"[{name}]", flush=True)
    out: dict = {}
    if "jobs" in args.parts:
        with _database(pg, tmp, "jobs") as (url, _):
            out["jobs"] = j = run_jobs(url, args.subjects, args.jobs_rounds)
        print(
            f"  jobs/s   ({args.subjects} jobs per run, {j['rounds']} rounds of 1/2/4 workers interleaved; "
            "warmed-up workers, process start-up excluded)"
        )
        for w in WORKERS:
            v = j[w]
            print(
                f"           {w} worker{'s' if w > 1 else ' '}: median {v['median']:6.1f} jobs/s "
                f"(runs {v['min']:.1f}-{v['max']:.1f})   vs 1 worker {v['ratio']:.2f}x "
                f"(rounds {v['ratio_min']:.2f}-{v['ratio_max']:.2f})",
                flush=True,
            )
    if "append" in args.parts:
        with _database(pg, tmp, "append") as (url, bare_path):
            out["append"] = a = bench_append(url, bare_path, args.events, args.batch, args.rounds)
        bulk = "executemany" if bare_path else "COPY"
        print(
            f"  append   {a['events_per_s']:>9,.0f} events/s   bare {bulk} {a['bare_per_s']:>9,.0f}/s   "
            f"ratio {a['ratio']:.2f} (rounds {a['ratio_min']:.2f}-{a['ratio_max']:.2f}; medians of {a['rounds']} "
            f"interleaved rounds)",
            flush=True,
        )
    if "recall" in args.parts:
        with _database(pg, tmp, "recall") as (url, _):
            out["recall"] = r = bench_recall(url, args.facts, args.calls)
        print(
            f"  recall   p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms   "
            f"plain SELECT p50 {r['base_p50_ms']:.2f} ms p99 {r['base_p99_ms']:.2f} ms   "
            f"ratio p50 {r['ratio_p50']:.1f}x ({args.calls} calls interleaved)",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=5, help="append rounds (each times both sides once)")
    ap.add_argument("--facts", type=int, default=2_000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--subjects", type=int, default=200)
    ap.add_argument("--jobs-rounds", type=int, default=5, help="rounds of 1, 2 and 4 workers")
    ap.add_argument("--only", choices=["sqlite", "postgres"], help="run one store only")
    ap.add_argument("--parts", nargs="+", choices=["jobs", "append", "recall"], default=["jobs", "append", "recall"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.pg = pg_url(args.pg)
    results = {}
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as d:
            results["sqlite"] = run_store("sqlite", args, tmp=d)
    if args.only == "sqlite":
        pass
    elif args.pg:
        results["postgres"] = run_store("postgres", args, pg=args.pg)
    else:
        skip_pg("append, recall and jobs/s")
    print("cores:", os.cpu_count(), "- jobs/s stops growing once the workers outnumber the cores")
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    return results


if __name__ == "__main__":
    main()
