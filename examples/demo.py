"""The lossgate demo: the command line on a fresh SQLite database, step by step.

    python examples/demo.py [FOLDER]   # or: make demo

Every step is a real ``lossgate`` invocation (``python -m lossgate``), printed with a
``$ lossgate ...`` header before its output. The demo exits non-zero as soon as a step
does not end the way it should (one step is *meant* to fail: a bad line is refused and
nothing from its file is written).

The database is kept: ``FOLDER/demo.db`` (default ``./lossgate-demo/demo.db``), with the
files the steps read, and the demo ends by printing the ``lossgate serve`` command that
serves it again, for the inspection page. Running the demo again starts afresh: it first
removes the files a previous run wrote in that folder (only those), then builds them anew.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.rule import Rule

from lossgate.testing.chat_server import ScriptedChatServer, echo_conversation, narrative
from lossgate.testing.service import free_port, stop_process, wait_healthy

HERE = Path(__file__).resolve().parent
PREDICATES = HERE / "predicates.toml"
EVENTS = HERE / "demo.jsonl"
DB_FILE = "demo.db"
DB = f"sqlite:///{DB_FILE}"  # relative to the demo's folder, where every step runs
DEFAULT_FOLDER = Path("lossgate-demo")  # under the working directory (make demo: the repository's)
TRAVEL = ["--tenant", "travel-co", "--subject", "user-17"]
BILLING = ["--tenant", "acme-billing", "--subject", "cust_482"]

# The meal an agent plans for the allergic traveller, and the order corrected.
ORDER = {
    "restaurant": "Lisbon Bistro",
    "items": [{"dish": "green salad", "ingredients": ["lettuce", "peanut dressing"]}],
}
FIXED = {
    "restaurant": "Lisbon Bistro",
    "items": [{"dish": "green salad", "ingredients": ["lettuce", "lemon dressing"]}],
}

# A file with one good event, then a fact whose int predicate is given 50.0.
BAD_LINES = (
    '{"type": "event", "tenant_id": "acme-billing", "subject_id": "cust_482", "event_id": "crm-0401", '
    '"kind": "system", "actor": "crm-sync", "trust": "system", "text": "CRM sync: 50 seats.", '
    '"occurred_at": "2026-04-01T10:00:00-04:00"}\n'
    '{"type": "fact", "tenant_id": "acme-billing", "subject_id": "cust_482", "fact_id": "seats-v2", '
    '"predicate": "subscription.seats", "value": 50.0, "authority": "system", "source_event_ids": ["crm-0401"]}\n'
)

# A new message for the model to narrate.
LANDING = (
    '{"type": "event", "tenant_id": "travel-co", "subject_id": "user-17", "event_id": "event-90", '
    '"kind": "message", "actor": "user", "trust": "authenticated_user", '
    '"text": "I land in Lisbon at 18:40 on flight TP1351. Please do not book a window seat.", '
    '"occurred_at": "2026-01-09T08:15:00+00:00"}\n'
)

# Everything a run writes in its folder: a rerun removes these first, and nothing else.
WRITTEN = (
    DB_FILE,
    f"{DB_FILE}-wal",
    f"{DB_FILE}-shm",
    PREDICATES.name,
    EVENTS.name,
    "bad.jsonl",
    "order.json",
    "fixed.json",
    "landing.jsonl",
    "serve.log",
)

console = Console()


def step(title: str, args: list[str], *, workdir: Path, expect: int = 0) -> None:
    """Run one ``lossgate`` command in ``workdir``, show it and its output; exit if its
    code is not ``expect``."""
    console.print()
    console.print(Rule(f"[bold]{title}", align="left", style="blue"))
    shown = " ".join(shlex.quote(a) for a in args)
    console.print(f"[bold green]$[/] [bold]lossgate {shown}[/]", highlight=False)
    # Tables are wide: use the reader's terminal width, or a generous one in a log.
    env = {**os.environ, "LOSSGATE_DB": DB, "COLUMNS": str(console.width if console.is_terminal else 160)}
    if console.is_terminal:
        env["FORCE_COLOR"] = "1"  # the child writes to a pipe; keep the reader's colours
    done = subprocess.run(
        [sys.executable, "-m", "lossgate", *args], env=env, cwd=workdir, capture_output=True, text=True, check=False
    )
    sys.stdout.write(done.stdout)
    sys.stdout.write(done.stderr)
    sys.stdout.flush()
    if done.returncode != expect:
        console.print(f"[bold red]step failed:[/] exit code {done.returncode}, expected {expect}")
        sys.exit(done.returncode or 1)
    if expect:
        console.print(f"[dim]exit code {done.returncode}, as expected[/]")


def service(workdir: Path) -> None:
    """``lossgate serve`` on the demo's database, on a free local port: a key, one recall over
    HTTP, the inspection page's address; the server is stopped whatever happens (the key stays
    in the database, for :func:`inspect_again`)."""
    import httpx

    console.print()
    console.print(
        Rule("[bold]The memory service: a key, lossgate serve, one recall over HTTP", align="left", style="blue")
    )
    env = {**os.environ, "LOSSGATE_DB": DB}
    args = ["keys", "create", "--tenant", "travel-co", "--scopes", "read", "--name", "demo", "--json"]
    console.print(f"[bold green]$[/] [bold]lossgate {' '.join(args)}[/]", highlight=False)
    done = subprocess.run(
        [sys.executable, "-m", "lossgate", *args], env=env, cwd=workdir, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.stdout.write(done.stdout + done.stderr)
        console.print(f"[bold red]step failed:[/] exit code {done.returncode}")
        sys.exit(done.returncode or 1)
    key = json.loads(done.stdout)
    secret = key["secret"]
    console.print(
        f"key {key['key_id']} for tenant travel-co, scopes {','.join(key['scopes'])}; its secret "
        "(printed once, only its sha256 is stored):",
        highlight=False,
    )
    console.print(f"KEY={secret}", highlight=False)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    console.print(f"[bold green]$[/] [bold]lossgate serve --port {port} &[/]", highlight=False)
    log = workdir / "serve.log"
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed demo still stops its server
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lossgate", "serve", "--port", str(port), "--log-level", "warning"],
            env=env,
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        try:
            wait_healthy(url, proc)
        except RuntimeError:
            sys.stdout.write(log.read_text(errors="replace"))
            console.print("[bold red]step failed:[/] lossgate serve did not come up")
            sys.exit(1)
        console.print(f"[dim]serving {DB} at {url}[/]", highlight=False)
        body = {"query": "Can I order the satay?", "budget": 2000}
        console.print(
            f"[bold green]$[/] [bold]curl -s {url}/v1/subjects/user-17/recall "
            "-H \"Authorization: Bearer $KEY\" -H 'Content-Type: application/json' "
            f"-d '{json.dumps(body)}' | jq -r .mode,.rendered[/]",
            highlight=False,
        )
        r = httpx.post(
            f"{url}/v1/subjects/user-17/recall", json=body, timeout=30, headers={"Authorization": f"Bearer {secret}"}
        )
        if r.status_code != 200:
            console.print(f"[bold red]step failed:[/] HTTP {r.status_code}: {r.text}")
            sys.exit(1)
        answer = r.json()
        lines = answer["rendered"].splitlines()
        print(answer["mode"])
        print("\n".join(lines[:12]) + (f"\n... ({len(lines) - 12} more lines)" if len(lines) > 12 else ""))
        console.print(
            f"the inspection page of this subject: [bold]{url}/ui/subjects/user-17[/] "
            "(same key; while this server runs: the end says how to serve it again)",
            highlight=False,
        )
    finally:
        stop_process(proc, grace=15)
        signal.signal(signal.SIGTERM, previous)
    console.print("[dim]server stopped[/]")


def prepare(folder: Path) -> None:
    """Make ``folder`` the demo's, afresh: what a previous run wrote there is removed (only
    that: the folder may hold other files), then the inputs are copied in."""
    folder.mkdir(parents=True, exist_ok=True)
    previous = [folder / name for name in WRITTEN if (folder / name).exists()]
    for path in previous:
        path.unlink()
    if previous:
        console.print(
            f"[dim]starting afresh in {folder}: removed the previous run's {', '.join(p.name for p in previous)}[/]",
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(f"[dim]working in {folder}[/]", highlight=False, soft_wrap=True)
    # Work on copies in the demo's folder, so every command reads exactly as it runs.
    for source in (PREDICATES, EVENTS):
        shutil.copy(source, folder / source.name)


def inspect_again(folder: Path) -> None:
    """How to serve the kept database again and open the subject's inspection page."""
    url = f"sqlite:///{(folder / DB_FILE).resolve()}"
    console.print()
    console.print(Rule("[bold]The database is kept: serve it again to inspect it", align="left", style="blue"))
    console.print(
        f"the demo's memory stays in {(folder / DB_FILE).resolve()}; to look at it again:",
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"[bold green]$[/] [bold]lossgate --db {url} serve --port 8080[/]", highlight=False, soft_wrap=True)
    console.print(
        "then open http://127.0.0.1:8080/ui/subjects/user-17 and log in with the KEY printed above, or with a new one:",
        highlight=False,
        soft_wrap=True,
    )
    console.print(
        f"[bold green]$[/] [bold]lossgate --db {url} keys create --tenant travel-co --scopes read[/]",
        highlight=False,
        soft_wrap=True,
    )
    console.print("Running the demo again starts afresh: it replaces that database.", highlight=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The lossgate demo, step by step on a SQLite database it keeps.")
    parser.add_argument(
        "folder",
        nargs="?",
        type=Path,
        default=DEFAULT_FOLDER,
        help=f"where the database and the steps' files are kept (default: ./{DEFAULT_FOLDER})",
    )
    folder: Path = parser.parse_args(argv).folder
    if folder.exists() and not folder.is_dir():
        parser.error(f"{folder} is not a folder")
    if folder.resolve() == HERE:
        parser.error(f"{folder} holds the demo's own inputs; give another folder")
    console.print(
        Panel.fit(
            "[bold]lossgate[/]: agent memory that compresses without forgetting.\n"
            "Raw events are append-only; facts are typed, sourced and have a lifecycle;\n"
            "summaries are published only when a deterministic gate proves nothing that\n"
            "matters was lost, flipped or invented.",
            border_style="blue",
        )
    )
    workdir = folder  # every step runs here, its files and database beside each other
    prepare(workdir)
    console.print(
        f"[bold green]$[/] [bold]cd {shlex.quote(str(workdir))} && export LOSSGATE_DB={DB}[/]",
        highlight=False,
        soft_wrap=True,
    )
    run = lambda title, args, expect=0: step(title, args, workdir=workdir, expect=expect)  # noqa: E731

    run("Create the database and load the predicate registry", ["init", "--predicates", PREDICATES.name])
    run("Ingest two subjects' events and facts (one transaction)", ["ingest", EVENTS.name])
    run("A traveller's active facts: typed, qualified, sourced", ["facts", *TRAVEL])
    run("A customer's facts: money keeps amount and currency, seats stay an int", ["facts", *BILLING])
    run("Ingesting the same file again is a no-op", ["ingest", EVENTS.name])

    (workdir / "bad.jsonl").write_text(BAD_LINES, encoding="utf-8")
    run(
        "A bad line (an int predicate given 50.0) is refused; nothing from its file is written",
        ["ingest", "bad.jsonl"],
        expect=2,
    )
    run("...so the customer's clock has not moved", ["clock", *BILLING])

    run("Consolidate: compress, gate, publish through the alias CAS", ["consolidate", *TRAVEL])
    run("Recall: the fresh summary, with every critical fact", ["recall", *TRAVEL])

    run(
        "The user moved: supersede the timezone (source: their message event-72)",
        [
            "supersede",
            "timezone-v1",
            *TRAVEL,
            "--value",
            "UTC+01:00",
            "--source",
            "event-72",
            "--fact-id",
            "timezone-v2",
        ],
    )
    run("The summary that said UTC-05:00 went stale in the same transaction", ["artifacts", *TRAVEL])
    run("...so recall falls back to raw memory until a rebuild passes the gate", ["recall", *TRAVEL, "-k", "3"])
    run("Rebuild: the new summary carries only the current timezone", ["consolidate", *TRAVEL])

    run(
        "The user asks us to forget their home address",
        ["delete", "fact", "address-1", *TRAVEL, "--reason", "user request: forget my address"],
    )
    run("Rebuild: the address never reaches the compressor again", ["consolidate", *TRAVEL])
    run("Recall: no address anywhere, the allergy untouched", ["recall", *TRAVEL])
    run("The timezone's history: oldest first, with the log", ["history", "timezone-v2", *TRAVEL])

    run(
        "A lossy compressor flips the peanut allergy: the gate refuses to publish it",
        ["consolidate", *TRAVEL, "--compressor", "lossgate.testing.compressors:FlipBool"],
        expect=1,
    )
    run("Every attempt is kept, the refused one with its violation", ["attempts", *TRAVEL])
    run("...and recall still serves the last good summary", ["recall", *TRAVEL, "-q", "peanuts"])

    # The last boundary: memory is right, and the agent plans a meal with a peanut dressing.
    (workdir / "order.json").write_text(json.dumps(ORDER), encoding="utf-8")
    (workdir / "fixed.json").write_text(json.dumps(FIXED), encoding="utf-8")
    run(
        "The agent plans a salad with peanut dressing: the guard refuses it, naming the fact",
        ["guard", *TRAVEL, "order.json"],
        expect=1,
    )
    run("The corrected order passes the guard", ["guard", *TRAVEL, "fixed.json"])

    # A model as compressor, over real HTTP: a scripted OpenAI-compatible server stands
    # in for vLLM, Ollama or a hosted API (no model or network is needed for the demo).
    (workdir / "landing.jsonl").write_text(LANDING, encoding="utf-8")
    run("A new message arrives", ["ingest", "landing.jsonl"])
    with ScriptedChatServer(
        [narrative("They wrote again about the Lisbon trip. They land in Lisbon at 19:40 on flight TP1351.")],
        default=echo_conversation,
    ) as model:
        os.environ.update(LOSSGATE_LLM_URL=model.url, LOSSGATE_LLM_MODEL="scripted-model")
        console.print(f"[dim]a scripted chat-completions server stands in for a model at {model.url}[/]")
        console.print(
            f"[bold green]$[/] [bold]export LOSSGATE_LLM_URL={model.url} LOSSGATE_LLM_MODEL=scripted-model[/]",
            highlight=False,
        )
        run(
            "A narrative moves the landing to 19:40: that sentence is left out",
            ["consolidate", *TRAVEL, "--compressor", "chat"],
        )
        run("The attempt says what was left out, and why", ["attempts", *TRAVEL])
        run("Recall: the facts, then what remains of the model's narrative", ["recall", *TRAVEL])
    run("The billing customer: invoice ids, amounts and deadlines survive compression", ["consolidate", *BILLING])
    service(workdir)

    console.print()
    console.print(Panel.fit("[bold green]demo complete[/]", border_style="green"))
    inspect_again(workdir)


if __name__ == "__main__":
    main()
