"""Scale: one subject at 1,000, 50,000 and 100,000 events, in four shapes of history, on each
store; what grows with the history and what should not.

    python bench/bench_scale.py [--sizes 1000,50000,100000] [--shapes spread,bulk,session,undated]
                                [--rounds 5] [--tail 100] [--calls 200] [--budget TOKENS] [--pg URL]
                                [--no-analyze] [--only sqlite|postgresql] [--json PATH] [--strict]

Each shape and size is one subject in a database of its own (a file on SQLite; a scratch
database on PostgreSQL, created here and dropped after), filled by the shape's fill
(:data:`bench.scale_data.SHAPES`; ``--shapes`` picks some, default all four):

* ``spread`` (:func:`bench.scale_data.fill`): 12-word turns spread over days, with facts every
  50th event (supersessions, negations, open conflicts, deletions);
* ``bulk``: an existing history imported at once: turns of a 16-word vocabulary, each with a
  counterpart's name and an invoice reference, appended in batches of 1,000 with no
  ``occurred_at`` (every event lands on the day of its append: one period), one critical fact
  (``food.peanuts_allowed``) with the first batch;
* ``session``: one endless session: ``spread``'s turns, times and facts, every event in
  session 1 (one period for a hierarchy split by session);
* ``undated``: ``spread``'s turns and facts with no date (the append time) and no session.

The shapes run one after the other (each measured, and its databases dropped before the
next is filled). PostgreSQL runs when ``--pg`` or ``LOSSGATE_BENCH_PG_URL`` names a server.
Every timed consolidation starts with the process's caches of text emptied
(``lossgate.runtime.caches.forget_text``, untimed): the history's texts repeat across sizes, and the
atom cache holds 20,000 events, so a warm cache would hide a pass over the whole history at
the small sizes but not at 100,000. One untimed consolidation of a small subject of each shape
before anything keeps the process's first-use costs (imports, the tokenizer, the shapes' code
paths) out of the figures. For each store, shape and size:

1. append: events/s of the fill (``Memory.transaction`` batches of the shape's size, 2,000 or
   1,000 for ``bulk``, one transaction each; the lossgate side also writes the facts and their
   ledger entries), against the same-run baseline, for every shape: plain ``executemany``
   INSERT of the same event rows (read back from the store, untimed) in the same batches, one
   transaction each, into a scratch table with the store's ``events`` columns, constraints
   and indexes as its migrations left them: on SQLite, the ``CREATE TABLE`` and ``CREATE
   INDEX`` statements read from the store's ``sqlite_master``, in a file of its own set up as
   the store sets up its connections (WAL, synchronous=NORMAL; foreign keys not enforced); on
   PostgreSQL, ``CREATE TABLE ... (LIKE events INCLUDING ALL)`` in the same database (no
   row-level security, no foreign key). The two sides alternate batch by batch. Ratio:
   lossgate/baseline throughput (1.0 is as fast as the baseline). On PostgreSQL, ``ANALYZE``
   runs (untimed) during the fill whenever the subject has grown by autovacuum's default
   analyze threshold (50 rows + 10 %), and after the first consolidation (it fills the search
   index, ``event_terms``): the figures are those of a server whose autovacuum keeps up,
   whether or not the server's own is on (``--no-analyze``: never; without statistics the
   fact writes of the fill slow down as the history grows);
2. the first consolidation (``Memory.consolidate``, default configuration): seconds, status
   and the artifact's ``manifest.path``;
3. incremental: ``--rounds`` rounds; in each, every size in turn (smallest first: the sizes
   see the same machine load) appends ``--tail`` new events the shape's way, as a pure tail
   append (``fill(..., changes=False)``: ``spread`` asserts topics instead of supersessions,
   ``bulk`` imports undated events and no fact, the other two go on as they began), and
   consolidates, timed. Median seconds, and the median of the per-round ratios to the
   smallest size; each attempt's status, path and timings printed;
4. a rebuild, once per size: ``ConsolidationConfig(incremental=False)`` (a hierarchy still
   reuses its stored parts whose inputs did not change), then
   ``ConsolidationConfig(incremental=False, reuse_parts=False)`` (every part built again);
5. recall p50 and p99: ``Memory.recall(query=q)`` for each kind of the shape's questions
   (``Shape.queries``): ``rare``, a word said in exactly three turns at every size
   (``bench.scale_data.rare_questions()``: the same answer at every size); ``names``, two
   counterparts' names (``bench.scale_data.questions()``: a few matches at 1,000 events, about
   a hundred at 100,000, so the answer grows with the history); ``common``, words in most events ("talked morning" in
   the turns, "refund budget" in the import); ``identifier``, a reference alone or with
   common words ("ORD-5", "ORD-10 talked morning"; "INV-1", "INV-2 refund budget"); then
   ``Memory.recall()`` with no query; ``--calls`` calls each (no budget, as the default; or
   ``--budget``), the sizes interleaved call by call (a few untimed calls per size first);
   the p50 and p99 ratios to the smallest size; and what the last call returned (tokens,
   events, the summary's length);
6. storage: after ``Admin.compact()`` (SQLite: FTS optimize, VACUUM, WAL truncated;
   PostgreSQL: VACUUM ANALYZE), the database's size (SQLite: the file and its -wal;
   PostgreSQL: ``pg_database_size``) less the size of an empty store set up the same way
   (migrated, predicates loaded, compacted), per event.

Acceptance (PASS/FAIL, per store and shape): incremental at the largest size <= 2x the
smallest; recall p99 of the rare questions at the largest size < 20 ms (SQLite) / < 30 ms
(PostgreSQL); for each kind of question but ``names`` (whose answer grows), recall p50 and p99 at the
largest size <= 2x the smallest (the check's value is the larger of the two ratios), and so for recall without a
query; every consolidation published. Exit status 0 whatever they say, unless ``--strict``.
The printed tables (one per store and shape) and ``--json PATH`` hold every figure, per
shape (``stores[i].shapes[name]``: its ``description``, ``sizes[size]`` and ``checks``).
The full run takes a few minutes per shape and store (the fills, first consolidations and
rebuilds at the two largest sizes dominate); ``--sizes`` and ``--shapes`` make it smaller.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, percentile, pg_url, ratios, skip_pg
from bench.scale_data import QUERY_KINDS, SHAPES, Shape
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.derived_records import Attempt, RecallResult
from lossgate.runtime.caches import forget_text

ROOT = Path(__file__).resolve().parents[1]
PREDICATES = ROOT / "examples" / "predicates.toml"
T, S = "bench", "scale"
STORES = ("sqlite", "postgresql")
RECALL_P99_MS = {"sqlite": 20.0, "postgresql": 30.0}
MAX_RATIO = 2.0
# Questions whose answer grows with the history (a name said once in 1,728 turns matches two
# events at 1,000 and about a hundred at 100,000, and the reply grows from 6 events to about
# 46): their cost is reported, not held to MAX_RATIO, which is for the same answer at every size.
ANSWER_GROWS = frozenset({"names"})
Row = tuple[Any, ...]


# -- the stores ------------------------------------------------------------------------------
class Baseline(Protocol):
    """The append's baseline: a scratch table shaped as the store's ``events``."""

    def rows_after(self, seq: int) -> list[Row]:
        """The store's event rows of the subject past ``seq``, in order (untimed)."""

    def insert(self, rows: list[Row]) -> float:
        """Insert ``rows`` in one transaction; the seconds it took."""

    def close(self) -> None: ...


