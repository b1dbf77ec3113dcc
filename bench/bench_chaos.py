"""A short chaos run against PostgreSQL: ``lossgate serve`` and two ``lossgate worker``
processes under load, killed with SIGKILL and cut off from the database on a bounded
schedule; afterwards, every acknowledged append must be stored exactly once and every
subject must publish.

    python bench/bench_chaos.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]
                                [--seconds 80] [--json]

Everything runs on loopback and stops by itself (the default run takes about 90 s:
``--seconds`` of chaos, then the drain, bounded by ``--drain-timeout``). The script creates
its own database on the server ``--pg`` (default ``$LOSSGATE_BENCH_PG_URL``) and drops it
at the end, as ``bench_service.py`` does.

**The processes.** One ``lossgate serve`` (real uvicorn, one process) and two
``lossgate worker --concurrency 1`` processes, each a subprocess in a process group of its
own, all connecting to PostgreSQL as the URL's login (a superuser on a development server
may act as both ``lossgate_app`` and ``lossgate_worker``: docs/roles.md). The workers run
with ``--lease 6`` (a killed worker's job is claimed again 6 s later, not 30) and
``--backoff 1`` (a failed attempt is retried a second later, not 30): both keep the run
short; nothing else differs from a deployment.

**The load.** ``--clients`` threads append over real HTTP (``POST /v1/subjects/{s}/append``,
keep-alive) to ``--tenants`` x ``--subjects`` subjects with the predicate registry of
``examples/predicates.toml`` loaded: 1-3 events per request, each with its own event id,
and in three requests out of ten a fact (``chat.topic`` or ``account.scope``, both of
cardinality ``many``, so they never conflict) citing one of the request's events. Every
request carries an ``Idempotency-Key``; on a transport error or a 5xx answer the client
sends the same request again with the same key (backing off 50 ms, doubling up to 0.5 s),
as a real client does, until it gets an answer or the load's deadline passes. An append
that got a 2xx answer is *acknowledged*. Every 20th request of a client also queues a
consolidation of its subject (``POST /consolidate``, one try). A probe sends
``GET /healthz`` every 0.2 s, each on a thread of its own, so that a probe sent after the
database came back is not held up behind those still waiting (``--serial-probe``: one at a
time, so that nothing but the waiting requests reaches the server while the clients wait).

**The chaos**, in turn, spaced evenly over ``--seconds``: ``--server-kills`` times
``kill -9`` of the server's process group, then a restart on the same port (the next
action waits until ``/healthz`` answers); ``--worker-kills`` times ``kill -9`` of one
worker's process group (the two alternately), then a restart; ``--outages`` database
outages of ``--outage-seconds`` each. The outage is a cut on the network path, not a
stopped server: every lossgate process reaches PostgreSQL through a TCP proxy on a
loopback port (:class:`lossgate.testing.faults.TcpProxy`), and "stopping the database"
closes the proxy's listener (new connections are refused, as by a stopped server) and cuts
every connection it carries (both ends see it closed, as when the server exits); starting
it again listens on the same port. This machine's PostgreSQL serves other people's tests
at the same time, so it is never stopped; what lossgate sees is what it would see of a
server that went down and came back, except that a restarted server would also have lost
its in-flight transactions (here PostgreSQL rolls back whatever a cut connection left
open, which comes to the same). The set-up and the final checks reach PostgreSQL
directly. A process that exits without being killed is counted, its log tail printed,
and restarted.

**Afterwards** the load stops (each client finishes its current request), a consolidation
is requested for every subject over HTTP, and the workers drain until each subject's alias
is fresh (its artifact published at the clock's ``input_epoch``) and covers the subject's
whole history (``covers_through == high_water``), at most ``--drain-timeout`` seconds. Then,
read from the database directly:

* every acknowledged event and fact is stored exactly once, with the content sent; each
  append is all or nothing; the seqs of each subject's events and facts are 1..high_water
  without a gap; each acknowledged answer names the seqs that were stored;
* every subject published (its latest attempt ``published``, its alias fresh and covering
  everything; a subject that did not says why, from its attempts);
* the figures: kills of each kind, outages, what the requests sent during an outage got
  (503 with its code, transport errors, time to answer), the time from each reopening to
  the first acknowledged append, the first healthy ``/healthz`` and the first consolidation
  attempt finished, the server's restart time, and the processes that died on their own.

The exit code is 1 if an acknowledged append was lost (or stored twice, or an answer named
seqs that were not stored) or a subject did not publish. ``--json`` prints the figures as
JSON at the end; ``--logs DIR`` keeps the processes' logs there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import median, percentile, pg_url, skip_pg
from lossgate.testing.faults import TcpProxy
from lossgate.testing.service import free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
PREDICATES = ROOT / "examples" / "predicates.toml"
REQUEST_TIMEOUT = 15.0  # a client's read timeout: a request that takes longer is a transport error
# Environment a lossgate process must not inherit here: the run is deterministic and local.
_DROP_ENV = (
    "LOSSGATE_DB",
    "LOSSGATE_EMBEDDER",
    "LOSSGATE_EMBEDDER_MODEL",
    "LOSSGATE_JUDGE_URL",
    "LOSSGATE_JUDGE_MODEL",
    "LOSSGATE_LLM_URL",
    "LOSSGATE_LLM_MODEL",
    "LOSSGATE_LLM_API_KEY",
)


def now() -> float:
    return time.time()


# -- what the clients saw ----------------------------------------------------------------------


@dataclass
class Try:
    """One HTTP request: when it was sent and answered, and what came back."""

    op: str  # "append", "consolidate" or "healthz"
    start: float
    end: float
    status: int | None  # None: a transport error
    outcome: str  # "200", "503 store_unavailable", "ConnectError", ...


@dataclass
class Append:
    """One append as the client meant it (one Idempotency-Key), and how it ended."""

    key: str
    tenant: str
    subject: str
    events: dict[str, str]  # event id -> text
    facts: dict[str, tuple[str, str]]  # fact id -> (predicate, value)
    first_sent: float = 0.0
    tries: int = 0
    acked_at: float | None = None
    answer: dict[str, Any] | None = None
    replayed: bool = False
    refused: str | None = None  # a 4xx answer (not retried)


@dataclass
class Record:
    tries: list[Try] = field(default_factory=list)
    appends: list[Append] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_try(self, t: Try) -> None:
        with self.lock:
            self.tries.append(t)


def _outcome(exc_or_response: Any) -> tuple[int | None, str]:
    import httpx

    if isinstance(exc_or_response, httpx.Response):
        r = exc_or_response
        code = ""
        if r.status_code >= 400:
            try:
                code = str(r.json().get("code", ""))
            except ValueError:
                code = "(not JSON)"
        return r.status_code, f"{r.status_code} {code}".strip()
    return None, type(exc_or_response).__name__


def _body(
    rng: random.Random, tag: str, c: int, n: int
) -> tuple[dict[str, Any], dict[str, str], dict[str, tuple[str, str]]]:
    events = {
        f"{tag}-c{c}-n{n}-e{j}": (
            f"c{c} n{n} e{j}: customer cust_{rng.randrange(977)} asked about invoice "
            f"INV-{9000 + rng.randrange(500)} for {rng.randrange(2, 60)} seats"
        )
        for j in range(rng.randint(1, 3))
    }
    facts: dict[str, tuple[str, str]] = {}
    body: dict[str, Any] = {"events": [{"event_id": i, "text": t} for i, t in events.items()]}
    if rng.random() < 0.3:
        predicate = rng.choice(["chat.topic", "account.scope"])
        value = f"topic {c}-{n}" if predicate == "chat.topic" else f"project-{c}-{n}"
        fid = f"{tag}-c{c}-n{n}-f"
        facts[fid] = (predicate, value)
        body["facts"] = [
            {"fact_id": fid, "predicate": predicate, "value": value, "source_event_ids": [rng.choice(list(events))]}
        ]
    return body, events, facts


def client_loop(
    c: int,
    url: str,
    secrets: dict[str, str],
    subjects: list[tuple[str, str]],
    tag: str,
    stop: threading.Event,
    deadline: float,
    rec: Record,
    pause: float,
    seed: int,
) -> None:
    """Append until ``stop``; each append is retried (same key) until it is answered or ``deadline``."""
    import httpx

    rng = random.Random(seed * 7919 + c)
    http = httpx.Client(base_url=url, timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=5.0))
    n = 0
    try:
        while not stop.is_set():
            tenant, subject = rng.choice(subjects)
            body, events, facts = _body(rng, tag, c, n)
            app = Append(key=f"{tag}-c{c}-n{n}", tenant=tenant, subject=subject, events=events, facts=facts)
            with rec.lock:
                rec.appends.append(app)
            headers = {"Authorization": f"Bearer {secrets[tenant]}", "Idempotency-Key": app.key}
            backoff = 0.05
            app.first_sent = now()
            while True:
                app.tries += 1
                t0 = now()
                try:
                    r: Any = http.post(f"/v1/subjects/{subject}/append", json=body, headers=headers)
                except httpx.TransportError as exc:
                    r = exc
                status, outcome = _outcome(r)
                t1 = now()
                rec.add_try(Try("append", t0, t1, status, outcome))
                if status is not None and 200 <= status < 300:
                    app.acked_at, app.answer = t1, r.json()
                    app.replayed = r.headers.get("Idempotent-Replayed") == "true"
                    break
                if status is not None and status < 500:
                    app.refused = f"{outcome}: {r.text[:300]}"
                    break
                if now() > deadline:
                    break  # not acknowledged: its events may or may not be stored (checked: all or nothing)
                time.sleep(backoff)
                backoff = min(backoff * 2, 0.5)
            n += 1
            if n % 20 == 0 and not stop.is_set():
                t0 = now()
                try:
                    r = http.post(
                        f"/v1/subjects/{subject}/consolidate", headers={"Authorization": f"Bearer {secrets[tenant]}"}
                    )
                except httpx.TransportError as exc:
                    r = exc
                status, outcome = _outcome(r)
                rec.add_try(Try("consolidate", t0, now(), status, outcome))
            if pause:
                time.sleep(pause)
    finally:
        http.close()


def probe_loop(url: str, stop: threading.Event, rec: Record, serial: bool = False) -> None:
    """``GET /healthz`` every 0.2 s, each on a thread of its own (at most 30 in flight), so a
    probe sent after the database came back is not held up by those still waiting; with
    ``serial``, one at a time (each waits for the previous answer)."""
    import httpx

    inflight = threading.BoundedSemaphore(1 if serial else 30)

    def one(http: httpx.Client) -> None:
        t0 = now()
        try:
            r: Any = http.get("/healthz")
        except httpx.TransportError as exc:
            r = exc
        finally:
            inflight.release()
        status, outcome = _outcome(r)
        rec.add_try(Try("healthz", t0, now(), status, outcome))

    with httpx.Client(base_url=url, timeout=10.0, limits=httpx.Limits(max_connections=40)) as http:
        probes: list[threading.Thread] = []
        while not stop.is_set():
            if inflight.acquire(timeout=30):
                probes.append(threading.Thread(target=one, args=(http,), name="probe", daemon=True))
                probes[-1].start()
            stop.wait(0.2)
        for t in probes:
            t.join(12)


# -- the processes -------------------------------------------------------------------------------


class Proc:
    """A lossgate subprocess in a process group of its own, restartable; one log per start."""

    def __init__(self, name: str, argv: list[str], logdir: Path, env: dict[str, str]) -> None:
        self.name, self.argv, self.logdir, self.env = name, argv, logdir, env
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.logs: list[Path] = []
        self._log: Any = None

    def start(self) -> None:
        self.starts += 1
        path = self.logdir / f"{self.name}.{self.starts}.log"
        self.logs.append(path)
        self._log = open(path, "wb")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def kill9(self) -> None:
        """SIGKILL the whole group (for a worker: the pool's parent and its spawned child)."""
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        self._close_log()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, grace=20)
            try:  # whatever is left of the group (a worker's child)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def tail(self, chars: int = 2500) -> str:
        return self.logs[-1].read_text(errors="replace")[-chars:] if self.logs else ""


