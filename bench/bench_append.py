"""Batch append into SQLite: lossgate's validated, hashed, idempotent append against a
plain ``executemany`` of the same rows into a bare table, timed alternately in the same run.

    python bench/bench_append.py [--events 20000] [--batch 1000] [--repeat 7]

Every round (A B A B ...) each side writes the same events into a fresh database file,
in the same transactions (one per batch of ``--batch``), and each side's clock runs
from its first batch to its last commit, as ``bench_stores.py`` times both stores:
opening the file, creating the schema and closing are outside it. Sides:

* lossgate: ``Memory.append`` of ready ``NewEvent`` objects;
* bare: ``executemany`` of the same rows (same tenant, subject, per-subject seq, event
  id, kind, actor, trust, text, payload JSON and timestamp) inside ``BEGIN IMMEDIATE`` /
  ``COMMIT``, on a connection set up as the store sets up its own (WAL, synchronous=NORMAL);
* the same two from the raw dicts, each side's conversion inside its clock
  (``NewEvent.model_validate``; building the tuples with ``json.dumps`` of the payload):
  what an application that holds dicts pays in all.

Prints the median throughput of each side and the median of the per-round ratios
lossgate/bare (throughput, so 1.0 means as fast as the bare insert). The target
(ratio >= 0.33, >= 20,000 events/s) is for the first pair.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import interleave, median, ratios
from lossgate.model.records import NewEvent

T0 = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)
BARE = (
    "CREATE TABLE events (tenant_id TEXT, subject_id TEXT, seq INTEGER, event_id TEXT, kind TEXT, "
    "actor TEXT, trust TEXT, text TEXT, payload TEXT, occurred_at TEXT, "
    "PRIMARY KEY (tenant_id, subject_id, seq), UNIQUE (tenant_id, event_id))"
)
TARGET_RATIO = 0.33
TARGET_RATE = 20_000


def make_events(n: int, subjects: int = 10) -> list[dict]:
    return [
        {
            "tenant_id": "bench",
            "subject_id": f"user-{i % subjects}",
            "event_id": f"ev-{i:08d}",
            "kind": "message",
            "actor": "user" if i % 2 else "agent",
            "trust": "authenticated_user",
            "text": f"Turn {i}: customer cust_{i % 977} asked about invoice INV-{9000 + i % 500} for ${100 + i % 900}.",
            "payload": {"turn": i} if i % 3 == 0 else {},
            "occurred_at": (T0 + timedelta(seconds=i)).isoformat(),
        }
        for i in range(n)
    ]


def bare_rows(raw: list[dict]) -> list[tuple]:
    """The rows lossgate stores for ``raw`` (the same key columns: per-subject seq from 1)."""
    seqs: dict[str, int] = {}
    out = []
    for r in raw:
        seq = seqs[r["subject_id"]] = seqs.get(r["subject_id"], 0) + 1
        out.append(
            (
                r["tenant_id"],
                r["subject_id"],
                seq,
                r["event_id"],
                r["kind"],
                r["actor"],
                r["trust"],
                r["text"],
                json.dumps(r["payload"]),
                r["occurred_at"],
            )
        )
    return out


def lossgate_side(events: list[NewEvent] | list[dict], batch: int, *, validate: bool) -> float:
    with tempfile.TemporaryDirectory() as d:
        mem = lossgate.open(f"sqlite:///{os.path.join(d, 'b.db')}")  # schema created here, untimed
        t0 = time.perf_counter()
        for i in range(0, len(events), batch):
            chunk = events[i : i + batch]
            mem.append([NewEvent.model_validate(r) for r in chunk] if validate else chunk)  # type: ignore[misc]
        took = time.perf_counter() - t0
        mem.close()
    return took


def bare_side(rows: list[tuple] | list[dict], batch: int, *, from_dicts: bool = False) -> float:
    with tempfile.TemporaryDirectory() as d:
        conn = sqlite3.connect(os.path.join(d, "bare.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")  # as lossgate's SQLite store opens its connections
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(BARE)
        t0 = time.perf_counter()
        if from_dicts:  # the rows built from the raw dicts inside the clock
            rows = bare_rows(rows)  # type: ignore[arg-type]
        for i in range(0, len(rows), batch):
            conn.execute("BEGIN IMMEDIATE")  # lossgate's write transactions begin so
            conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?,?)", rows[i : i + batch])
            conn.execute("COMMIT")
        took = time.perf_counter() - t0
        conn.close()
    return took


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=7, help="rounds; each round times every side once")
    args = ap.parse_args(argv)
    raw = make_events(args.events)
    events = [NewEvent.model_validate(r) for r in raw]
    rows = bare_rows(raw)
    n, b = args.events, args.batch
    lg_times, bare_times, dict_times, bare_dict_times = interleave(
        [
            lambda: lossgate_side(events, b, validate=False),
            lambda: bare_side(rows, b),
            lambda: lossgate_side(raw, b, validate=True),
            lambda: bare_side(raw, b, from_dicts=True),
        ],
        args.repeat,
    )
    # Throughput ratio lossgate/bare = bare time / lossgate time, per round.
    r_lg, r_dict = ratios(bare_times, lg_times), ratios(bare_dict_times, dict_times)
    result = {
        "events": n,
        "batch": b,
        "rounds": args.repeat,
        "lossgate_events_per_s": n / median(lg_times),
        "bare_events_per_s": n / median(bare_times),
        "ratio": median(r_lg),
        "ratio_min": min(r_lg),
        "ratio_max": max(r_lg),
        "lossgate_from_dicts_events_per_s": n / median(dict_times),
        "bare_from_dicts_events_per_s": n / median(bare_dict_times),
        "ratio_from_dicts": median(r_dict),
    }
    print(
        f"append into SQLite  {n} events, batches of {b}, medians of {args.repeat} interleaved rounds; "
        "each clock runs from the first batch to the last commit"
    )
    print(
        f"  lossgate append              {result['lossgate_events_per_s']:>10,.0f} events/s   "
        "(NewEvent objects built beforehand)"
    )
    print(
        f"  bare executemany             {result['bare_events_per_s']:>10,.0f} events/s   (row tuples built beforehand)"
    )
    print(
        f"  ratio lossgate/bare          {result['ratio']:10.2f}   median of per-round ratios "
        f"(rounds {result['ratio_min']:.2f}-{result['ratio_max']:.2f})"
    )
    print(
        f"  from dicts: lossgate {result['lossgate_from_dicts_events_per_s']:,.0f} events/s (NewEvent.model_validate "
        f"in the clock), bare {result['bare_from_dicts_events_per_s']:,.0f} events/s (tuples and json.dumps in "
        f"the clock), ratio {result['ratio_from_dicts']:.2f}"
    )
    met = result["ratio"] >= TARGET_RATIO and result["lossgate_events_per_s"] >= TARGET_RATE
    print(f"  target >= {TARGET_RATIO:.2f} and >= {TARGET_RATE:,} events/s: {'met' if met else 'NOT met'}")
    return result


if __name__ == "__main__":
    main()
