"""Load test of the memory service: 32 concurrent clients recall and append over real HTTP
against ``lossgate serve`` (a subprocess: real uvicorn, ``--workers N``), on SQLite and on
PostgreSQL, against a same-run baseline: the same calls made in-process by as many threads.

    python bench/bench_service.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]
                                  [--clients 32] [--requests 40] [--rounds 3] [--workers 1]
                                  [--only sqlite|postgres] [--json]

Each client sends a bounded number of requests (``--requests`` per client per round): about
70 % recall with a query (``POST /recall``), 30 % append of a small batch of events
(``POST /append``, ``--batch`` events, an ``Idempotency-Key`` and no event ids, so the
service makes the ids and only the key keeps a retry from appending twice). A share of the
appends (``--retry-share``) is sent a second time with the same key, as a client does after a
timeout: the answer must be the first one, replayed. Each client works on its own few subjects
(``--own``) and on a few subjects every client shares (``--shared``), so appends race on the
same subject's clock.

The baseline (``direct``) makes the same calls, with the same bodies and keys, through
:class:`lossgate.service.operations.TenantMemory` (the Python API the routes call: a
:class:`lossgate.Memory` with the tenant bound) from as many threads of this process, with
no HTTP, JSON, or key look-up. Sides alternate round by round (http, direct, http, ...),
each round on fresh tenants, so both see the same subject sizes and the same machine load;
the ratio is the median of the per-round throughput ratios.

Afterwards every subject's events are read back (the HTTP side's through ``GET /events``,
the baseline's through :meth:`Memory.events`): each appended text must be stored exactly
once, with seqs 1..n. Any error (a non-200 answer, a transport error, a replay that differs)
or count mismatch makes the exit code 1.

PostgreSQL runs when ``--pg`` or ``LOSSGATE_BENCH_PG_URL`` names a server; the benchmark
creates and drops its own database there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, percentile, pg_url, ratios, skip_pg
from lossgate.testing.service import free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
PREDICATES = ROOT / "examples" / "predicates.toml"
QUERIES = [
    "invoice",
    "refund for INV-9012",
    "customer cust_17 seats",
    "what did the agent promise",
    "timezone",
    "peanuts allergy",
    "late payment",
    "upgrade the plan",
]
OPS = ("recall", "append", "append_retry")


@dataclass(frozen=True)
class Plan:
    """What one round sends: ``clients`` clients, ``requests`` requests each."""

    clients: int = 32
    requests: int = 40
    recall_share: float = 0.7
    retry_share: float = 0.1
    batch: int = 3
    own: int = 2
    shared: int = 4
    seed: int = 1


@dataclass(frozen=True)
class Call:
    op: str  # "recall" or "append"
    subject: str
    query: str = ""
    key: str = ""
    texts: tuple[str, ...] = ()
    retry: bool = False


def schedule(plan: Plan, tag: str) -> list[list[Call]]:
    """Each client's calls (deterministic for the plan's seed): texts are unique within ``tag``."""
    out = []
    for c in range(plan.clients):
        rng = random.Random(plan.seed * 1_000_003 + c)
        own = [f"c{c}-s{k}" for k in range(plan.own)]
        shared = [f"shared-{k}" for k in range(plan.shared)]
        calls = []
        for i in range(plan.requests):
            subject = rng.choice(own) if rng.random() < 0.5 else rng.choice(shared)
            if rng.random() < plan.recall_share:
                calls.append(Call("recall", subject, query=rng.choice(QUERIES)))
            else:
                texts = tuple(
                    f"{tag} c{c} r{i} e{j}: customer cust_{rng.randrange(977)} asked about invoice "
                    f"INV-{9000 + rng.randrange(500)}"
                    for j in range(plan.batch)
                )
                calls.append(
                    Call("append", subject, key=f"{tag}-c{c}-r{i}", texts=texts, retry=rng.random() < plan.retry_share)
                )
        out.append(calls)
    return out


def expected(calls: list[list[Call]]) -> dict[str, Counter[str]]:
    """Each subject's texts, each appended once (a retry appends nothing)."""
    out: dict[str, Counter[str]] = {}
    for client in calls:
        for call in client:
            if call.op == "append":
                out.setdefault(call.subject, Counter()).update(call.texts)
    return out


def _body(call: Call) -> dict[str, Any]:
    if call.op == "recall":
        return {"query": call.query, "k": 10, "budget": 2000}
    return {"events": [{"text": t} for t in call.texts]}