@dataclass
class Window:
    """A chaos action: ``start`` (kill or cut) to ``end`` (healthy again, restarted, or reopened)."""

    kind: str  # "server", "worker" or "db"
    start: float
    end: float = 0.0
    target: str = ""


def plan(server_kills: int, worker_kills: int, outages: int) -> list[str]:
    """The order of the chaos actions: the kinds in turn (worker, server, db, worker, ...)."""
    left = {"worker": worker_kills, "server": server_kills, "db": outages}
    out: list[str] = []
    while any(left.values()):
        for kind in ("worker", "server", "db"):
            if left[kind]:
                out.append(kind)
                left[kind] -= 1
    return out


class Chaos:
    """Runs the schedule on one thread, and between actions restarts any process that died
    on its own (counted, with its log's tail)."""

    def __init__(self, server: Proc, server_url: str, workers: list[Proc], proxy: TcpProxy, outage_s: float) -> None:
        self.server, self.server_url, self.workers, self.proxy = server, server_url, workers, proxy
        self.outage_s = outage_s
        self.windows: list[Window] = []
        self.deaths: list[dict[str, Any]] = []
        self.server_restarts: list[float] = []  # kill -> healthy, seconds
        self.failures: list[str] = []
        self._next_worker = 0

    def check_deaths(self) -> None:
        for p in [self.server, *self.workers]:
            code = p.exited()
            if code is None:
                continue
            self.deaths.append({"process": p.name, "exit_code": code, "at": now(), "log_tail": p.tail()})
            print(f"  ! {p.name} exited on its own with code {code}; restarting it", flush=True)
            p._close_log()
            self._start(p)

    def _start(self, p: Proc) -> None:
        for _ in range(3):
            p.start()
            if p is not self.server:
                return
            try:
                wait_healthy(self.server_url, p.proc, timeout=60)
                return
            except RuntimeError as exc:
                self.failures.append(f"{p.name} start {p.starts}: {exc}; log: {p.tail(800)}")
                p.stop()
        raise RuntimeError(f"{p.name} would not start: {self.failures[-1]}")

    def act(self, kind: str) -> None:
        w = Window(kind, now())
        if kind == "server":
            w.target = self.server.name
            self.server.kill9()
            self._start(self.server)
            w.end = now()
            self.server_restarts.append(w.end - w.start)
        elif kind == "worker":
            p = self.workers[self._next_worker % len(self.workers)]
            self._next_worker += 1
            w.target = p.name
            p.kill9()
            self._start(p)
            w.end = now()
        else:
            w.target = "proxy"
            self.proxy.stop()
            time.sleep(self.outage_s)
            for attempt in range(50):  # the same port again
                try:
                    self.proxy.start()
                    break
                except OSError:
                    if attempt == 49:
                        raise
                    time.sleep(0.1)
            w.end = now()
        self.windows.append(w)
        took = w.end - w.start
        what = {
            "db": f"outage of {took:.1f} s",
            "server": f"kill -9, healthy again after {took:.1f} s",
            "worker": "kill -9, restarted",
        }[kind]
        print(f"  t={w.start - self.t0:5.1f}s {kind:6s} {w.target}: {what}", flush=True)

    def run(self, kinds: list[str], seconds: float) -> None:
        self.t0 = now()
        gap = seconds * 0.8 / max(1, len(kinds))
        due = [self.t0 + seconds * 0.1 + i * gap for i in range(len(kinds))]
        i = 0
        while i < len(kinds) or now() < self.t0 + seconds:
            self.check_deaths()
            if i < len(kinds) and now() >= due[i]:
                self.act(kinds[i])
                i += 1
                continue
            time.sleep(0.2)


