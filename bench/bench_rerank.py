"""What recall's reranking stage costs on the read path, against recall without it.

    python bench/bench_rerank.py [--events 10000] [--runs 300] [--pg URL] [--locomo locomo10.json]

The reranker is :class:`~lossgate.semantic.HttpReranker` talking to the scripted
``/v1/rerank`` server on loopback (:func:`lossgate.testing.rerank.word_overlap`: it scores
by shared words, in microseconds), so what is timed is lossgate's side of the stage: reading
the candidates' texts (and the neighbours any order of them can bring), the HTTP exchange with
its JSON both ways, checking the answer, the short read after it that checks nothing was
deleted meanwhile, and reordering; a real model's own time comes on top. The server runs in this process's
threads, so its parsing and answering are in the figure too.

For each store, on the subject of ``bench_recall_query.py`` (``--events`` events, a
published summary) and, with ``--locomo``, on every LoCoMo question of categories 1-4 (each
conversation ingested and consolidated as ``lossgate eval locomo`` does): per question,
``recall(query=..., budget=2000)`` without the stage (A) and with it (B, depth 50), in
alternating order (A B, then B A), on the same questions. Prints p50 and p99 of both, the
median of the per-question differences B - A, and how many texts a request carried.
PostgreSQL runs with ``--pg`` or ``LOSSGATE_BENCH_PG_URL``; it creates and drops its own
database there.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, percentile, pg_url, skip_pg
from bench.bench_recall_query import QUESTIONS, S, T, build
from lossgate.recall.read import recall
from lossgate.semantic import HttpReranker, HttpRerankerConfig
from lossgate.testing.chat_server import ScriptedChatServer
from lossgate.testing.rerank import word_overlap

ROOT = Path(__file__).resolve().parents[1]


def measure(name: str, memory: lossgate.Memory, questions: list[tuple[str, str, str]], runs: int) -> None:
    """``questions`` are (tenant, subject, question); ``runs`` rounds over them in turn."""
    with ScriptedChatServer(default=word_overlap) as server:
        reranker = HttpReranker(HttpRerankerConfig(base_url=server.url, model="scripted", timeout_s=5.0))
        off, on, used = [], [], 0
        for i in range(runs):
            tenant, subject, q = questions[i % len(questions)]

            def without() -> float:
                t0 = time.perf_counter()
                recall(memory.store, tenant, subject, query=q, budget=2000)  # noqa: B023 - called within this iteration
                return time.perf_counter() - t0

            def with_stage() -> float:
                nonlocal used
                t0 = time.perf_counter()
                result = recall(memory.store, tenant, subject, query=q, budget=2000, reranker=reranker)  # noqa: B023 - called within this iteration
                took = time.perf_counter() - t0
                used += result.record.filters.get("rerank", "").startswith("used")
                return took

            if i % 2:
                on.append(with_stage())
                off.append(without())
            else:
                off.append(without())
                on.append(with_stage())
        reranker.close()
        texts = [len(body["documents"]) for body in server.requests]
    ms = lambda xs, p: percentile(xs, p) * 1000  # noqa: E731
    diff = statistics.median(b - a for a, b in zip(off, on, strict=False)) * 1000
    print(
        f"{name:22} without p50 {ms(off, 50):6.2f} ms  p99 {ms(off, 99):6.2f} ms | with the stage p50 "
        f"{ms(on, 50):6.2f} ms  p99 {ms(on, 99):6.2f} ms | median difference {diff:+.2f} ms, ratio of medians "
        f"{median(on) / median(off):.2f} | reranked {used}/{runs}, texts per request p50 "
        f"{statistics.median(texts) if texts else 0:.0f}",
        flush=True,
    )


def locomo_questions(memory: lossgate.Memory, data: Path) -> list[tuple[str, str, str]]:
    from lossgate.evaluation import locomo

    convs, _ = locomo.load(data)
    if memory.admin.registry is None:
        memory.admin.load_predicates(ROOT / "lossgate" / "fixtures" / "gate" / "predicates.toml")
    out = []
    for conv in convs:
        locomo.ingest(memory, conv)
        memory.consolidate(locomo.TENANT, conv.sample_id)
        out += [(locomo.TENANT, conv.sample_id, q.text) for q in conv.questions if q.category in locomo.CATEGORIES]
    return out


def run(name: str, url: str, args: argparse.Namespace) -> None:
    memory = lossgate.open(url)
    try:
        build(memory, args.events)
        if name == "postgresql":
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE")  # plans as on a server whose autovacuum has run
        measure(f"{name}, {args.events:,} events", memory, [(T, S, q) for q in QUESTIONS], args.runs)
        if args.locomo:
            questions = locomo_questions(memory, args.locomo)
            if name == "postgresql":
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("ANALYZE")
            measure(f"{name}, LoCoMo", memory, questions, len(questions))
    finally:
        memory.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    ap.add_argument("--locomo", type=Path, default=None, metavar="FILE", help="also every question of locomo10.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run("sqlite", f"sqlite:///{Path(tmp) / 'bench.db'}", args)
    pg = pg_url(args.pg)
    if pg:
        from lossgate.testing.postgres import scratch_database

        with scratch_database(pg) as url:  # created here, dropped after
            run("postgresql", url, args)
    else:
        skip_pg("the reranking stage")


if __name__ == "__main__":
    main()
