"""Operating commands: ``lossgate eval daily`` (daily fidelity metrics with blocking rules)
and ``lossgate report`` (an HTML page with figures).

``eval daily`` rebuilds a sample of each named tenant's subjects without publishing,
checks what recall would serve, stores the figures and exits 1 when a blocking rule
fires (an erroneous-new-fact rate above 0, a prose-drift rate above
``--max-prose-drift-rate``, 0 by default, or a stale artifact visible to recall),
whatever the averages say (:mod:`lossgate.ops.daily`). With LOSSGATE_JUDGE_URL and
LOSSGATE_JUDGE_MODEL set, a model judge also reads each rebuilt narrative. ``report`` writes one
self-contained HTML file, its PNG figures embedded (:mod:`lossgate.ops.report`).
Bad input exits 2 with one line, before anything is read or written.
"""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import err, fail, open_memory, out
from lossgate.ops.daily import DailyReport, Tally

__all__ = ["register", "daily_command", "report_command"]

Tenants = Annotated[
    list[str],
    typer.Option(
        "--tenant",
        "-t",
        help=("A tenant to measure (repeat for several). Required: a store is read one tenant at a time."),
        show_default=False,
        metavar="TENANT",
    ),
]


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        fail(f"{option}: {value!r} is not a date (YYYY-MM-DD)")


def _print_daily(report: DailyReport) -> None:
    table = Table(
        title=f"daily fidelity {report.day.isoformat()} (run {report.run_id}, {report.compressor}, "
        f"registry {', '.join(f'v{v}' for v in report.registry_versions)}, sample {report.sample}, "
        f"seed {report.seed!r})",
        title_justify="left",
    )
    # key facts kept, erroneous claims, conflicts kept; outcomes clean/acceptable/failed/error;
    # summaries whose own prose drifts; the model's narrative sentences left out; shadow
    # summaries the gate refused (published by the exploratory gate) over all shadow summaries
    for name in (
        "tenant",
        "schema",
        "rebuilt",
        "key facts",
        "erroneous",
        "conflicts",
        "reduction",
        "c/a/f/e",
        "failures",
        "prose drift",
        "omitted",
        "stale visible",
        "raw fallback",
        "shadow refused",
    ):
        table.add_column(name, justify="left" if name in ("tenant", "schema") else "right")

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"

    def row(name: str, schema: str, t: Tally, *, stale: bool = True, style: str = "") -> None:
        r = t.rates()
        table.add_row(
            Text(name),
            schema,
            str(t.subjects),
            f"{t.key_facts_kept}/{t.key_facts} {pct(r['key_fact_recall'])}",
            f"{t.erroneous_claims}/{t.claims}",
            f"{t.conflicts_kept}/{t.conflicts}",
            pct(r["token_reduction"]),
            f"{t.outcome_clean}/{t.outcome_acceptable}/{t.outcome_failed}/{t.outcome_error}",
            pct(r["failure_rate"]),
            f"{t.summaries_drifted}/{t.summaries_read}",
            f"{t.narrative_omitted}/{t.narrative_sentences}",
            str(t.stale_visible) if stale else "",
            str(t.raw_fallback) if stale else "",
            f"{t.shadow_refused}/{t.shadow_summaries}" if stale else "",
            style=style,
        )

    for tenant, tally in report.tenants.items():
        row(tenant, "all", tally)
        for version, vt in sorted(report.versions.get(tenant, {}).items()):
            if len(report.registry_versions) > 1:
                row("", f"v{version}", vt, stale=False)
    row("overall", "all", report.overall, style="bold")
    console = out()
    console.print(table)
    for finding in report.findings:
        console.print(Text(f"{finding.kind} {finding.tenant_id}/{finding.subject_id}: {finding.detail}"))
    verdict = "; ".join(report.blocking) or "no blocking rule fired"
    console.print(
        Text(("BLOCKED: " if report.blocked else "ok: ") + verdict, style="bold red" if report.blocked else "green")
    )
    if not report.stored:
        console.print(Text("(not stored: --no-store)", style="dim"))