# -- the checks ----------------------------------------------------------------------------------


def check_store(memory: lossgate.Memory, appends: list[Append], subjects: list[tuple[str, str]]) -> dict[str, Any]:
    """Every acknowledged append stored exactly once, all or nothing, seqs without gaps."""
    by_subject: dict[tuple[str, str], list[Append]] = defaultdict(list)
    for a in appends:
        by_subject[(a.tenant, a.subject)].append(a)
    problems: list[str] = []
    lost_events = lost_facts = dup = wrong_answer = wrong_content = partial = stored_unacked = unacked = 0
    events_stored = facts_stored = 0
    for tenant, subject in subjects:
        events = memory.events(tenant, subject)
        facts = memory.facts(tenant, subject, statuses=None)
        clock = memory.admin.clock(tenant, subject)
        events_stored += len(events)
        facts_stored += len(facts)
        ev: dict[str, list[Any]] = defaultdict(list)
        for e in events:
            ev[e.event_id].append(e)
        fc: dict[str, list[Any]] = defaultdict(list)
        for f in facts:
            fc[f.fact_id].append(f)
        seqs = sorted([e.seq for e in events] + [f.seq for f in facts])
        if seqs != list(range(1, clock.high_water + 1)):
            missing = sorted(set(range(1, clock.high_water + 1)) - set(seqs))
            problems.append(
                f"{tenant}/{subject}: seqs are not 1..{clock.high_water} "
                f"({len(seqs)} stored; missing {missing[:10]}; repeated "
                f"{[s for s, k in Counter(seqs).items() if k > 1][:10]})"
            )
        sent_ids = set()
        for a in by_subject[(tenant, subject)]:
            sent_ids |= set(a.events)
            here = [eid for eid in a.events if eid in ev] + [fid for fid in a.facts if fid in fc]
            if here and len(here) != len(a.events) + len(a.facts):
                partial += 1
                problems.append(f"{a.key}: partly stored ({len(here)} of {len(a.events) + len(a.facts)} records)")
            if a.acked_at is None:
                unacked += 1
                stored_unacked += bool(here)
                continue
            for eid, text in a.events.items():
                got = ev.get(eid, [])
                if not got:
                    lost_events += 1
                    problems.append(f"{a.key}: acknowledged event {eid} is not stored")
                elif len(got) > 1:
                    dup += 1
                    problems.append(f"{a.key}: event {eid} stored {len(got)} times")
                elif got[0].text != text:
                    wrong_content += 1
                    problems.append(f"{a.key}: event {eid} stored with other text")
            for fid, (predicate, value) in a.facts.items():
                got = fc.get(fid, [])
                if not got:
                    lost_facts += 1
                    problems.append(f"{a.key}: acknowledged fact {fid} is not stored")
                elif len(got) > 1:
                    dup += 1
                    problems.append(f"{a.key}: fact {fid} stored {len(got)} times")
                elif (got[0].predicate, got[0].value) != (predicate, value):
                    wrong_content += 1
                    problems.append(f"{a.key}: fact {fid} stored as {got[0].predicate}={got[0].value!r}")
            answer = a.answer or {}
            named = {r["event_id"]: r["seq"] for r in answer.get("appended", [])}
            for eid in a.events:
                if eid in ev and len(ev[eid]) == 1:
                    if eid in named and named[eid] != ev[eid][0].seq:
                        wrong_answer += 1
                        problems.append(f"{a.key}: the answer gave {eid} seq {named[eid]}, stored at {ev[eid][0].seq}")
                    elif eid not in named and eid not in answer.get("duplicates", []):
                        wrong_answer += 1
                        problems.append(f"{a.key}: the answer does not name event {eid}")
        strangers = set(ev) - sent_ids
        if strangers:
            problems.append(f"{tenant}/{subject}: {len(strangers)} stored events no client sent")
    acked = [a for a in appends if a.acked_at is not None]
    return {
        "appends_sent": len(appends),
        "appends_acknowledged": len(acked),
        "events_acknowledged": sum(len(a.events) for a in acked),
        "facts_acknowledged": sum(len(a.facts) for a in acked),
        "appends_refused_4xx": sum(a.refused is not None for a in appends),
        "refusals": [f"{a.key}: {a.refused}" for a in appends if a.refused][:10],
        "appends_not_acknowledged": unacked,
        "not_acknowledged_but_stored": stored_unacked,
        "acknowledged_replayed": sum(a.replayed for a in acked),
        "acknowledged_after_retry": sum(a.tries > 1 for a in acked),
        "events_stored": events_stored,
        "facts_stored": facts_stored,
        "lost_events": lost_events,
        "lost_facts": lost_facts,
        "stored_twice": dup,
        "answers_naming_wrong_seqs": wrong_answer,
        "stored_with_other_content": wrong_content,
        "partial_appends": partial,
        "problems": problems,
    }