@dataclass
class SideResult:
    elapsed: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPS})
    errors: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())


def _run_clients(calls: list[list[Call]], one: Callable[[int], Callable[[Call], tuple[Any, bool]]]) -> SideResult:
    """Run every client's calls on a thread of its own, from a common start; ``one(c)`` makes
    client ``c``'s caller (returning the answer and whether it was replayed, raising on an error)."""
    res = SideResult()
    lock = threading.Lock()
    barrier = threading.Barrier(len(calls) + 1)
    ends: list[float] = []

    def client(c: int) -> None:
        lat: dict[str, list[float]] = {op: [] for op in OPS}
        errs: list[str] = []
        try:
            call_one = one(c)
        except BaseException as exc:  # noqa: BLE001 - reported, and the barrier must not hang
            barrier.abort()
            errs.append(f"client {c}: setup: {exc!r}")
            with lock:
                res.errors.extend(errs)
            return
        try:
            barrier.wait()
            for call in calls[c]:
                sends = [False, True] if call.retry else [False]
                first = None
                for again in sends:
                    op = "append_retry" if again else call.op
                    t0 = time.perf_counter()
                    try:
                        answer, replayed = call_one(call)
                    except Exception as exc:  # noqa: BLE001 - every failure is an error to count
                        errs.append(f"client {c} {op} {call.subject}: {exc}"[:400])
                        continue
                    lat[op].append(time.perf_counter() - t0)
                    if call.op == "append":
                        if again:
                            if not replayed or answer != first:
                                errs.append(
                                    f"client {c} retry of {call.key}: replayed={replayed}, "
                                    f"same answer={answer == first}"
                                )
                        else:
                            first = answer
                            if replayed or len(answer["appended"]) != len(call.texts) or answer["duplicates"]:
                                errs.append(
                                    f"client {c} append {call.key}: replayed={replayed}, "
                                    f"{len(answer['appended'])} appended, duplicates {answer['duplicates']}"
                                )
        finally:
            end = time.perf_counter()
            with lock:
                ends.append(end)
                for op in OPS:
                    res.latencies[op].extend(lat[op])
                res.errors.extend(errs)

    threads = [threading.Thread(target=client, args=(c,), name=f"load-client-{c}") for c in range(len(calls))]
    for t in threads:
        t.start()
    try:
        barrier.wait(timeout=120)
    except threading.BrokenBarrierError:
        pass
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    res.elapsed = (max(ends) if ends else time.perf_counter()) - t0
    return res


def run_http(url: str, secret: str, calls: list[list[Call]]) -> SideResult:
    """The calls over HTTP, one ``httpx.Client`` (keep-alive) per client thread."""
    import httpx

    clients: list[httpx.Client] = []

    def one(c: int) -> Callable[[Call], tuple[Any, bool]]:
        http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=120)
        clients.append(http)

        def call_one(call: Call) -> tuple[Any, bool]:
            headers = {"Idempotency-Key": call.key} if call.op == "append" else {}
            r = http.post(f"/v1/subjects/{call.subject}/{call.op}", json=_body(call), headers=headers)
            if r.status_code != 200:
                raise RuntimeError(f"HTTP {r.status_code}: {r.text[:300]}")
            return r.json(), r.headers.get("Idempotent-Replayed") == "true"

        return call_one

    try:
        return _run_clients(calls, one)
    finally:
        for http in clients:
            http.close()


def run_direct(memory: lossgate.Memory, tenant: str, calls: list[list[Call]]) -> SideResult:
    """The same calls in-process: what the routes call (``TenantMemory``), from as many threads."""
    from lossgate.service.models import AppendIn, RecallIn
    from lossgate.service.operations import TenantMemory

    tm = TenantMemory(memory, tenant)

    def one(c: int) -> Callable[[Call], tuple[Any, bool]]:
        def call_one(call: Call) -> tuple[Any, bool]:
            if call.op == "recall":
                return tm.recall(call.subject, RecallIn.model_validate(_body(call))).model_dump(mode="json"), False
            answer = tm.append(call.subject, AppendIn.model_validate(_body(call)), idempotency_key=call.key)
            return answer.value.model_dump(mode="json"), answer.replayed

        return call_one

    return _run_clients(calls, one)