def daily_command(
    ctx: typer.Context,
    tenant: Tenants,
    sample: Annotated[int, typer.Option("--sample", min=1, metavar="N", help="Subjects rebuilt per tenant.")] = 50,
    seed: Annotated[
        str | None,
        typer.Option(
            "--seed",
            help=("Seed of the sample (default: the day, so each day draws other subjects and a rerun the same)."),
        ),
    ] = None,
    day: Annotated[
        str | None,
        typer.Option("--day", metavar="YYYY-MM-DD", help="The day the figures are for (default: today, UTC)."),
    ] = None,
    compressor: Annotated[
        str | None,
        typer.Option(
            "--compressor",
            metavar="SPEC",
            help=(
                "The compressor under test: deterministic (the default), chat, or MODULE:CLASS, a compressor "
                "class to import."
            ),
        ),
    ] = None,
    registry_version: Annotated[
        list[int] | None,
        typer.Option(
            "--registry-version",
            min=1,
            metavar="VERSION",
            help=("Rebuild under this stored predicate registry version (repeatable; default: the newest)."),
        ),
    ] = None,
    budget: Annotated[
        int, typer.Option("--budget", min=1, metavar="TOKENS", help="Token budget of each rebuilt summary.")
    ] = 2000,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, metavar="SECS", help="Seconds the compressor may take.")
    ] = 60.0,
    # No min/max here: typer would print the range beside RATE, and at 80 columns the option's
    # name would be cut. The range is checked below, before anything is opened.
    max_prose_drift: Annotated[
        float,
        typer.Option(
            "--max-prose-drift-rate",
            metavar="RATE",
            help=(
                "Block when more than this share (from 0 to 1) of a tenant's rebuilt summaries has prose that "
                "drifts from the ledger (0: any)."
            ),
        ),
    ] = 0.0,
    no_store: Annotated[bool, typer.Option("--no-store", help="Measure without storing the figures.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON.")] = False,
) -> None:
    """Rebuild a sample of each tenant's summaries without publishing, measure their fidelity and
    what recall serves, store the figures; exit 1 when a blocking rule fires. With
    LOSSGATE_JUDGE_URL and LOSSGATE_JUDGE_MODEL set, a model judge also reads the narratives.

    --compressor lossgate.testing.compressors:InventClaim (it invents a fact) blocks the run."""
    from lossgate.cli.consolidate import _load_compressor
    from lossgate.errors import ConfigError
    from lossgate.judge import ModelJudge
    from lossgate.ops.daily import run_daily

    if not 0 <= max_prose_drift <= 1:  # NaN too
        fail(f"--max-prose-drift-rate: {max_prose_drift:g} is not a share from 0 to 1 (see lossgate eval daily --help)")
    chosen_day = _day(day, "--day")
    chosen = _load_compressor(compressor) if compressor else None
    try:
        judge = ModelJudge.from_env(os.environ)
    except ConfigError as exc:
        fail(str(exc))
    console = err()
    try:
        with open_memory(ctx) as memory:
            columns = (TextColumn("rebuild"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            # a bar for a person at a terminal; nothing on a pipe, where it would only add blank lines
            with Progress(*columns, console=console, transient=True, disable=as_json or not console.is_terminal) as bar:
                task = bar.add_task("subjects", total=None)
                report = run_daily(
                    memory.store,
                    tenant,
                    day=chosen_day,
                    sample=sample,
                    seed=seed,
                    compressor=chosen,
                    registry_versions=registry_version,
                    budget_tokens=budget,
                    timeout_s=timeout,
                    store_results=not no_store,
                    judge=judge,
                    max_prose_drift_rate=max_prose_drift,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
    finally:
        if judge is not None:
            judge.close()
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        _print_daily(report)
    if report.blocked:
        raise typer.Exit(1)


def report_command(
    ctx: typer.Context,
    tenant: Tenants,
    out_file: Annotated[Path, typer.Option("--out", metavar="FILE.html", help="Where to write the page.")],
    days: Annotated[int, typer.Option("--days", min=1, help="The window: this many days, ending --until.")] = 30,
    until: Annotated[
        str | None, typer.Option("--until", metavar="YYYY-MM-DD", help="The window's last day (default: today, UTC).")
    ] = None,
    locomo: Annotated[
        Path | None,
        typer.Option(
            "--locomo",
            metavar="FILE.json",
            help=("Results of `lossgate eval locomo --json FILE`, to show their table and figures."),
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report (PNG figures embedded): daily metrics over time, gate
    outcomes and violation codes, recall served from summary and raw, LoCoMo results."""
    from lossgate.ops.report import write_report

    last = _day(until, "--until")
    with open_memory(ctx) as memory:
        report = write_report(memory.store, tenant, out_file, days=days, until=last, locomo=locomo)
    typer.echo(f"wrote {out_file} ({len(report.figures)} figures embedded)")


def register(app: typer.Typer) -> None:
    """Add ``eval daily`` to the ``eval`` group (made by :mod:`lossgate.cli.gate`) and ``report`` to ``app``."""
    from lossgate.cli.gate import eval_app

    eval_app.command("daily")(daily_command)
    app.command("report")(report_command)