def subject_state(memory: lossgate.Memory, tenant: str, subject: str) -> dict[str, Any]:
    clock = memory.admin.clock(tenant, subject)
    alias = memory.admin.alias(tenant, subject)
    attempts = sorted(memory.admin.attempts(tenant, subject), key=lambda a: (a.started_at, a.number))
    latest = attempts[-1] if attempts else None
    fresh = (
        alias.artifact_id is not None
        and alias.source_epoch == clock.input_epoch
        and alias.covers_through == clock.high_water
    )
    return {
        "fresh": fresh,
        "high_water": clock.high_water,
        "covers_through": alias.covers_through,
        "latest": latest,
        "attempts": attempts,
        "published": fresh and latest is not None and latest.status == "published",
    }


def why_not(state: dict[str, Any], jobs: list[Any]) -> str:
    lines = [f"alias covers {state['covers_through']} of {state['high_water']}, fresh={state['fresh']}"]
    for a in state["attempts"][-4:]:
        lines.append(
            f"attempt {a.number} {a.status} gate={a.gate_outcome} violations={list(a.violations)[:3]} "
            f"error={a.error} reason={a.reason} needs_review={a.needs_review}"
        )
    for j in jobs[-3:]:
        lines.append(f"job {j.job_id} {j.status} tries={j.tries} reason={j.reason} lease={j.lease_owner}")
    return "; ".join(lines)


