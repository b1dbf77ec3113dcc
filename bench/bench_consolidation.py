"""Consolidation, recall and stale propagation on SQLite, each against a same-run baseline.

    python bench/bench_consolidation.py [--events 10000] [--facts 500] [--recall-facts 10000]

* consolidation of one subject with N events and F facts (direct path, default budget),
  against reading the same rows with plain SELECTs;
* recall latency (median, p99) for a subject with 10,000 facts, against a plain indexed
  SELECT of the rows recall returns;
* stale propagation over a lineage chain of 1,000 artifacts (one revoke marks all 1,000
  stale), against a plain UPDATE of the same 1,000 rows.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate  # noqa: E402
from bench._util import median, percentile, timed  # noqa: E402
from lossgate.derived import Artifact, ExpectedAlias, LineageEdge, Manifest  # noqa: E402
from lossgate.records import ArtifactBody, NewEvent, NewFact, utcnow  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
T = "bench"


def _memory(path: Path) -> lossgate.Memory:
    mem = lossgate.open(f"sqlite:///{path}")
    mem.load_predicates(ROOT / "examples" / "predicates.toml")
    return mem


def _fill(mem: lossgate.Memory, subject: str, n_events: int, n_facts: int, critical_every: int = 10) -> None:
    events = [NewEvent(tenant_id=T, subject_id=subject, event_id=f"{subject}-e{i}", occurred_at=T0 + timedelta(seconds=i),
                       actor="user" if i % 2 else "agent", text=f"turn {i}: we talked about topic {i % 97} and the weather")
              for i in range(n_events)]
    for i in range(0, n_events, 1000):
        mem.append(events[i : i + 1000])
    facts = []
    for j in range(n_facts):
        critical = j % critical_every == 0
        facts.append(NewFact(
            tenant_id=T, subject_id=subject, fact_id=f"{subject}-f{j}",
            predicate="account.scope" if critical else "chat.topic",
            value=f"scope-{j}" if critical else f"topic {j}", source_event_ids=[f"{subject}-e{j % n_events}"],
            qualifiers={"environment": "staging"} if critical else None,
        ))
    with mem.transaction() as led:
        led.assert_facts(facts)


def bench_consolidation(d: Path, n_events: int, n_facts: int, repeat: int) -> dict:
    mem = _memory(d / "consolidate.db")
    subjects = [f"c{i}" for i in range(repeat)]
    for s in subjects:
        _fill(mem, s, n_events, n_facts)
    from lossgate.consolidate.pipeline import ConsolidationConfig

    config = ConsolidationConfig(incremental=False)
    times, outcomes = [], []
    for s in subjects:
        t0 = time.perf_counter()
        attempt = mem.consolidate(T, s, config=config)
        times.append(time.perf_counter() - t0)
        outcomes.append(attempt.status)
    conn = sqlite3.connect(d / "consolidate.db")
    base = timed(lambda: (conn.execute("SELECT * FROM events WHERE tenant_id=? AND subject_id=?", (T, "c0")).fetchall(),
                          conn.execute("SELECT * FROM facts WHERE tenant_id=? AND subject_id=?", (T, "c0")).fetchall()),
                 repeat=repeat)
    timings = mem.attempts(T, subjects[-1])[-1].timings
    return {"median_s": median(times), "baseline_s": median(base), "outcomes": outcomes, "timings": timings}


def bench_recall(d: Path, n_facts: int, calls: int) -> dict:
    mem = _memory(d / "recall.db")
    _fill(mem, "r", 2000, n_facts, critical_every=100)
    mem.consolidate(T, "r")
    for _ in range(20):  # warm up (the tokenizer loads once)
        mem.recall(T, "r")
    res = mem.recall(T, "r", k=20)
    ids = [f.fact_id for f in res.facts]
    conn = sqlite3.connect(d / "recall.db")
    marks = ",".join("?" * len(ids))
    # The fair baseline: the same rows through their primary keys ("+subject_id" keeps
    # SQLite's planner on (tenant_id, fact_id) instead of walking facts_by_status_seq).
    facts_sql = f"SELECT * FROM facts WHERE tenant_id=? AND +subject_id=? AND fact_id IN ({marks})"
    lat, base = [], []
    for _ in range(calls):  # interleaved: A B A B ...
        t0 = time.perf_counter()
        res = mem.recall(T, "r", k=20)
        lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        conn.execute(facts_sql, (T, "r", *ids)).fetchall()
        conn.execute("SELECT * FROM events WHERE tenant_id=? AND subject_id=? ORDER BY seq DESC LIMIT 20", (T, "r")).fetchall()
        base.append(time.perf_counter() - t0)
    return {"mode": res.mode, "facts": len(res.facts), "p50_ms": median(lat) * 1e3, "p99_ms": percentile(lat, 99) * 1e3,
            "base_p50_ms": median(base) * 1e3, "base_p99_ms": percentile(base, 99) * 1e3}


def bench_stale(d: Path, chain: int, repeat: int) -> dict:
    mem = _memory(d / "stale.db")
    times, base = [], []
    for r in range(repeat):
        s = f"s{r}"
        mem.append([NewEvent(tenant_id=T, subject_id=s, event_id=f"{s}-root", text="root")])
        with mem.store.write() as tx:
            parent = None
            for i in range(chain):
                aid = f"{s}-a{i}"
                m = Manifest(artifact_id=aid, tenant_id=T, subject_id=s, new_covers_through=1, input_epoch=0,
                             expected_alias=ExpectedAlias(parent_artifact_id=parent, source_epoch=0, covers_through=0),
                             inputs=(), input_root="sha256:0", path="direct", selector_version="x", prompt_version="x",
                             compressor="x", compressor_version="x", extractor_version="x", schema_version=2,
                             registry_version=1, attempt=i + 1)
                art = Artifact(artifact_id=aid, tenant_id=T, subject_id=s, state="retired",
                               body=ArtifactBody(tenant_id=T, subject_id=s), manifest=m, created_at=utcnow())
                edge_kind, edge_id = ("artifact", parent) if parent else ("event", f"{s}-root")
                tx.insert_artifact(art, [LineageEdge(tenant_id=T, subject_id=s, artifact_id=aid,
                                                     input_kind=edge_kind, input_id=edge_id)])
                parent = aid
        t0 = time.perf_counter()
        mem.revoke_event(T, s, f"{s}-root")
        times.append(time.perf_counter() - t0)
        stale = len(mem.artifacts(T, s, states=["stale"]))
        assert stale == chain, stale
        conn = sqlite3.connect(d / "stale.db", isolation_level=None)
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE artifacts SET state='retired' WHERE tenant_id=? AND subject_id=?", (T, s))
        conn.execute("COMMIT")
        base.append(time.perf_counter() - t0)
        conn.close()
    return {"chain": chain, "median_ms": median(times) * 1e3, "base_ms": median(base) * 1e3}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--facts", type=int, default=500)
    ap.add_argument("--recall-facts", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--chain", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        c = bench_consolidation(d, args.events, args.facts, args.repeat)
        r = bench_recall(d, args.recall_facts, args.calls)
        s = bench_stale(d, args.chain, args.repeat)
    print(f"consolidation  {args.events} events + {args.facts} facts, direct path, median of {args.repeat}")
    print(f"  lossgate consolidate   {c['median_s']:.3f} s   outcomes {c['outcomes']}   target < 2 s")
    print(f"  plain SELECT of inputs {c['baseline_s']:.3f} s   ratio {c['median_s'] / c['baseline_s']:.1f}x")
    print("  step timings: " + ", ".join(f"{k} {v:.3f}" for k, v in c["timings"].items()))
    print(f"recall  subject with {args.recall_facts} facts, {args.calls} calls, mode {r['mode']}, {r['facts']} facts returned")
    print(f"  lossgate recall   p50 {r['p50_ms']:.2f} ms   p99 {r['p99_ms']:.2f} ms   target p99 < 10 ms")
    print(f"  plain SELECT      p50 {r['base_p50_ms']:.2f} ms   p99 {r['base_p99_ms']:.2f} ms   "
          f"ratio p50 {r['p50_ms'] / r['base_p50_ms']:.1f}x   target <= 5x")
    print(f"stale propagation  lineage chain of {s['chain']} artifacts, median of {args.repeat}")
    print(f"  revoke + mark stale   {s['median_ms']:.1f} ms   target < 100 ms")
    print(f"  plain UPDATE          {s['base_ms']:.1f} ms   ratio {s['median_ms'] / s['base_ms']:.1f}x")
    return {"consolidation": c, "recall": r, "stale": s}


if __name__ == "__main__":
    main()
