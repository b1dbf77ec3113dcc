"""Batch append into SQLite: lossgate's validated, hashed, idempotent append
against a plain ``executemany`` of the same rows into a bare table, same run.

    python bench/bench_append.py [--events 20000] [--batch 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate  # noqa: E402
from bench._util import median, timed  # noqa: E402
from lossgate.records import NewEvent  # noqa: E402

T0 = datetime(2026, 3, 14, 9, 0, tzinfo=timezone.utc)


def make_events(n: int, subjects: int = 10) -> list[dict]:
    return [
        {"tenant_id": "bench", "subject_id": f"user-{i % subjects}", "event_id": f"ev-{i:08d}",
         "kind": "message", "actor": "user" if i % 2 else "agent", "trust": "authenticated_user",
         "text": f"Turn {i}: customer cust_{i % 977} asked about invoice INV-{9000 + i % 500} for ${100 + i % 900}.",
         "payload": {"turn": i} if i % 3 == 0 else {}, "occurred_at": (T0 + timedelta(seconds=i)).isoformat()}
        for i in range(n)
    ]


def run_lossgate(raw: list[dict], batch: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        mem = lossgate.open(f"sqlite:///{os.path.join(d, 'b.db')}")
        for i in range(0, len(raw), batch):
            mem.append([NewEvent.model_validate(r) for r in raw[i : i + batch]])
        mem.close()


def run_bare(raw: list[dict], batch: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        conn = sqlite3.connect(os.path.join(d, "bare.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(
            "CREATE TABLE events (tenant_id TEXT, subject_id TEXT, seq INTEGER, event_id TEXT, kind TEXT, "
            "actor TEXT, trust TEXT, text TEXT, payload TEXT, occurred_at TEXT, "
            "PRIMARY KEY (tenant_id, subject_id, seq), UNIQUE (tenant_id, event_id))"
        )
        import json

        for i in range(0, len(raw), batch):
            rows = [(r["tenant_id"], r["subject_id"], i + j, r["event_id"], r["kind"], r["actor"], r["trust"],
                     r["text"], json.dumps(r["payload"]), r["occurred_at"]) for j, r in enumerate(raw[i : i + batch])]
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
            conn.execute("COMMIT")
        conn.close()


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    raw = make_events(args.events)
    ours = median(timed(lambda: run_lossgate(raw, args.batch), repeat=args.repeat))
    bare = median(timed(lambda: run_bare(raw, args.batch), repeat=args.repeat))
    result = {
        "events": args.events, "batch": args.batch,
        "lossgate_events_per_s": args.events / ours, "bare_events_per_s": args.events / bare,
        "ratio": bare / ours,
    }
    print(f"append  {args.events} events, batches of {args.batch}, median of {args.repeat}")
    print(f"  lossgate append      {result['lossgate_events_per_s']:>10,.0f} events/s")
    print(f"  bare executemany     {result['bare_events_per_s']:>10,.0f} events/s")
    print(f"  ratio (lossgate/bare) {result['ratio']:.2f}   target >= 0.25, >= 20,000 events/s")
    return result


if __name__ == "__main__":
    main()