def drain(
    url: str,
    secrets: dict[str, str],
    memory: lossgate.Memory,
    subjects: list[tuple[str, str]],
    timeout: float,
    chaos: Chaos,
) -> tuple[float, dict[tuple[str, str], dict[str, Any]], list[str]]:
    """Queue a consolidation of every subject over HTTP, then wait until each is published
    and covers its history. Returns the seconds it took, the states, and request problems."""
    import httpx

    t0 = now()
    problems: list[str] = []
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT) as http:
        for tenant, subject in subjects:
            for _ in range(40):
                try:
                    r = http.post(
                        f"/v1/subjects/{subject}/consolidate", headers={"Authorization": f"Bearer {secrets[tenant]}"}
                    )
                    if r.status_code == 202:
                        break
                    why = f"{r.status_code} {r.text[:200]}"
                except httpx.TransportError as exc:
                    why = repr(exc)
                time.sleep(0.5)
            else:
                problems.append(f"{tenant}/{subject}: consolidate not accepted: {why}")
    states: dict[tuple[str, str], dict[str, Any]] = {}
    pending = set(subjects)
    while pending and now() - t0 < timeout:
        chaos.check_deaths()
        for ts in sorted(pending):
            jobs = memory.admin.jobs(*ts)
            states[ts] = subject_state(memory, *ts)
            if states[ts]["published"] and not any(j.status in ("pending", "running") for j in jobs):
                pending.discard(ts)
        if pending:
            time.sleep(0.5)
    for ts in subjects:
        states[ts] = subject_state(memory, *ts)
    return now() - t0, states, problems


# -- the figures ---------------------------------------------------------------------------------


def _overlaps(t: Try, a: float, b: float) -> bool:
    return t.start < b and t.end > a


