"""The response boundary's cost: a guard, and recall's attestation, against recall alone.

    python bench/bench_boundary.py [--events 5000] [--runs 300] [--pg URL]

One subject of ``--events`` turns with a published summary and the critical facts a guard
reads (an allergy, a refund limit with its condition, a forbidden channel). In each round,
in turn (A B C D ...), on the same questions:

* A, the baseline: ``recall(query=..., budget=2000)`` as it was before recalls were
  attested: the same reads, the same ranking and budget, the recall record written, but
  without the rendered block's hash or the inputs' content hashes;
* B, ``Memory.recall`` as it is: A plus the attestation;
* C, ``Memory.guard`` of a three-dish meal order (two rules read, one refusal), the result
  written;
* D, ``Memory.verify_recall`` of the recall just made.

Prints p50 and p99 of each and the median of the per-round ratios to A. PostgreSQL runs with
``--pg`` or ``LOSSGATE_BENCH_PG_URL``; it creates and drops its own database there.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median_ratio, percentile, pg_url, skip_pg
from bench.bench_recall_query import QUESTIONS, S, T
from bench.bench_recall_query import build as subject
from lossgate.model.records import NewFact
from lossgate.model.values import Money
from lossgate.recall.read import recall

ORDER = {
    "restaurant": "Casa",
    "items": [
        {"dish": "green salad", "ingredients": ["lettuce", "peanut dressing"]},
        {"dish": "soup", "ingredients": ["tomato", "basil"]},
        {"dish": "bread", "ingredients": ["flour", "olive oil"]},
    ],
    "refund": {"amount": "20.00", "currency": "USD", "conditions_met": ["after supervisor review"]},
}


def build(memory: lossgate.Memory, n: int) -> None:
    """The subject of bench_recall_query.py, with the critical facts a guard reads, summarised."""
    subject(memory, n)
    memory.assert_facts(
        [
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="allergy",
                predicate="food.peanuts_allowed",
                value=False,
                qualifiers={"basis": "allergy"},
                source_event_ids=["e1"],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="refund",
                predicate="refund.limit",
                value=Money(amount=Decimal("50"), currency="USD"),
                qualifiers={"condition": "after supervisor review"},
                source_event_ids=["e3"],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="no-phone",
                predicate="contact.allowed",
                value=False,
                qualifiers={"channel": "phone"},
                source_event_ids=["e5"],
            ),
        ]
    )
    assert memory.consolidate(T, S).status == "published"


def measure(name: str, memory: lossgate.Memory, runs: int) -> None:
    sides: dict[str, list[float]] = {
        "recall, unattested": [],
        "recall (attested)": [],
        "guard": [],
        "verify_recall": [],
    }
    last = None
    for i in range(runs):
        q = QUESTIONS[i % len(QUESTIONS)]
        t0 = time.perf_counter()
        recall(memory.store, T, S, query=q, budget=2000, attest=False)
        sides["recall, unattested"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        last = memory.recall(T, S, query=q, budget=2000)
        sides["recall (attested)"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        verdict = memory.guard(T, S, ORDER, recall_id=last.record.recall_id)
        sides["guard"].append(time.perf_counter() - t0)
        assert not verdict.allowed
        t0 = time.perf_counter()
        memory.verify_recall(T, S, last.record.recall_id)
        sides["verify_recall"].append(time.perf_counter() - t0)
    base = sides["recall, unattested"]
    for label, xs in sides.items():
        print(
            f"{name:10} {label:20} p50 {percentile(xs, 50) * 1000:7.2f} ms  p99 {percentile(xs, 99) * 1000:7.2f} ms"
            f"  ratio to recall, unattested {median_ratio(xs, base):5.2f}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=5_000)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        memory = lossgate.open(f"sqlite:///{Path(tmp) / 'bench.db'}")
        build(memory, args.events)
        measure("sqlite", memory, args.runs)
        memory.close()
    pg = pg_url(args.pg)
    if pg:
        from lossgate.testing.postgres import scratch_database

        with scratch_database(pg) as url:
            memory = lossgate.open(url)
            build(memory, args.events)
            measure("postgresql", memory, args.runs)
            memory.close()
    else:
        skip_pg("the response boundary")


if __name__ == "__main__":
    main()
