"""Hybrid (semantic + full-text) recall on a 10,000-event subject, against lexical recall.

    python bench/bench_semantic.py [--events 10000] [--runs 200] [--pg URL]

For each store: the subject of ``bench_recall_query.py`` (``--events`` events, a published
summary) with a 384-dimensional unit vector stored for every event, as
all-MiniLM-L6-v2 would give. The query's vector comes from a fixed embedder, so what is
timed is lossgate's side: reading the subject's vectors, the exact scan, the fusion.
Alternately (A B A B ...) over the same questions:

* A, ``recall(query=..., budget=2000, embedder=...)``: hybrid;
* B, the same recall without the embedder: lexical, as ``bench_recall_query.py`` measures it.

Prints p50 and p99 of both and the ratio of the medians; then, if the ``[semantic]``
extra is installed, how long the local model takes to embed one question (the part of a
hybrid recall that happens before the store is read). PostgreSQL runs with ``--pg`` or
``LOSSGATE_BENCH_PG_URL``; it creates and drops its own database there.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, percentile, pg_url, skip_pg
from bench.bench_recall_query import QUESTIONS, S, T, build
from lossgate.recall.read import recall

DIM = 384


class FixedEmbedder:
    """A question's vector without a model: seeded by the text, unit length."""

    model, max_chars = "bench-384", 2000

    def embed(self, texts):  # type: ignore[no-untyped-def]
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(DIM) for t in texts]
        m = np.asarray(rows, dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def add_vectors(memory: lossgate.Memory, n: int) -> None:
    rng = np.random.default_rng(1)
    for lo in range(0, n, 2000):
        m = rng.standard_normal((min(n, lo + 2000) - lo, DIM)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        with memory.store.write() as tx:
            tx.lock_clock(T, S)
            tx.put_vectors(
                T,
                S,
                FixedEmbedder.model,
                [("event", f"e{lo + i}", row.astype("<f4").tobytes()) for i, row in enumerate(m)],
            )


def measure(name: str, memory: lossgate.Memory, runs: int) -> None:
    embedder = FixedEmbedder()
    vectors = {q: embedder.embed([q]) for q in QUESTIONS}

    class Cached(FixedEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            return vectors[texts[0]]

    cached = Cached()
    a, b = [], []
    for i in range(runs):
        q = QUESTIONS[i % len(QUESTIONS)]
        t0 = time.perf_counter()
        recall(memory.store, T, S, query=q, budget=2000, embedder=cached)
        a.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        recall(memory.store, T, S, query=q, budget=2000)
        b.append(time.perf_counter() - t0)
    ms = lambda xs, p: percentile(xs, p) * 1000  # noqa: E731
    print(
        f"{name:10} hybrid recall p50 {ms(a, 50):6.2f} ms  p99 {ms(a, 99):6.2f} ms | lexical recall p50 "
        f"{ms(b, 50):6.2f} ms  p99 {ms(b, 99):6.2f} ms | ratio of medians {median(a) / median(b):.2f}"
    )


def local_model(runs: int) -> None:
    try:
        from lossgate.semantic import LocalEmbedder

        embedder = LocalEmbedder()
    except lossgate.LossgateError as exc:
        print(f"local model: skipped ({exc})")
        return
    embedder.embed(QUESTIONS[:1])  # the first call builds torch's kernels
    took = []
    for i in range(runs):
        t0 = time.perf_counter()
        embedder.embed([QUESTIONS[i % len(QUESTIONS)]])
        took.append(time.perf_counter() - t0)
    print(
        f"local all-MiniLM-L6-v2, one question: p50 {percentile(took, 50) * 1000:.2f} ms  "
        f"p99 {percentile(took, 99) * 1000:.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        memory = lossgate.open(f"sqlite:///{Path(tmp) / 'bench.db'}")
        build(memory, args.events)
        add_vectors(memory, args.events)
        measure("sqlite", memory, args.runs)
        memory.close()
    pg = pg_url(args.pg)
    if pg:
        import psycopg

        from lossgate.testing.postgres import scratch_database

        with scratch_database(pg) as url:  # created here, dropped after
            memory = lossgate.open(url)
            build(memory, args.events)
            add_vectors(memory, args.events)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE")  # plans as on a server whose autovacuum has run
            measure("postgresql", memory, args.runs)
            memory.close()
    else:
        skip_pg("hybrid recall")
    local_model(args.runs)


if __name__ == "__main__":
    main()