def summarise(rec: Record, chaos: Chaos, memory: lossgate.Memory, subjects: list[tuple[str, str]]) -> dict[str, Any]:
    tries = sorted(rec.tries, key=lambda t: t.start)
    appends = [t for t in tries if t.op == "append"]
    health = [t for t in tries if t.op == "healthz"]
    db = [w for w in chaos.windows if w.kind == "db"]
    srv = [w for w in chaos.windows if w.kind == "server"]
    # When each reopening recovered: the first acknowledged append, the first healthy probe,
    # the first consolidation attempt finished (by any worker), after the reopening.
    attempts_done = sorted(
        a.finished_at.timestamp() for ts in subjects for a in memory.admin.attempts(*ts) if a.finished_at is not None
    )
    # Attempts left before an outcome (selected or gated): the chaos action that came next
    # after each one started is what interrupted it.
    unfinished = []
    for ts in subjects:
        for a in memory.admin.attempts(*ts):
            if a.status not in ("selected", "gated"):
                continue
            started = a.started_at.timestamp()
            nxt = next((w for w in sorted(chaos.windows, key=lambda w: w.start) if w.start >= started - 0.5), None)
            unfinished.append(
                {
                    "subject": "/".join(ts),
                    "attempt": a.number,
                    "status": a.status,
                    "started_s": round(started - chaos.t0, 2),
                    "next_action": None if nxt is None else f"{nxt.kind} {nxt.target} at {nxt.start - chaos.t0:.2f} s",
                }
            )
    outages: list[dict[str, Any]] = []
    for w in db:
        ok = next((t.end for t in appends if t.status and t.status < 300 and t.end > w.end), None)
        hz = next((t.end for t in health if t.status == 200 and t.end > w.end), None)
        job = next((x for x in attempts_done if x > w.end), None)
        during = [t for t in appends if _overlaps(t, w.start, w.end)]
        fresh = next((t for t in health if t.start > w.end), None)
        outages.append(
            {
                "start": w.start,
                "seconds": w.end - w.start,
                "append_recovery_s": None if ok is None else ok - w.end,
                "healthz_recovery_s": None if hz is None else hz - w.end,
                "worker_recovery_s": None if job is None else job - w.end,
                # the first probe sent after the reopening: sent how long after it, answered in, with
                "first_probe_after": None
                if fresh is None
                else (round(fresh.start - w.end, 2), round(fresh.end - fresh.start, 3), fresh.outcome),
                "recovered_at": ok,
                "requests": len(during),
                "outcomes": dict(Counter(t.outcome for t in during)),
                "answer_s_p50": median([t.end - t.start for t in during]) if during else None,
                "answer_s_max": max((t.end - t.start for t in during), default=None),
                # what each request around the outage got: (sent, answered) in seconds from the cut
                "timeline": [
                    (t.op, round(t.start - w.start, 2), round(t.end - w.start, 2), t.outcome)
                    for t in tries
                    if t.op != "consolidate" and _overlaps(t, w.start - 0.3, (ok or hz or w.end) + 0.3)
                ],
            }
        )

    def window(t: Try) -> str:
        for w, o in zip(db, outages, strict=False):
            if _overlaps(t, w.start, w.end):
                return "db_down"
            if _overlaps(t, w.end, o["recovered_at"] or w.end):
                return "db_recovering"
        for w in srv:
            if _overlaps(t, w.start, w.end):
                return "server_down"
        return "normal"

    by_window: dict[str, Counter[str]] = defaultdict(Counter)
    for t in appends:
        by_window[window(t)][t.outcome] += 1
    during_db = [t for t in appends if window(t) == "db_down"]
    ok_normal = [t.end - t.start for t in appends if window(t) == "normal" and t.status and t.status < 300]
    normal_errors = [t for t in appends if window(t) == "normal" and not (t.status and t.status < 300)]
    health_by = Counter((window(t), t.outcome) for t in health)
    consolidate = Counter(t.outcome for t in tries if t.op == "consolidate")
    return {
        "kills": {"server": len(srv), "worker": sum(w.kind == "worker" for w in chaos.windows)},
        "db_outages": len(db),
        "outages": outages,
        "server_restart_s_p50": median(chaos.server_restarts) if chaos.server_restarts else None,
        "server_restart_s_max": max(chaos.server_restarts, default=None),
        "append_requests": len(appends),
        "append_outcomes_by_window": {k: dict(v) for k, v in by_window.items()},
        "db_window_503": sum(t.status == 503 for t in during_db),
        "db_window_other_5xx": sum(bool(t.status and t.status >= 500 and t.status != 503) for t in during_db),
        "db_window_transport_errors": sum(t.status is None for t in during_db),
        "db_window_2xx": sum(bool(t.status and t.status < 300) for t in during_db),
        "append_ok_s_p50_normal": median(ok_normal) if ok_normal else None,
        "append_ok_s_p99_normal": percentile(ok_normal, 99) if ok_normal else None,
        "errors_outside_chaos": len(normal_errors),
        "errors_outside_chaos_examples": [f"{t.outcome} at +{t.start - chaos.t0:.1f}s" for t in normal_errors[:10]],
        "healthz_by_window": {f"{w} {o}": n for (w, o), n in sorted(health_by.items())},
        "consolidate_requests": dict(consolidate),
        "attempt_statuses": dict(Counter(a.status for ts in subjects for a in memory.admin.attempts(*ts))),
        "unfinished_attempts": unfinished,
    }


def scan_logs(procs: list[Proc]) -> dict[str, Any]:
    """Counts of the lines that say how the processes met the chaos."""
    marks = {
        "store error, will retry": "job released after a store error",
        "trying again in": "claim/release failed, worker waits",
        "heartbeat failed": "heartbeat failed",
        "could not record its failure": "failure not recorded",
        "Traceback": "tracebacks",
        "needs review": "needs review",
    }
    out: dict[str, dict[str, int]] = {}
    examples: dict[str, list[str]] = defaultdict(list)
    for p in procs:
        counts: Counter[str] = Counter()
        for log in p.logs:
            if not log.exists():
                continue
            for line in log.read_text(errors="replace").splitlines():
                for mark, name in marks.items():
                    if mark in line:
                        counts[name] += 1
                        if len(examples[p.name]) < 6 and mark != "Traceback":
                            examples[p.name].append(line.strip()[:300])
        out[p.name] = dict(counts)
    return {"counts": out, "examples": dict(examples)}


def _fmt(x: Any, unit: str = "s") -> str:
    if x is None:
        return "-"
    return f"{x:.2f} {unit}" if isinstance(x, float) else str(x)


def _outcomes(counts: dict[str, int] | None) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) if counts else "-"