def check_counts(want: dict[str, Counter[str]], read: Callable[[str], list[tuple[int, str, str]]]) -> list[str]:
    """Compare each subject's stored events (``read(subject)``: (seq, event id, text)) with
    the texts appended: each exactly once, seqs 1..n, ids unique. Returns the problems."""
    problems = []
    for subject, texts in sorted(want.items()):
        rows = read(subject)
        got = Counter(text for _, _, text in rows)
        if got != texts:
            lost = sum((texts - got).values())
            extra = sum((got - texts).values())
            problems.append(
                f"{subject}: {len(rows)} events stored, {sum(texts.values())} appended "
                f"({lost} lost, {extra} duplicated or unexpected)"
            )
        if sorted(seq for seq, _, _ in rows) != list(range(1, len(rows) + 1)):
            problems.append(f"{subject}: seqs are not 1..{len(rows)}")
        if len({eid for _, eid, _ in rows}) != len(rows):
            problems.append(f"{subject}: an event id is stored twice")
    return problems


def read_http(url: str, secret: str) -> Callable[[str], list[tuple[int, str, str]]]:
    """A subject's events through ``GET /events``, page by page."""
    import httpx

    def read(subject: str) -> list[tuple[int, str, str]]:
        rows: list[tuple[int, str, str]] = []
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http:
            while True:
                r = http.get(
                    f"/v1/subjects/{subject}/events", params={"after_seq": rows[-1][0] if rows else 0, "limit": 1000}
                )
                r.raise_for_status()
                page = r.json()
                rows.extend((e["seq"], e["event_id"], e["text"]) for e in page)
                if len(page) < 1000:
                    return rows

    return read


def read_memory(memory: lossgate.Memory, tenant: str) -> Callable[[str], list[tuple[int, str, str]]]:
    def read(subject: str) -> list[tuple[int, str, str]]:
        return [(e.seq, e.event_id, e.text or "") for e in memory.events(tenant, subject)]

    return read


# -- the server ------------------------------------------------------------------------------


class Server:
    """``lossgate --db URL serve --port P --workers N`` in a process group of its own; stopped
    (SIGTERM, then SIGKILL of the group) by :meth:`stop`, also when it never came up."""

    def __init__(self, db_url: str, *, workers: int = 1, log: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log, "wb") if log is not None else subprocess.DEVNULL
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        env.pop("LOSSGATE_EMBEDDER", None)  # lexical recall on both sides
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lossgate",
                "--db",
                db_url,
                "serve",
                "--port",
                str(self.port),
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_up(self, timeout: float = 60) -> None:
        wait_healthy(self.url, self.proc, timeout=timeout)

    def stop(self) -> None:
        stop_process(self.proc)
        if self._log is not subprocess.DEVNULL:
            self._log.close()

    def __enter__(self) -> Server:
        try:
            self.wait_up()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- one store -------------------------------------------------------------------------------


