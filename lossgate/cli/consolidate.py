"""Consolidation and recall commands: consolidate, recall, embed, lineage, attempts, artifacts, jobs, worker.

Each command opens the memory, makes one library call and prints the result.
"""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import fail, open_memory, out, reranker_option
from lossgate.cli.display import event_table, fact_table, print_json_lines, print_table
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.derived_records import Attempt

__all__ = ["register"]

Tenant = Annotated[str, typer.Option("--tenant", "-t", help="Tenant id.", show_default=False)]
Subject = Annotated[str, typer.Option("--subject", "-s", help="Subject id.", show_default=False)]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
_JOB_STATUSES = ("pending", "running", "done", "review")
# No word longer than the help column at 80 columns (a longer one is cut: the example spec
# lossgate.testing.compressors:FlipBool is in the command's own text, which spans the width).
_COMPRESSOR_HELP = (
    "deterministic (the default); chat: an OpenAI-compatible model set by LOSSGATE_LLM_URL, "
    "LOSSGATE_LLM_MODEL and LOSSGATE_LLM_API_KEY; or MODULE:CLASS, a compressor class to import."
)

_STATUS_STYLE = {
    "published": "green",
    "gated": "green",
    "rejected": "red",
    "error": "red",
    "conflict": "yellow",
    "selected": "dim",
}