class Backend(Protocol):
    name: str

    def database(self, stack: ExitStack, label: str) -> str:
        """The URL of a fresh database, removed when ``stack`` closes."""

    def baseline(self, url: str) -> Baseline: ...

    def settle(self, url: str) -> None:
        """Untimed, as the server's own maintenance would (PostgreSQL: ANALYZE)."""

    def size_bytes(self, url: str) -> int: ...


class SQLiteBaseline:
    def __init__(self, store_path: str, path: str) -> None:
        self.source = sqlite3.connect(store_path)
        ddl = [
            sql
            for (sql,) in self.source.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'events' AND type IN ('table', 'index') "
                "AND sql IS NOT NULL ORDER BY type = 'index', name"
            )
        ]
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")  # as lossgate's SQLite store opens its connections
        self.conn.execute("PRAGMA synchronous=NORMAL")
        for sql in ddl:
            self.conn.execute(sql)
        cols = len(self.source.execute("SELECT * FROM events LIMIT 0").description)
        self.insert_sql = f"INSERT INTO events VALUES ({','.join('?' * cols)})"

    def rows_after(self, seq: int) -> list[Row]:
        return self.source.execute(
            "SELECT * FROM events WHERE tenant_id = ? AND subject_id = ? AND seq > ? ORDER BY seq", (T, S, seq)
        ).fetchall()

    def insert(self, rows: list[Row]) -> float:
        t0 = time.perf_counter()
        self.conn.execute("BEGIN IMMEDIATE")  # as lossgate's write transactions begin
        self.conn.executemany(self.insert_sql, rows)
        self.conn.execute("COMMIT")
        return time.perf_counter() - t0

    def close(self) -> None:
        self.source.close()
        self.conn.close()


