"""Run every benchmark: ``python -m bench`` (or ``make bench``).

Each prints medians and ratios against a baseline measured in the same run.
PostgreSQL benchmarks run when ``LOSSGATE_BENCH_PG_URL`` is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["bench_append.py", "bench_atoms.py", "bench_gate.py", "bench_consolidation.py", "bench_stores.py",
           "bench_compact.py", "bench_recall_query.py"]
PG_SCRIPTS: list[str] = []


def main() -> int:
    scripts = SCRIPTS + (PG_SCRIPTS if os.environ.get("LOSSGATE_BENCH_PG_URL") else [])
    worst = 0
    for name in scripts:
        path = HERE / name
        if not path.exists():
            continue
        print(f"\n=== {name} ===", flush=True)
        worst = max(worst, subprocess.call([sys.executable, str(path)]))
    return worst


if __name__ == "__main__":
    sys.exit(main())