def _attempt_table(attempts: list[Attempt], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("#", "attempt", "status", "gate", "H", "epoch", "selected", "artifact", "violations / reason"):
        table.add_column(col, overflow="fold")
    for a in attempts:
        why = "\n".join(a.details or a.violations) or a.error or a.reason or ", ".join(a.losses)
        table.add_row(
            str(a.number),
            a.attempt_id,
            Text(a.status, style=_STATUS_STYLE.get(a.status, "")),
            a.gate_outcome or "-",
            str(a.high_water),
            str(a.input_epoch),
            str(len(a.selected_ids)),
            a.artifact_id or "-",
            why,
        )
    return table


def consolidate(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    budget: Annotated[
        int,
        typer.Option(
            "--budget",
            min=1,
            help=(
                "Token budget of the summary (of a hierarchy's root: its structured part; each period's digest has "
                "its own)."
            ),
        ),
    ] = 2000,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, metavar="SECS", help="Seconds the compressor may take.")
    ] = 60.0,
    direct: Annotated[bool, typer.Option("--direct", help="Rebuild from all inputs, not from the parent.")] = False,
    compressor: Annotated[str | None, typer.Option("--compressor", metavar="SPEC", help=_COMPRESSOR_HELP)] = None,
    hierarchy: Annotated[
        str,
        typer.Option(
            "--hierarchy",
            metavar="auto|always|never",
            help=(
                "Consolidate by parts, one gated digest per period under a root: auto (when the history "
                "exceeds --context, or is already a hierarchy), always or never."
            ),
        ),
    ] = "auto",
    split: Annotated[
        str | None,
        typer.Option(
            "--split",
            metavar="session|day|week|month",
            help=("The periods of a hierarchy (default: what the subject's current root used, else session)."),
        ),
    ] = None,
    context: Annotated[
        int | None,
        typer.Option(
            "--context",
            help=(
                "Tokens one compressor request may carry (default: what the subject's current root "
                "used, else the compressor's, else 8000)."
            ),
        ),
    ] = None,
    window: Annotated[
        int | None,
        typer.Option(
            "--window",
            help=(
                "Tokens of period digests a hierarchy's root inlines, newest first; the older ones "
                "stay its parts (default: what the subject's current root used, else 8000)."
            ),
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Build, gate and publish a summary of one subject. Exit 1 if nothing was published.
    With LOSSGATE_JUDGE_URL and LOSSGATE_JUDGE_MODEL set, a model judge also reads the narrative.

    --compressor lossgate.testing.compressors:FlipBool (a lossy one) shows the gate refusing it."""
    from lossgate.consolidate.hierarchy import HierarchyConfig
    from lossgate.errors import InvalidInput
    from lossgate.judge import ModelJudge

    try:
        tree = HierarchyConfig(
            mode=hierarchy,  # type: ignore[arg-type]
            split_by=split,  # type: ignore[arg-type]
            context_tokens=context,
            window_tokens=window,
        )
        config = ConsolidationConfig(budget_tokens=budget, timeout_s=timeout, incremental=not direct, hierarchy=tree)
    except InvalidInput as exc:
        fail(str(exc))
    chosen = _load_compressor(compressor) if compressor else None
    with open_memory(ctx) as memory:
        attempt = memory.consolidate(
            tenant, subject, config=config, compressor=chosen, judge=ModelJudge.from_env(os.environ)
        )
    if as_json:
        typer.echo(attempt.model_dump_json())
    elif attempt.status == "error":  # nothing was gated: the one line that says why is the whole story
        fail(f"consolidation of {tenant}/{subject} failed (attempt {attempt.attempt_id}): {attempt.error}", code=1)
    else:
        out().print(_attempt_table([attempt], title=f"consolidation of {tenant}/{subject}"))
    if attempt.status != "published":
        raise typer.Exit(1)


def _load_compressor(spec: str):  # type: ignore[no-untyped-def]
    """The compressor ``--compressor`` names; exit 2 with one line if it cannot be made."""
    import os

    from lossgate.consolidate.factory import load_compressor
    from lossgate.errors import ConfigError

    try:
        return load_compressor(spec, environ=os.environ)
    except ConfigError as exc:
        fail(f"--compressor: {exc}")


def recall(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    query: Annotated[str | None, typer.Option("--query", "-q", help="Keywords to search for.")] = None,
    k: Annotated[int, typer.Option("-k", help="At most this many events and non-critical facts.")] = 20,
    budget: Annotated[int | None, typer.Option("--budget", help="Token budget.")] = None,
    loss_aware: Annotated[
        bool,
        typer.Option(
            "--loss-aware/--loss-blind", help=("Rank a query's hits that the summary dropped a few places ahead.")
        ),
    ] = True,
    rerank: Annotated[
        str | None,
        typer.Option(
            "--rerank",
            metavar="URL|FOLDER",
            help=(
                "Reorder a query's top hits with this reranker: a /v1/rerank server's API root (its model from "
                "--rerank-model or LOSSGATE_RERANKER_MODEL) or a local cross-encoder's folder. Default: "
                "LOSSGATE_RERANKER."
            ),
        ),
    ] = None,
    rerank_model: Annotated[
        str | None,
        typer.Option(
            "--rerank-model",
            metavar="NAME",
            help=("The model the rerank server should use (default: LOSSGATE_RERANKER_MODEL)."),
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """What an agent should read: the fresh summary, or a raw fallback; critical facts always.
    With LOSSGATE_EMBEDDER set (local, or an embeddings server's URL), a query is also
    ranked by meaning; with a reranker (--rerank, or LOSSGATE_RERANKER), its top hits are
    then reordered by the reranker's scores."""
    with open_memory(ctx, semantic=True) as memory:
        memory.reranker = reranker_option(rerank, rerank_model)
        result = memory.recall(tenant, subject, query=query, k=k, budget=budget, loss_aware=loss_aware)
    if as_json:
        typer.echo(result.model_dump_json())
        return
    console = out()
    style = "green" if result.mode == "summary" else "yellow"
    console.print(
        Text.assemble(
            "mode: ",
            (result.mode, f"bold {style}"),
            f"   artifact: {result.artifact_id or '-'}   tokens: {result.tokens}",
        )
    )
    if result.summary:
        console.print(Text(result.summary))  # stored text is data, never rich markup
    console.print(fact_table(result.facts, title="facts"))
    if result.events:
        console.print(event_table(result.events, title="events" if result.mode == "raw_fallback" else "tail events"))


def lineage(ctx: typer.Context, artifact_id: str, tenant: Tenant, subject: Subject, as_json: AsJson = False) -> None:
    """An artifact (stale ones too: audit) with its manifest, inputs and parent chain."""
    with open_memory(ctx) as memory:
        view = memory.admin.lineage(tenant, subject, artifact_id)
    if as_json:
        typer.echo(view.model_dump_json())
        return
    a, m = view.artifact, view.artifact.manifest
    console = out()
    console.print(
        Text.assemble(
            ("artifact ", "bold"),
            (a.artifact_id, "cyan"),
            f"  state={a.state}",
            f"  gate={a.gate.get('outcome')}  path={m.path}",
        )
    )
    console.print(f"covers_through={m.new_covers_through} input_epoch={m.input_epoch} input_root={m.input_root}")
    console.print(
        f"expected alias: {m.expected_alias.parent_artifact_id} epoch {m.expected_alias.source_epoch} "
        f"covers {m.expected_alias.covers_through}"
    )
    console.print(
        f"compressor {m.compressor}@{m.compressor_version} prompt {m.prompt_version} "
        f"extractor {m.extractor_version} selector {m.selector_version} attempt {m.attempt}"
    )
    if a.state_reason:
        console.print(f"state reason: {a.state_reason}")
    for parent, state in view.ancestors:
        console.print(f"  derived from artifact {parent} ({state})")
    kinds: dict[str, int] = {}
    for e in view.edges:
        kinds[e.input_kind] = kinds.get(e.input_kind, 0) + 1
    console.print("inputs: " + ", ".join(f"{n} {k}s" for k, n in sorted(kinds.items())))
    for entry in view.tier_moves:
        d = entry.detail
        if entry.op == "tier":
            console.print(
                Text(
                    f"  tier {d.get('from')} -> {d.get('to')}: {len(d.get('event_ids', ()))} events "
                    f"at {d.get('now', entry.at.isoformat())}"
                )
            )
        else:
            console.print(
                Text(
                    f"  {d.get('reason', 'retention extended')}: {len(d.get('event_ids', ()))} events "
                    f"kept hot at {d.get('now', entry.at.isoformat())}"
                )
            )


def attempts(ctx: typer.Context, tenant: Tenant, subject: Subject, as_json: AsJson = False) -> None:
    """Every consolidation attempt of a subject, failed ones included, with violations."""
    with open_memory(ctx) as memory:
        found = memory.admin.attempts(tenant, subject)
    if as_json:
        print_json_lines(json.loads(a.model_dump_json()) for a in found)
        return
    if not found:
        fail(f"no consolidation attempts for {tenant}/{subject}", 1)
    out().print(_attempt_table(found, title=f"attempts of {tenant}/{subject}"))


def artifacts(ctx: typer.Context, tenant: Tenant, subject: Subject) -> None:
    """The subject's artifacts and the alias."""
    with open_memory(ctx) as memory:
        found = memory.admin.artifacts(tenant, subject)
        alias = memory.admin.alias(tenant, subject)
    table = Table(
        title=f"artifacts of {tenant}/{subject} (alias -> {alias.artifact_id or 'none'}, "
        f"epoch {alias.source_epoch}, covers {alias.covers_through})",
        title_justify="left",
    )
    for col in ("artifact", "state", "gate", "covers", "epoch", "path", "reason"):
        table.add_column(col, overflow="fold")
    for a in found:
        table.add_row(
            a.artifact_id,
            a.state,
            str(a.gate.get("outcome")),
            str(a.manifest.new_covers_through),
            str(a.manifest.input_epoch),
            a.manifest.path,
            a.state_reason or "",
        )
    out().print(table)


def jobs(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Annotated[str | None, typer.Option("--subject", "-s", help="Only this subject.")] = None,
    status: Annotated[
        list[str] | None,
        typer.Option("--status", help=f"Only jobs in this status ({', '.join(_JOB_STATUSES)}); repeatable."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """The rebuild queue of a tenant or subject; `--status review` lists the subjects whose
    consolidation failed repeatedly and waits for a person."""
    unknown = sorted(set(status or ()) - set(_JOB_STATUSES))
    if unknown:
        fail(f"unknown job status {', '.join(unknown)} (expected one of {', '.join(_JOB_STATUSES)})")
    with open_memory(ctx) as memory:
        found = memory.admin.jobs(tenant, subject, statuses=status)
    if as_json:
        print_json_lines(json.loads(j.model_dump_json()) for j in found)
        return
    table = Table(title=f"jobs of {tenant}{'/' + subject if subject else ''}", title_justify="left")
    for col in ("job", "subject", "status", "tries", "reason", "run after", "lease"):
        table.add_column(col, overflow="fold")
    for j in found:
        table.add_row(
            str(j.job_id),
            j.subject_id,
            Text(j.status, style="red" if j.status == "review" else ""),
            str(j.tries),
            j.reason,
            j.run_after.isoformat(timespec="seconds"),
            f"{j.lease_owner} until {j.lease_expires_at:%H:%M:%S}" if j.lease_owner else "-",
        )
    print_table(out(), table, empty="no jobs")


def worker(
    ctx: typer.Context,
    concurrency: Annotated[int, typer.Option("--concurrency", "-n", min=1, help="Worker processes.")] = 1,
    lease: Annotated[float, typer.Option("--lease", help="Seconds a claimed job is held between heartbeats.")] = 30.0,
    exit_when_idle: Annotated[bool, typer.Option("--exit-when-idle", help="Stop once no job is due.")] = False,
    compressor: Annotated[str | None, typer.Option("--compressor", metavar="SPEC", help=_COMPRESSOR_HELP)] = None,
    max_attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts",
            min=1,
            max=1000,
            help=("Failures in a row after which a subject waits for review instead of a retry."),
        ),
    ] = 5,
    backoff: Annotated[
        float,
        typer.Option(
            "--backoff",
            min=0,
            max=86_400,
            help=(
                "Seconds before the first retry of a failed attempt, doubled per further failure up to an hour (or --backoff, if longer)."
            ),
        ),
    ] = 30.0,
) -> None:
    """Run consolidation workers that drain the rebuild queue (SIGTERM finishes the current job).
    A job that fails, even by a crash, is recorded as a failed attempt and retried with
    backoff, then left for review; it never stops a worker.
    On PostgreSQL the --db login must be a member of lossgate_worker (docs/roles.md)."""
    import logging

    from lossgate.cli.app import CliState, cli_errors
    from lossgate.ops.worker import WorkerConfig, run_pool

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(message)s")
    state: CliState = ctx.find_root().obj
    if compressor:
        _load_compressor(compressor)  # a wrong spec fails here, once, not in every worker process
    with cli_errors():
        retries = ConsolidationConfig(
            max_attempts=max_attempts, backoff_base_s=backoff, backoff_max_s=max(backoff, 3600.0)
        )
        code = run_pool(
            state.db_url,
            concurrency,
            config=WorkerConfig(lease_s=lease, heartbeat_s=lease / 3),
            consolidation=retries,
            exit_when_idle=exit_when_idle,
            compressor=compressor,
        )
    raise typer.Exit(code)


def embed(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="Drop the model's vectors of the subject first "
            "and embed everything again (after changing the model behind a name).",
        ),
    ] = False,
) -> None:
    """Compute the vectors a subject's valid events and active facts lack, with the embedder
    LOSSGATE_EMBEDDER names (`local`, or an OpenAI-compatible server's URL with
    LOSSGATE_EMBEDDER_MODEL). Workers do this after each job; this runs it now."""
    with open_memory(ctx, semantic=True) as memory:
        report = memory.admin.embed(tenant, subject, rebuild=rebuild)
    dropped = f", {report.dropped} dropped first" if rebuild else ""
    skipped = f"; the embedder refused {len(report.skipped)}: {', '.join(report.skipped[:5])}" if report.skipped else ""
    out().print(f"{report.stored} vectors stored for {tenant}/{subject}{dropped}{skipped}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the consolidation commands to ``app``."""
    for command in (consolidate, recall, embed, lineage, attempts, artifacts, jobs, worker):
        app.command()(command)