class SQLiteBackend:
    name = "sqlite"

    def __init__(self, directory: str) -> None:
        self.dir = Path(directory)

    def database(self, stack: ExitStack, label: str) -> str:
        stack.callback(self._remove, label)  # as PostgreSQL's scratch database is dropped
        return f"sqlite:///{self.dir / f'scale-{label}.db'}"

    def _remove(self, label: str) -> None:
        for name in (f"scale-{label}", f"scale-{label}-baseline"):  # the store, its baseline
            for suffix in (".db", ".db-wal", ".db-shm"):
                (self.dir / (name + suffix)).unlink(missing_ok=True)

    def baseline(self, url: str) -> Baseline:
        path = url.removeprefix("sqlite:///")
        return SQLiteBaseline(path, path.removesuffix(".db") + "-baseline.db")

    def settle(self, url: str) -> None:
        pass

    def size_bytes(self, url: str) -> int:
        path = Path(url.removeprefix("sqlite:///"))
        wal = path.with_name(path.name + "-wal")
        return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


class PostgresBaseline:
    TABLE = "bench_baseline_events"

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.types.string import TextLoader

        self.conn = psycopg.connect(url)
        self.conn.adapters.register_loader("json", TextLoader)  # the payload goes back as it came
        self.conn.execute(f"CREATE TABLE {self.TABLE} (LIKE events INCLUDING ALL)")
        cur = self.conn.execute("SELECT * FROM events LIMIT 0")
        self.insert_sql = f"INSERT INTO {self.TABLE} VALUES ({','.join(['%s'] * len(cur.description or ()))})"
        self.conn.commit()

    def rows_after(self, seq: int) -> list[Row]:
        rows = self.conn.execute(
            "SELECT * FROM events WHERE tenant_id = %s AND subject_id = %s AND seq > %s ORDER BY seq", (T, S, seq)
        ).fetchall()
        self.conn.commit()
        return rows

    def insert(self, rows: list[Row]) -> float:
        t0 = time.perf_counter()
        with self.conn.cursor() as cur:
            cur.executemany(self.insert_sql, rows)
        self.conn.commit()
        return time.perf_counter() - t0

    def close(self) -> None:
        self.conn.execute(f"DROP TABLE {self.TABLE}")  # not part of the database's size
        self.conn.commit()
        self.conn.close()


class PostgresBackend:
    name = "postgresql"

    def __init__(self, server: str, *, analyze: bool = True) -> None:
        self.server = server
        self.analyze = analyze

    def database(self, stack: ExitStack, label: str) -> str:
        from lossgate.testing.postgres import scratch_database

        return stack.enter_context(scratch_database(self.server))

    def baseline(self, url: str) -> Baseline:
        return PostgresBaseline(url)

    def settle(self, url: str) -> None:
        if not self.analyze:
            return
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")

    def autovacuum(self) -> str:
        import psycopg

        with psycopg.connect(self.server, autocommit=True) as conn:
            row = conn.execute("SHOW autovacuum").fetchone()
        return str(row[0]) if row else "?"

    def size_bytes(self, url: str) -> int:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0


