"""What erasure maintenance costs on SQLite: ``Store.compact`` against a plain VACUUM.

    python bench/bench_compact.py [--events 10000 50000] [--runs 5]

For each size, builds one database (events appended, the full-text index filled,
a consolidation published), deletes one event, and copies that file before every
timed run, so both sides start from the same bytes. Alternately (A B A B ...):

* A, ``compact()``: FTS5 'optimize' of both indexes, VACUUM, WAL checkpoint (TRUNCATE);
* B, the baseline: VACUUM and the same checkpoint alone (the least a user would run,
  which leaves the deleted words in the index segments; see tests/conformance/test_erasure.py).

Prints the medians, the median of the per-round ratios A/B and the file size. Both sides
open the copy before their clock starts; A's connection is the store's (WAL,
synchronous=NORMAL, foreign keys), B's is set up the same way.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, ratios
from lossgate import NewEvent
from lossgate.model.registry import load_registry

REGISTRY = Path(__file__).resolve().parents[1] / "examples" / "predicates.toml"


def build(path: Path, events: int) -> None:
    mem = lossgate.open(f"sqlite:///{path}")
    mem.admin.load_predicates(load_registry(REGISTRY))
    for lo in range(0, events, 5000):
        mem.append(
            [
                NewEvent(
                    tenant_id="t",
                    subject_id="s",
                    event_id=f"e{i}",
                    text=f"message {i}: the order INV-{i:05d} ships on day {i % 28 + 1} to room {i % 97}",
                )
                for i in range(lo, min(events, lo + 5000))
            ]
        )
    mem.consolidate("t", "s")  # fills the full-text index
    mem.delete_event("t", "s", "e7", reason="erasure request")
    mem.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mem.close()


def compact(path: Path) -> float:
    mem = lossgate.open(f"sqlite:///{path}")
    t0 = time.perf_counter()
    mem.admin.compact()
    took = time.perf_counter() - t0
    mem.close()
    return took


def vacuum(path: Path) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    # Set up as lossgate's store sets up its connections, the schema read (as lossgate.open
    # reads it, untimed, on the other side) before the clock starts.
    for pragma in ("journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL", "busy_timeout=30000"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    t0 = time.perf_counter()
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    took = time.perf_counter() - t0
    conn.close()
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.events:
            master = Path(tmp) / f"master-{n}.db"
            build(master, n)
            a, b = [], []
            for _ in range(args.runs):
                for side, fn in (("a", compact), ("b", vacuum)):
                    work = Path(tmp) / "work.db"
                    for suffix in ("-wal", "-shm"):
                        Path(str(work) + suffix).unlink(missing_ok=True)
                    shutil.copyfile(master, work)
                    (a if side == "a" else b).append(fn(work))
            size = master.stat().st_size / 1e6
            rs = ratios(a, b)
            print(
                f"{n:>7,} events ({size:.1f} MB): compact {median(a) * 1000:7.1f} ms, "
                f"VACUUM alone {median(b) * 1000:7.1f} ms (medians of {args.runs} interleaved rounds), "
                f"ratio {median(rs):.2f} (median of per-round ratios; rounds {min(rs):.2f}-{max(rs):.2f})"
            )


if __name__ == "__main__":
    main()