def report(fig: dict[str, Any]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich comes with lossgate
        for k, v in fig.items():
            print(f"{k}: {v}")
        return
    s, c = fig["store"], fig["chaos"]
    t = Table(title="chaos run (PostgreSQL)", title_justify="left")
    t.add_column("figure")
    t.add_column("value", overflow="fold")
    rows = [
        ("chaos / drain", f"{fig['chaos_seconds']:.0f} s / {fig['drain_seconds']:.1f} s"),
        ("kill -9: server / worker", f"{c['kills']['server']} / {c['kills']['worker']}"),
        ("database outages (proxy cut)", f"{c['db_outages']} x {fig['outage_seconds']:.0f} s"),
        (
            "server restart, kill to healthy (median, max)",
            f"{_fmt(c['server_restart_s_p50'])}, {_fmt(c['server_restart_s_max'])}",
        ),
        (
            "appends sent / acknowledged / not acknowledged",
            f"{s['appends_sent']} / {s['appends_acknowledged']} / {s['appends_not_acknowledged']}",
        ),
        ("acknowledged events / facts", f"{s['events_acknowledged']} / {s['facts_acknowledged']}"),
        (
            "acknowledged after a retry (of which replayed)",
            f"{s['acknowledged_after_retry']} ({s['acknowledged_replayed']})",
        ),
        ("append requests (retries included)", str(c["append_requests"])),
        (
            "[bold]acknowledged lost / stored twice / wrong seqs[/]",
            f"{s['lost_events'] + s['lost_facts']} / {s['stored_twice']} / {s['answers_naming_wrong_seqs']}",
        ),
        (
            "partial appends; subjects with seq gaps",
            f"{s['partial_appends']}; {sum('seqs are not' in p for p in s['problems'])}",
        ),
        ("[bold]subjects published[/]", f"{fig['subjects_published']} of {fig['subjects']}"),
        (
            "append requests during outages: 503 / other 5xx / transport errors / 2xx",
            f"{c['db_window_503']} / {c['db_window_other_5xx']} / {c['db_window_transport_errors']} / "
            f"{c['db_window_2xx']}",
        ),
        ("... after a reopening, before the first ack", _outcomes(c["append_outcomes_by_window"].get("db_recovering"))),
        ("... during server restarts", _outcomes(c["append_outcomes_by_window"].get("server_down"))),
        (
            "append outside chaos windows: ok p50, p99; errors",
            f"{_fmt(c['append_ok_s_p50_normal'])}, {_fmt(c['append_ok_s_p99_normal'])}; {c['errors_outside_chaos']}",
        ),
        ("[bold]processes that died on their own[/]", str(len(fig["deaths"]))),
        ("consolidation attempts by status", _outcomes(c["attempt_statuses"])),
    ]
    for i, o in enumerate(c["outages"], 1):
        rows.append(
            (
                f"outage {i}: first ack / healthz / job after reopen",
                f"{_fmt(o['append_recovery_s'])} / {_fmt(o['healthz_recovery_s'])} / {_fmt(o['worker_recovery_s'])}",
            )
        )
        if o["first_probe_after"]:
            sent, took, got = o["first_probe_after"]
            rows.append((f"outage {i}: first /healthz sent after reopen", f"+{sent:.2f} s: {got} in {took:.3f} s"))
        rows.append(
            (
                f"outage {i}: {o['requests']} append requests got",
                _outcomes(o["outcomes"]) + f" (answer p50 {_fmt(o['answer_s_p50'])}, max {_fmt(o['answer_s_max'])})",
            )
        )
    for row in rows:
        t.add_row(*row)
    Console(width=130).print(t)


# -- the run -------------------------------------------------------------------------------------


def run(db_url: str, args: argparse.Namespace, logdir: Path) -> dict[str, Any]:
    tag = f"r{int(time.time()) % 100000}"
    tenants = [f"chaos-t{i}" for i in range(args.tenants)]
    subjects = [(t, f"s{k}") for t in tenants for k in range(args.subjects)]
    boot = lossgate.open(db_url)  # migrates, directly (not through the proxy)
    boot.admin.load_predicates(str(PREDICATES))
    secrets = {t: boot.admin.create_api_key(t, scopes=["read", "write"], name="chaos")[1] for t in tenants}
    target = urlsplit(db_url)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
    proxy.start()
    proxied = proxy.url(db_url)
    env = {k: v for k, v in os.environ.items() if k not in _DROP_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    port = free_port()
    server_url = f"http://127.0.0.1:{port}"
    lg = [sys.executable, "-m", "lossgate", "--db", proxied]
    server = Proc("server", [*lg, "serve", "--port", str(port), "--log-level", "warning"], logdir, env)
    workers = [
        Proc(f"worker-{i}", [*lg, "worker", "--concurrency", "1", "--lease", "6", "--backoff", "1"], logdir, env)
        for i in range(2)
    ]
    chaos = Chaos(server, server_url, workers, proxy, args.outage_seconds)
    rec = Record()
    stop_load, stop_probe = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    print(
        f"[postgres] {args.clients} clients on {len(subjects)} subjects of {len(tenants)} tenants; "
        f"{args.seconds:.0f} s of chaos: {args.server_kills} server kills, {args.worker_kills} worker kills, "
        f"{args.outages} outages of {args.outage_seconds:.0f} s (a cut at the proxy)",
        flush=True,
    )
    try:
        chaos._start(server)
        for w in workers:
            chaos._start(w)
        load_deadline = now() + args.seconds + 45  # retries of the last appends stop here at the latest
        threads = [
            threading.Thread(
                target=client_loop,
                name=f"chaos-client-{c}",
                args=(c, server_url, secrets, subjects, tag, stop_load, load_deadline, rec, args.pause, args.seed),
            )
            for c in range(args.clients)
        ]
        threads.append(
            threading.Thread(target=probe_loop, args=(server_url, stop_probe, rec, args.serial_probe), name="probe")
        )
        for t in threads:
            t.start()
        t0 = now()
        chaos.run(plan(args.server_kills, args.worker_kills, args.outages), args.seconds)
        chaos_s = now() - t0
        stop_load.set()
        for t in threads[:-1]:
            t.join(REQUEST_TIMEOUT + 60)
        print(f"  load stopped: {len(rec.appends)} appends; draining (at most {args.drain_timeout:.0f} s)", flush=True)
        drain_s, states, drain_problems = drain(server_url, secrets, boot, subjects, args.drain_timeout, chaos)
        stop_probe.set()
        threads[-1].join(10)
        alive = {p.name: p.exited() is None for p in [server, *workers]}
    finally:
        stop_load.set()
        stop_probe.set()
        for p in [*workers, server]:
            p.stop()
        proxy.stop()
    store = check_store(boot, rec.appends, subjects)
    figures = summarise(rec, chaos, boot, subjects)
    published = [ts for ts in subjects if states[ts]["published"]]
    unpublished = {
        f"{t}/{s}": why_not(states[(t, s)], boot.admin.jobs(t, s))
        for t, s in subjects
        if not states[(t, s)]["published"]
    }
    boot.close()
    logs = scan_logs([server, *workers])
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "chaos_seconds": chaos_s,
        "drain_seconds": drain_s,
        "outage_seconds": args.outage_seconds,
        "clients": args.clients,
        "subjects": len(subjects),
        "tenants": len(tenants),
        "subjects_published": len(published),
        "unpublished": unpublished,
        "drain_problems": drain_problems,
        "store": store,
        "chaos": figures,
        "deaths": [{k: v for k, v in d.items() if k != "at"} for d in chaos.deaths],
        "start_failures": chaos.failures,
        "alive_at_end": alive,
        "process_starts": {p.name: p.starts for p in [server, *workers]},
        "logs": logs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (default: $LOSSGATE_BENCH_PG_URL)")
    ap.add_argument("--seconds", type=float, default=80.0, help="seconds of load and chaos")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--tenants", type=int, default=3)
    ap.add_argument("--subjects", type=int, default=4, help="subjects per tenant")
    ap.add_argument("--server-kills", type=int, default=3)
    ap.add_argument("--worker-kills", type=int, default=3)
    ap.add_argument("--outages", type=int, default=2)
    ap.add_argument("--outage-seconds", type=float, default=6.0)
    ap.add_argument("--drain-timeout", type=float, default=90.0)
    ap.add_argument("--pause", type=float, default=0.02, help="seconds a client waits between appends")
    ap.add_argument(
        "--serial-probe", action="store_true", help="send each /healthz probe only once the previous one is answered"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--logs", type=Path, default=None, help="keep the processes' logs in this directory")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.pg = pg_url(args.pg)
    if not args.pg:
        skip_pg("the chaos run")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still stops its processes
    from lossgate.testing.postgres import create_database, drop_database

    logdir = Path(tempfile.mkdtemp(prefix="lossgate-chaos-"))
    url = create_database(args.pg, prefix="lossgate_bench")
    try:
        fig = run(url, args, logdir)
    finally:
        drop_database(url)
    report(fig)
    s = fig["store"]
    lost = (
        s["lost_events"]
        + s["lost_facts"]
        + s["stored_twice"]
        + s["answers_naming_wrong_seqs"]
        + s["stored_with_other_content"]
        + s["partial_appends"]
    )
    for line in s["problems"][:20]:
        print(f"  ! {line}", flush=True)
    for subject, why in fig["unpublished"].items():
        print(f"  ! {subject} did not publish: {why}", flush=True)
    for line in fig["drain_problems"] + fig["start_failures"]:
        print(f"  ! {line}", flush=True)
    for d in fig["deaths"]:
        print(f"  ! {d['process']} died on its own (exit {d['exit_code']}); its log ends:\n{d['log_tail']}", flush=True)
    for u in fig["chaos"]["unfinished_attempts"]:
        print(
            f"  attempt left {u['status']}: {u['subject']} #{u['attempt']} started at {u['started_s']} s; "
            f"next chaos action: {u['next_action']}",
            flush=True,
        )
    for name, lines in fig["logs"]["examples"].items():
        for line in lines:
            print(f"  {name}: {line}", flush=True)
    print(f"  log lines: {fig['logs']['counts']}", flush=True)
    print(
        f"cores: {os.cpu_count()} - the clients, the proxy, the server, the workers and PostgreSQL share them",
        flush=True,
    )
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
        for f in logdir.iterdir():
            shutil.copy(f, args.logs / f.name)
        print(f"logs kept in {args.logs}", flush=True)
    shutil.rmtree(logdir, ignore_errors=True)
    if args.json:
        print(json.dumps(fig, indent=1, default=str))
    bad = []
    if lost or any("seqs are not" in p for p in s["problems"]):
        bad.append(f"{lost} acknowledged records lost, duplicated or misreported")
    if fig["subjects_published"] != fig["subjects"]:
        bad.append(f"{fig['subjects'] - fig['subjects_published']} subjects did not publish")
    if bad:
        print("FAILED: " + "; ".join(bad), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