# -- one subject per shape and size -------------------------------------------------------------
@dataclass
class Subject:
    tag: str  # "store, shape", for the progress lines
    shape: Shape
    size: int
    url: str
    memory: lossgate.Memory
    active: dict[str, str] = field(default_factory=dict)
    events: int = 0  # appended so far
    figures: dict[str, Any] = field(default_factory=dict)

    def append(self, stop: int, *, changes: bool = True) -> None:
        """Append the shape's events up to ``stop``, in its batches."""
        self.active = self.shape.fill(
            self.memory, T, S, self.events, stop, batch=self.shape.batch, active=self.active, changes=changes
        )
        self.events = stop


def say(msg: str) -> None:
    print(msg, flush=True)


def open_memory(stack: ExitStack, url: str) -> lossgate.Memory:
    memory = lossgate.open(url)
    stack.callback(memory.close)  # closed before its database is dropped (the stack unwinds in reverse)
    memory.admin.load_predicates(str(PREDICATES))
    return memory


def path_of(memory: lossgate.Memory, attempt: Attempt) -> str | None:
    if attempt.artifact_id is None:
        return None
    return memory.admin.artifact(T, S, attempt.artifact_id).manifest.path


def consolidate(sub: Subject, config: ConsolidationConfig | None = None) -> dict[str, Any]:
    """One timed consolidation, the caches of text emptied first (untimed)."""
    forget_text()
    t0 = time.perf_counter()
    attempt = sub.memory.consolidate(T, S, config=config)
    took = time.perf_counter() - t0
    return {
        "s": took,
        "status": attempt.status,
        "path": path_of(sub.memory, attempt),
        "timings": {k: round(v, 4) for k, v in attempt.timings.items()},
    }


def describe(c: dict[str, Any]) -> str:
    timings = " ".join(f"{k.removesuffix('_s')} {v * 1000:.0f}" for k, v in c["timings"].items())
    return f"{c['s']:8.3f} s  {c['status']} {c['path']}  (ms: {timings})"


