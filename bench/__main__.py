"""Run every benchmark: ``python -m bench [--pg URL]`` (or ``make bench``).

Each prints medians and ratios against a baseline measured in the same run, the two
timed alternately. PostgreSQL sides run when ``--pg`` or ``LOSSGATE_BENCH_PG_URL``
names a server (each benchmark creates and drops its own database there); the URL
reaches every script through its environment, and each script with a PostgreSQL side
reads it as the default of its own ``--pg``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "bench_append.py",
    "bench_atoms.py",
    "bench_gate.py",
    "bench_consolidation.py",
    "bench_stores.py",
    "bench_compact.py",
    "bench_recall_query.py",
    "bench_semantic.py",
    "bench_rerank.py",
    "bench_hierarchy.py",
    "bench_service.py",
    "bench_scale.py",
    "bench_boundary.py",
    "bench_chaos.py",
]
# The scripts with a PostgreSQL side (each defaults its --pg to LOSSGATE_BENCH_PG_URL).
PG_SCRIPTS = {
    "bench_stores.py",
    "bench_recall_query.py",
    "bench_semantic.py",
    "bench_rerank.py",
    "bench_service.py",
    "bench_scale.py",
    "bench_boundary.py",
    "bench_chaos.py",
}
PG_ENV = "LOSSGATE_BENCH_PG_URL"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run every benchmark.")
    ap.add_argument(
        "--pg",
        default=os.environ.get(PG_ENV) or None,
        help=f"PostgreSQL server URL for the PostgreSQL sides (default: ${PG_ENV})",
    )
    args = ap.parse_args(argv)
    env = dict(os.environ)
    if args.pg:
        env[PG_ENV] = args.pg
        print(f"PostgreSQL sides: on ({PG_ENV} set for every script)", flush=True)
    else:
        env.pop(PG_ENV, None)
        print(f"PostgreSQL sides: skipped ({PG_ENV} unset and no --pg given)", flush=True)
    worst = 0
    for name in SCRIPTS:
        path = HERE / name
        if not path.exists():
            continue
        print(f"\n=== {name} ===", flush=True)
        if name in PG_SCRIPTS and not args.pg:
            print(f"(its PostgreSQL side is skipped: {PG_ENV} unset)", flush=True)
        worst = max(worst, subprocess.call([sys.executable, str(path)], env=env))
    return worst


if __name__ == "__main__":
    sys.exit(main())
