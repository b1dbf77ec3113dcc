"""Consolidation, recall and stale propagation on SQLite, each against a same-run baseline
timed alternately with it (A B A B ...).

    python bench/bench_consolidation.py [--events 10000] [--facts 500] [--recall-facts 10000] [--repeat 5]

* consolidation of one subject with N events and F facts (direct path, default budget),
  against reading the same rows with plain SELECTs. Each round consolidates a fresh
  subject with the process-wide cache of event atoms emptied first (a subject's first
  consolidation), then a twin subject with the same texts (every event's atoms cached, as
  when a subject is consolidated again), then runs the baseline. One untimed consolidation
  before the rounds keeps the process's first-use costs (the tokenizer) out of them;
* recall latency (median, p99) for a subject with 10,000 facts, against a plain indexed
  SELECT of the rows recall returns, call by call;
* stale propagation over a lineage chain of 1,000 artifacts (one revoke marks all 1,000
  stale), against a plain UPDATE of the same 1,000 rows on a connection set up as the
  store's (WAL, synchronous=NORMAL, foreign keys), opened once.
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
from bench._util import median, median_ratio, percentile
from lossgate.model.derived_records import Artifact, ExpectedAlias, LineageEdge, Manifest
from lossgate.model.records import ArtifactBody, NewEvent, NewFact, utcnow

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
T = "bench"


def _memory(path: Path) -> lossgate.Memory:
    mem = lossgate.open(f"sqlite:///{path}")
    mem.admin.load_predicates(ROOT / "examples" / "predicates.toml")
    return mem


def _fill(mem: lossgate.Memory, subject: str, n_events: int, n_facts: int, critical_every: int = 10) -> None:
    events = [
        NewEvent(
            tenant_id=T,
            subject_id=subject,
            event_id=f"{subject}-e{i}",
            occurred_at=T0 + timedelta(seconds=i),
            actor="user" if i % 2 else "agent",
            text=f"turn {i}: we talked about topic {i % 97} and the weather",
        )
        for i in range(n_events)
    ]
    for i in range(0, n_events, 1000):
        mem.append(events[i : i + 1000])
    facts = []
    for j in range(n_facts):
        critical = j % critical_every == 0
        facts.append(
            NewFact(
                tenant_id=T,
                subject_id=subject,
                fact_id=f"{subject}-f{j}",
                predicate="account.scope" if critical else "chat.topic",
                value=f"scope-{j}" if critical else f"topic {j}",
                source_event_ids=[f"{subject}-e{j % n_events}"],
                qualifiers={"environment": "staging"} if critical else None,
            )
        )
    with mem.transaction() as led:
        led.assert_facts(facts)


def bench_consolidation(d: Path, n_events: int, n_facts: int, repeat: int) -> dict:
    """Rounds of A (first consolidation: no cached event atoms), A' (the same again for a twin
    subject whose events have the same texts and days: every event's atoms cached, as when a
    subject is consolidated again) and B (the plain SELECTs of A's inputs), interleaved."""
    from lossgate.consolidate.pipeline import ConsolidationConfig
    from lossgate.gate.sources import clear_atom_cache

    mem = _memory(d / "consolidate.db")
    _fill(mem, "warm", n_events, n_facts)
    subjects = [f"c{i}" for i in range(repeat)]
    for s in subjects:
        _fill(mem, s, n_events, n_facts)
        _fill(mem, f"{s}-twin", n_events, n_facts)
    config = ConsolidationConfig(incremental=False)
    # Untimed: first-use costs of this process (imports, the tokenizer) stay out of every round.
    assert mem.consolidate(T, "warm", config=config).status == "published"
    conn = sqlite3.connect(d / "consolidate.db")

    def plain(s: str) -> None:
        conn.execute("SELECT * FROM events WHERE tenant_id=? AND subject_id=?", (T, s)).fetchall()
        conn.execute("SELECT * FROM facts WHERE tenant_id=? AND subject_id=?", (T, s)).fetchall()

    plain("warm")
    cold, cached, base, outcomes = [], [], [], []
    for s in subjects:  # interleaved: A A' B A A' B ...
        clear_atom_cache()  # untimed: no event of this round has been extracted before
        t0 = time.perf_counter()
        attempt = mem.consolidate(T, s, config=config)
        t1 = time.perf_counter()
        again = mem.consolidate(T, f"{s}-twin", config=config)
        t2 = time.perf_counter()
        plain(s)
        t3 = time.perf_counter()
        cold.append(t1 - t0)
        cached.append(t2 - t1)
        base.append(t3 - t2)
        outcomes += [attempt.status, again.status]
    conn.close()
    timings = mem.admin.attempts(T, subjects[-1])[-1].timings
    mem.close()
    return {
        "median_s": median(cold),
        "cached_s": median(cached),
        "baseline_s": median(base),
        "ratio": median_ratio(cold, base),
        "cached_ratio": median_ratio(cached, base),
        "outcomes": sorted(set(outcomes)),
        "timings": timings,
    }


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
    conn.execute(facts_sql, (T, "r", *ids)).fetchall()  # the baseline's connection warmed up too
    lat, base = [], []
    for _ in range(calls):  # interleaved: A B A B ...
        t0 = time.perf_counter()
        res = mem.recall(T, "r", k=20)
        lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        conn.execute(facts_sql, (T, "r", *ids)).fetchall()
        conn.execute(
            "SELECT * FROM events WHERE tenant_id=? AND subject_id=? ORDER BY seq DESC LIMIT 20", (T, "r")
        ).fetchall()
        base.append(time.perf_counter() - t0)
    conn.close()
    mem.close()
    return {
        "mode": res.mode,
        "facts": len(res.facts),
        "p50_ms": median(lat) * 1e3,
        "p99_ms": percentile(lat, 99) * 1e3,
        "base_p50_ms": median(base) * 1e3,
        "base_p99_ms": percentile(base, 99) * 1e3,
    }


def bench_stale(d: Path, chain: int, repeat: int) -> dict:
    mem = _memory(d / "stale.db")
    # The baseline's connection, set up as the store sets up its own, opened and warmed once.
    conn = sqlite3.connect(d / "stale.db", isolation_level=None)
    for pragma in ("journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL", "busy_timeout=30000"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("SELECT count(*) FROM artifacts").fetchone()
    times, base = [], []
    for r in range(repeat):  # interleaved: A B A B ...
        s = f"s{r}"
        mem.append([NewEvent(tenant_id=T, subject_id=s, event_id=f"{s}-root", text="root")])
        with mem.store.write() as tx:
            parent = None
            for i in range(chain):
                aid = f"{s}-a{i}"
                m = Manifest(
                    artifact_id=aid,
                    tenant_id=T,
                    subject_id=s,
                    new_covers_through=1,
                    input_epoch=0,
                    expected_alias=ExpectedAlias(parent_artifact_id=parent, source_epoch=0, covers_through=0),
                    inputs=(),
                    input_root="sha256:0",
                    path="direct",
                    selector_version="x",
                    prompt_version="x",
                    compressor="x",
                    compressor_version="x",
                    extractor_version="x",
                    schema_version=2,
                    registry_version=1,
                    attempt=i + 1,
                )
                art = Artifact(
                    artifact_id=aid,
                    tenant_id=T,
                    subject_id=s,
                    state="retired",
                    body=ArtifactBody(tenant_id=T, subject_id=s),
                    manifest=m,
                    created_at=utcnow(),
                )
                edge_kind, edge_id = ("artifact", parent) if parent else ("event", f"{s}-root")
                tx.insert_artifact(
                    art,
                    [LineageEdge(tenant_id=T, subject_id=s, artifact_id=aid, input_kind=edge_kind, input_id=edge_id)],
                )
                parent = aid
        t0 = time.perf_counter()
        mem.revoke_event(T, s, f"{s}-root")
        times.append(time.perf_counter() - t0)
        stale = len(mem.admin.artifacts(T, s, states=["stale"]))
        assert stale == chain, stale
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE artifacts SET state='retired' WHERE tenant_id=? AND subject_id=?", (T, s))
        conn.execute("COMMIT")
        base.append(time.perf_counter() - t0)
    conn.close()
    mem.close()
    return {
        "chain": chain,
        "median_ms": median(times) * 1e3,
        "base_ms": median(base) * 1e3,
        "ratio": median_ratio(times, base),
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--facts", type=int, default=500)
    ap.add_argument("--recall-facts", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--chain", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5, help="rounds of consolidation and of stale propagation")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        c = bench_consolidation(d, args.events, args.facts, args.repeat)
        r = bench_recall(d, args.recall_facts, args.calls)
        s = bench_stale(d, args.chain, args.repeat)
    print(
        f"consolidation  {args.events} events + {args.facts} facts, direct path, medians of {args.repeat} "
        "interleaved rounds (A, A again, B)"
    )
    print(
        f"  lossgate consolidate, first    {c['median_s']:.3f} s   ratio {c['ratio']:.1f}x   "
        f"outcomes {c['outcomes']}   target < 2 s"
    )
    print(f"  again (event atoms cached)     {c['cached_s']:.3f} s   ratio {c['cached_ratio']:.1f}x")
    print(f"  plain SELECT of inputs         {c['baseline_s']:.3f} s   (ratios: medians of per-round ratios)")
    print("  step timings (last first run): " + ", ".join(f"{k} {v:.3f}" for k, v in c["timings"].items()))
    print(
        f"recall  subject with {args.recall_facts} facts, {args.calls} calls interleaved, mode {r['mode']}, "
        f"{r['facts']} facts returned"
    )
    print(f"  lossgate recall   p50 {r['p50_ms']:.2f} ms   p99 {r['p99_ms']:.2f} ms   target p99 < 10 ms")
    print(
        f"  plain SELECT      p50 {r['base_p50_ms']:.2f} ms   p99 {r['base_p99_ms']:.2f} ms   "
        f"ratio p50 {r['p50_ms'] / r['base_p50_ms']:.1f}x   target <= 5x"
    )
    print(f"stale propagation  lineage chain of {s['chain']} artifacts, medians of {args.repeat} interleaved rounds")
    print(f"  revoke + mark stale   {s['median_ms']:.1f} ms   target < 100 ms")
    print(f"  plain UPDATE          {s['base_ms']:.1f} ms   ratio {s['ratio']:.1f}x (median of per-round ratios)")
    return {"consolidation": c, "recall": r, "stale": s}


if __name__ == "__main__":
    main()