def fill_timed(backend: Backend, sub: Subject) -> dict[str, Any]:
    """Fill the subject, alternating batch by batch with the baseline's insert of the same rows."""
    baseline = backend.baseline(sub.url)
    batch = sub.shape.batch
    ours = base = 0.0
    last_seq = analyzed = 0
    step = max(batch, sub.size // 10 // batch * batch)
    try:
        for lo in range(0, sub.size, batch):
            hi = min(sub.size, lo + batch)
            t0 = time.perf_counter()
            sub.append(hi)
            ours += time.perf_counter() - t0
            rows = baseline.rows_after(last_seq)
            assert len(rows) == hi - lo, (len(rows), hi - lo)
            last_seq = rows[-1][2]  # seq: the third column, as the migrations create the table
            base += baseline.insert(rows)
            if hi - analyzed >= 50 + analyzed // 10:  # autovacuum's default analyze threshold
                backend.settle(sub.url)
                analyzed = hi
            if hi % step == 0 or hi == sub.size:
                say(
                    f"  [{sub.tag}] {sub.size:>9,}: filled {hi:>9,} events  "
                    f"({hi / ours:,.0f} events/s; baseline {hi / base:,.0f} events/s)"
                )
    finally:
        baseline.close()
    return {
        "events_per_s": sub.size / ours,
        "baseline_events_per_s": sub.size / base,
        "ratio": base / ours,
        "s": ours,
        "baseline_s": base,
    }


def warm_up(backend: Backend, shapes: Sequence[Shape]) -> None:
    """Untimed: the process's first-use costs (imports, the tokenizer, a first connection, each
    shape's code paths), in one database, a tenant per shape."""
    with ExitStack() as stack:
        url = backend.database(stack, "warm-up")
        memory = open_memory(stack, url)
        for shape in shapes:
            tenant = f"warm-up-{shape.name}"
            shape.fill(memory, tenant, S, 0, 300, batch=shape.batch)
            memory.consolidate(tenant, S)
            for kind in QUERY_KINDS:
                memory.recall(tenant, S, query=shape.queries[kind][0])


def empty_bytes(backend: Backend) -> int:
    """The size of a store with nothing in it, set up as every measured one."""
    with ExitStack() as stack:
        url = backend.database(stack, "empty")
        memory = open_memory(stack, url)
        memory.admin.compact()
        return backend.size_bytes(url)


def recall_latencies(
    subjects: Sequence[Subject],
    calls: int,
    queries: Sequence[str] | None,
    budget: int | None,
) -> tuple[list[list[float]], list[dict[str, Any]]]:
    """``calls`` recalls per subject (cycling over ``queries``, or with no query), interleaved
    call by call: seconds per subject, and what the last call returned (what a recall reads
    and sends back grows with it)."""
    qs: Sequence[str | None] = queries if queries is not None else [None]
    for sub in subjects:  # untimed: connection and statement caches
        for warm in qs[-3:]:
            sub.memory.recall(T, S, query=warm, budget=budget)
    out: list[list[float]] = [[] for _ in subjects]
    last: list[RecallResult | None] = [None for _ in subjects]
    for i in range(calls):
        q = qs[i % len(qs)]
        for j, sub in enumerate(subjects):
            t0 = time.perf_counter()
            last[j] = sub.memory.recall(T, S, query=q, budget=budget)
            out[j].append(time.perf_counter() - t0)
    returned = [
        {
            "mode": r.mode,
            "tokens": r.tokens,
            "events": len(r.events),
            "facts": len(r.facts),
            "summary_chars": len(r.summary or ""),
        }
        for r in last
        if r is not None
    ]
    return out, returned


def latency(times: Sequence[float], base: Sequence[float], last: dict[str, Any]) -> dict[str, Any]:
    return {
        "p50_ms": percentile(times, 50) * 1e3,
        "p99_ms": percentile(times, 99) * 1e3,
        "p50_ratio": percentile(times, 50) / percentile(base, 50),
        "p99_ratio": percentile(times, 99) / percentile(base, 99),
        "last": last,
    }


def filled(backend: Backend, stack: ExitStack, shape: Shape, size: int) -> Subject:
    """Steps 1-2: a subject of ``size`` events of the shape, filled (timed against the
    baseline) and consolidated once."""
    url = backend.database(stack, f"{shape.name}-{size}")
    sub = Subject(tag=f"{backend.name}, {shape.name}", shape=shape, size=size, url=url, memory=open_memory(stack, url))
    sub.figures["append"] = fill_timed(backend, sub)
    first = sub.figures["first"] = consolidate(sub)
    say(f"  [{sub.tag}] {size:>9,}: first consolidation {describe(first)}")
    backend.settle(url)  # again: the first consolidation filled PostgreSQL's search index
    return sub


def incremental(subjects: Sequence[Subject], rounds: int, tail: int) -> None:
    """Step 3: ``rounds`` rounds of +``tail`` events and a consolidation, the sizes in turn
    in each round; the median, and the median of the per-round ratios to the smallest size."""
    say(f"  [{subjects[0].tag}] incremental: {rounds} rounds of +{tail} events, sizes interleaved")
    runs: list[list[dict[str, Any]]] = [[] for _ in subjects]
    for r in range(rounds):
        for sub, mine in zip(subjects, runs, strict=False):
            sub.append(sub.events + tail, changes=False)
            mine.append(consolidate(sub))
            say(f"  [{sub.tag}] round {r + 1} {sub.size:>9,}: {describe(mine[-1])}")
    base_times = [c["s"] for c in runs[0]]
    for sub, mine in zip(subjects, runs, strict=False):
        times = [c["s"] for c in mine]
        sub.figures["incremental"] = {
            "median_s": median(times),
            "ratio": median(ratios(times, base_times)),
            "runs": mine,
        }


def rebuilds(subjects: Sequence[Subject]) -> None:
    """Step 4: a rebuild reusing the parts whose inputs did not change, then one reusing none."""
    for sub in subjects:
        for key, config in (
            ("rebuild", ConsolidationConfig(incremental=False)),
            ("rebuild_all_parts", ConsolidationConfig(incremental=False, reuse_parts=False)),
        ):
            c = sub.figures[key] = consolidate(sub, config)
            say(f"  [{sub.tag}] {sub.size:>9,}: {key:<17} {describe(c)}")


def recalls(subjects: Sequence[Subject], calls: int, budget: int | None) -> None:
    """Step 5: recall latency per kind of question (``recall_query``), then with no query
    (``recall``), the sizes interleaved call by call."""
    shape = subjects[0].shape
    for sub in subjects:
        sub.figures["recall_query"] = {}
    for kind in (*QUERY_KINDS, None):
        lat, returned = recall_latencies(subjects, calls, shape.queries[kind] if kind else None, budget)
        for sub, times, last in zip(subjects, lat, returned, strict=False):
            figure = latency(times, lat[0], last)
            if kind:
                sub.figures["recall_query"][kind] = figure
            else:
                sub.figures["recall"] = figure
        say(f"  [{subjects[0].tag}] recall, {kind or 'no'} query: {calls} calls per size done")


def storage(backend: Backend, sub: Subject, empty: int) -> None:
    """Step 6: the database's size after ``compact``, less an empty store's, per event."""
    sub.memory.admin.compact()
    size_bytes = backend.size_bytes(sub.url)
    sub.figures["storage"] = {
        "bytes": size_bytes,
        "empty_bytes": empty,
        "events": sub.events,
        "bytes_per_event": (size_bytes - empty) / sub.events,
    }


def run_shape(
    backend: Backend,
    shape: Shape,
    sizes: Sequence[int],
    rounds: int,
    tail: int,
    calls: int,
    budget: int | None,
    empty: int,
) -> dict[str, Any]:
    """Every figure of one shape on one store; its databases are dropped on the way out."""
    say(f"\n--- {backend.name}, {shape.name}: {shape.description} ---")
    with ExitStack() as stack:
        subjects = [filled(backend, stack, shape, size) for size in sizes]
        incremental(subjects, rounds, tail)
        rebuilds(subjects)
        recalls(subjects, calls, budget)
        for sub in subjects:
            storage(backend, sub, empty)
    return {
        "description": shape.description,
        "sizes": {str(s.size): s.figures for s in subjects},
        "checks": checks(backend.name, subjects),
    }


def run_store(
    backend: Backend,
    shapes: Sequence[Shape],
    sizes: Sequence[int],
    rounds: int,
    tail: int,
    calls: int,
    budget: int | None,
) -> dict[str, Any]:
    say(f"\n=== {backend.name} ===")
    warm_up(backend, shapes)
    empty = empty_bytes(backend)
    return {
        "store": backend.name,
        "shapes": {s.name: run_shape(backend, s, sizes, rounds, tail, calls, budget, empty) for s in shapes},
    }


# -- the report ----------------------------------------------------------------------------------
def check(name: str, value: float, limit: float, *, below: bool = False) -> dict[str, Any]:
    """One acceptance check: ``value`` at most ``limit`` (strictly below it with ``below``)."""
    return {
        "name": name,
        "value": round(value, 3),
        "limit": limit,
        "passed": value < limit if below else value <= limit,
    }


def checks(store: str, subjects: Sequence[Subject]) -> list[dict[str, Any]]:
    small, large = subjects[0], subjects[-1]
    vs = f"at {large.size:,} <= {MAX_RATIO:g}x {small.size:,}"
    limit_ms = RECALL_P99_MS[store]
    queried = large.figures["recall_query"]
    attempts = [
        c
        for s in subjects
        for c in (
            s.figures["first"],
            *s.figures["incremental"]["runs"],
            s.figures["rebuild"],
            s.figures["rebuild_all_parts"],
        )
    ]
    unpublished = sum(c["status"] != "published" for c in attempts)

    def worse(f: dict[str, Any]) -> float:
        return float(max(f["p50_ratio"], f["p99_ratio"]))

    return [
        check(f"incremental +tail {vs}", large.figures["incremental"]["ratio"], MAX_RATIO),
        check(
            f"rare query recall p99 at {large.size:,} < {limit_ms:g} ms",
            queried["rare"]["p99_ms"],
            limit_ms,
            below=True,
        ),
        *(
            check(f"{kind} query recall p50 and p99 {vs}", worse(queried[kind]), MAX_RATIO)
            for kind in QUERY_KINDS
            if kind not in ANSWER_GROWS
        ),
        check(f"recall without a query p50 and p99 {vs}", worse(large.figures["recall"]), MAX_RATIO),
        check(f"every consolidation published ({len(attempts)})", unpublished, 0),
    ]


def table(store: str, shape: str, result: dict[str, Any], tail: int, rounds: int, calls: int) -> None:
    from rich.console import Console
    from rich.table import Table

    sizes = result["sizes"]
    base = next(iter(sizes))
    tab = Table(
        title=f"{store}, {shape}: one subject per size (its own database)",
        title_justify="left",
        caption=f"{shape}: {result['description']}",
        caption_justify="left",
    )
    tab.add_column("")
    for s in sizes:
        tab.add_column(f"{int(s):,} events", justify="right")

    def row(label: str, cell: Callable[[dict[str, Any]], str]) -> None:
        tab.add_row(label, *(cell(f) for f in sizes.values()))

    def recall_rows(label: str, kind: str | None) -> None:
        def get(f: dict[str, Any]) -> dict[str, Any]:
            figure: dict[str, Any] = f["recall_query"][kind] if kind else f["recall"]
            return figure

        row(f"{label} p50 / p99 (ms, {calls} calls)", lambda f: f"{get(f)['p50_ms']:.2f} / {get(f)['p99_ms']:.2f}")
        row(f"  p50 / p99 ratio to {int(base):,}", lambda f: f"{get(f)['p50_ratio']:.2f} / {get(f)['p99_ratio']:.2f}")
        row(
            "  last: tokens, events, summary chars",
            lambda f: f"{get(f)['last']['tokens']:,}, {get(f)['last']['events']}, {get(f)['last']['summary_chars']:,}",
        )

    row("append, lossgate (events/s)", lambda f: f"{f['append']['events_per_s']:,.0f}")
    row("append, executemany baseline (events/s)", lambda f: f"{f['append']['baseline_events_per_s']:,.0f}")
    row("append ratio lossgate/baseline", lambda f: f"{f['append']['ratio']:.2f}")
    row("first consolidation (s)", lambda f: f"{f['first']['s']:.3f}")
    row("  its status, path", lambda f: f"{f['first']['status']}, {f['first']['path']}")
    row(f"incremental +{tail}, median of {rounds} (s)", lambda f: f"{f['incremental']['median_s']:.3f}")
    row(f"  ratio to {int(base):,} (median per round)", lambda f: f"{f['incremental']['ratio']:.2f}")
    row("  paths", lambda f: ", ".join(sorted({str(c["path"]) for c in f["incremental"]["runs"]})))
    row("rebuild, incremental=False (s)", lambda f: f"{f['rebuild']['s']:.3f}")
    row("rebuild, + reuse_parts=False (s)", lambda f: f"{f['rebuild_all_parts']['s']:.3f}")
    for kind in QUERY_KINDS:
        recall_rows(f"query recall, {kind}", kind)
    recall_rows("recall, no query", None)
    row("database size after compact (MB)", lambda f: f"{f['storage']['bytes'] / 1e6:.1f}")
    row("  bytes per event (less an empty store)", lambda f: f"{f['storage']['bytes_per_event']:,.0f}")
    console = Console() if sys.stdout.isatty() else Console(width=140)
    console.print(tab)
    for c in result["checks"]:
        console.print(
            f"  {'PASS' if c['passed'] else 'FAIL'}  {store}, {shape}: {c['name']}: {c['value']} (limit {c['limit']})",
            highlight=False,
        )


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(s.replace("_", "")) for s in text.split(",") if s.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes comma-separated integers, not {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("--sizes needs at least one size, each at least 1")
    return sizes


def parse_shapes(text: str) -> list[Shape]:
    names = list(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    unknown = [n for n in names if n not in SHAPES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"--shapes takes some of {','.join(SHAPES)}, not {text!r}")
    return [SHAPES[n] for n in names]


@contextmanager
def _backends(args: argparse.Namespace) -> Iterator[list[Backend]]:
    with tempfile.TemporaryDirectory(prefix="lossgate-scale-") as tmp:
        out: list[Backend] = []
        if args.only in (None, "sqlite"):
            out.append(SQLiteBackend(tmp))
        if args.only in (None, "postgresql"):
            server = pg_url(args.pg)
            if server:
                pg = PostgresBackend(server, analyze=not args.no_analyze)
                say(
                    f"[postgresql] the server's autovacuum: {pg.autovacuum()}; this benchmark "
                    + (
                        "never runs ANALYZE (--no-analyze)"
                        if args.no_analyze
                        else "runs ANALYZE (untimed) as autovacuum would"
                    )
                )
                out.append(pg)
            else:
                skip_pg("scale")
        yield out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--sizes",
        type=parse_sizes,
        default=[1000, 50_000, 100_000],
        help="events per subject, comma-separated (default 1000,50000,100000)",
    )
    ap.add_argument(
        "--shapes",
        type=parse_shapes,
        default=list(SHAPES.values()),
        help=f"shapes of history, comma-separated (default {','.join(SHAPES)})",
    )
    ap.add_argument("--rounds", type=int, default=5, help="incremental rounds (default 5)")
    ap.add_argument("--tail", type=int, default=100, help="events appended before each incremental consolidation")
    ap.add_argument(
        "--calls", type=int, default=200, help="recall calls per size, for each kind of question and without a query"
    )
    ap.add_argument(
        "--budget", type=int, default=None, help="recall's token budget (default: none, as Memory.recall's default)"
    )
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    ap.add_argument(
        "--no-analyze", action="store_true", help="PostgreSQL: never run ANALYZE (as a server with autovacuum off)"
    )
    ap.add_argument("--only", choices=STORES, default=None, help="run one store only")
    ap.add_argument("--json", type=Path, default=None, help="write every figure to this file")
    ap.add_argument("--strict", action="store_true", help="exit 1 when an acceptance check fails")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.tail < 1 or args.calls < 1 or (args.budget is not None and args.budget < 1):
        ap.error("--rounds, --tail, --calls and --budget must be at least 1")
    started = time.time()
    shapes = [s.name for s in args.shapes]
    say(
        f"scale: shapes {', '.join(shapes)}; sizes {', '.join(f'{s:,}' for s in args.sizes)}; {args.rounds} "
        f"incremental rounds of +{args.tail}; {args.calls} recall calls; load average {os.getloadavg()[0]:.2f}"
    )
    results = []
    with _backends(args) as backends:
        for backend in backends:
            results.append(run_store(backend, args.shapes, args.sizes, args.rounds, args.tail, args.calls, args.budget))
    print()
    for result in results:
        for name, figures in result["shapes"].items():
            table(result["store"], name, figures, args.tail, args.rounds, args.calls)
            print()
    report = {
        "shapes": shapes,
        "sizes": args.sizes,
        "rounds": args.rounds,
        "tail": args.tail,
        "calls": args.calls,
        "budget": args.budget,
        "pg_analyze": not args.no_analyze,
        "seconds": round(time.time() - started, 1),
        "load_average": os.getloadavg(),
        "stores": results,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        say(f"wrote {args.json}")
    failed = [c for r in results for s in r["shapes"].values() for c in s["checks"] if not c["passed"]]
    say(f"acceptance: {'PASS' if not failed else f'{len(failed)} FAIL'} ({report['seconds']:.0f} s in all)")
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