def _summary(sides: dict[str, list[SideResult]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side, rounds in sides.items():
        lat = {op: [x for r in rounds for x in r.latencies[op]] for op in OPS}
        out[side] = {
            "rps": median([r.requests / r.elapsed for r in rounds]),
            "rps_runs": [round(r.requests / r.elapsed, 1) for r in rounds],
            "requests": sum(r.requests for r in rounds),
            "errors": sum(len(r.errors) for r in rounds),
            **{
                op: {"n": len(v), "p50_ms": median(v) * 1e3, "p99_ms": percentile(v, 99) * 1e3}
                for op, v in lat.items()
                if v
            },
        }
    rs = ratios([r.requests / r.elapsed for r in sides["http"]], [r.requests / r.elapsed for r in sides["direct"]])
    out["ratio"] = median(rs)
    out["ratio_runs"] = [round(x, 2) for x in rs]
    return out


def run_store(name: str, db_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Both sides on one database, ``args.rounds`` rounds interleaved; then the counts."""
    plan = Plan(
        clients=args.clients,
        requests=args.requests,
        recall_share=args.recall_share,
        retry_share=args.retry_share,
        batch=args.batch,
        seed=args.seed,
    )
    boot = lossgate.open(db_url)
    boot.admin.load_predicates(PREDICATES)
    boot.close()
    print(
        f"[{name}] {plan.clients} clients x {plan.requests} requests per round, {args.rounds} rounds, "
        f"lossgate serve --workers {args.workers}",
        flush=True,
    )
    sides: dict[str, list[SideResult]] = {"http": [], "direct": []}
    checks: list[tuple[str, dict[str, Counter[str]], Callable[[str], list[tuple[int, str, str]]]]] = []
    errors: list[str] = []
    memory = lossgate.open(db_url, migrate=False)
    with tempfile.NamedTemporaryFile(prefix="lossgate-serve-", suffix=".log", delete=False) as f:
        log = Path(f.name)
    server = Server(db_url, workers=args.workers, log=log)
    try:
        with server:
            for r in range(-1 if args.warmup else 0, args.rounds):  # round -1: warm-up, not counted
                for side in ("http", "direct") if r % 2 == 0 else ("direct", "http"):
                    tenant = f"{side}-{r}" if r >= 0 else f"warm-{side}"
                    calls = schedule(plan, tenant)
                    if side == "http":
                        _, secret = memory.admin.create_api_key(tenant, scopes=["read", "write"], name="load test")
                        res = run_http(server.url, secret, calls)
                        read = read_http(server.url, secret)
                    else:
                        res = run_direct(memory, tenant, calls)
                        read = read_memory(memory, tenant)
                    errors.extend(f"{side} round {r}: {e}" for e in res.errors)
                    checks.append((f"{side} round {r}", expected(calls), read))
                    if r >= 0:
                        sides[side].append(res)
                    print(
                        f"  round {r:2d} {side:6s} {res.requests:5d} requests in {res.elapsed:6.2f} s "
                        f"= {res.requests / res.elapsed:7.1f}/s, {len(res.errors)} errors",
                        flush=True,
                    )
            problems = [f"{what}: {p}" for what, want, read in checks for p in check_counts(want, read)]
    finally:
        server.stop()
        memory.close()
    if errors or problems:
        tail = log.read_text(errors="replace")[-3000:]
        if tail:
            print(f"  server log (tail):\n{tail}", flush=True)
    log.unlink(missing_ok=True)
    out = _summary(sides)
    out.update(
        errors=errors,
        count_problems=problems,
        workers=args.workers,
        clients=plan.clients,
        requests_per_client=plan.requests,
        rounds=args.rounds,
        events_checked=sum(sum(c.values()) for _, w, _ in checks for c in w.values()),
    )
    for side in ("http", "direct"):
        s = out[side]
        ops = "   ".join(
            f"{op} p50 {s[op]['p50_ms']:.1f} ms p99 {s[op]['p99_ms']:.1f} ms (n={s[op]['n']})" for op in OPS if op in s
        )
        print(
            f"  {side:6s} {s['rps']:7.1f} requests/s (rounds {', '.join(map(str, s['rps_runs']))})   {ops}", flush=True
        )
    print(
        f"  ratio http/direct throughput {out['ratio']:.2f} (rounds {', '.join(map(str, out['ratio_runs']))})",
        flush=True,
    )
    print(
        f"  counts: {out['events_checked']} appended events read back, {len(problems)} problems; {len(errors)} errors",
        flush=True,
    )
    for line in (errors + problems)[:20]:
        print(f"  ! {line}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=40, help="requests per client per round (retries extra)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each running both sides once")
    ap.add_argument("--workers", type=int, default=1, help="lossgate serve --workers")
    ap.add_argument("--batch", type=int, default=3, help="events per append")
    ap.add_argument("--recall-share", type=float, default=0.7)
    ap.add_argument("--retry-share", type=float, default=0.1, help="share of appends sent twice with one key")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the uncounted warm-up round")
    ap.add_argument("--only", choices=["sqlite", "postgres"], help="run one store only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.pg = pg_url(args.pg)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed benchmark still stops its server
    results: dict[str, Any] = {}
    if args.only != "postgres":
        with tempfile.TemporaryDirectory(prefix="lossgate-load-") as d:
            results["sqlite"] = run_store("sqlite", f"sqlite:///{d}/service.db", args)
    if args.only == "sqlite":
        pass
    elif args.pg:
        from lossgate.testing.postgres import create_database, drop_database

        url = create_database(args.pg, prefix="lossgate_bench")
        try:
            results["postgres"] = run_store("postgres", url, args)
        finally:
            drop_database(url)
    else:
        skip_pg("the service load test")
    print("cores:", os.cpu_count(), "- the clients, the server and the baseline share them", flush=True)
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    bad = [n for n, r in results.items() if r["errors"] or r["count_problems"]]
    if bad:
        print(f"FAILED: errors or count mismatches on {', '.join(bad)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
