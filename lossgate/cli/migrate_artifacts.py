"""``lossgate migrate``: rehearse, then apply, a migration of the stored artifact format
(:mod:`lossgate.ops.migrate`).

``--rehearse`` copies a sample of the tenants' stored artifacts into memory, migrates and
checks each, writes nothing, and exits 1 if any document has a finding. ``--apply``
rehearses every document (not a sample) and writes only if that rehearsal is clean; it
exits 1, having written nothing, otherwise. Bad input exits 2. (Schema migrations are
``lossgate init``.)
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import err, fail, open_memory, out
from lossgate.ops import migrate
from lossgate.ops.migrate import Applied, Rehearsal

__all__ = ["register"]

SHOWN = 20  # refused documents listed in the table (--json lists them all)


def _summary(report: Rehearsal) -> Table:
    table = Table(title=f"artifacts to format {report.newest}", title_justify="left")
    for column in ("tenant", "stored", "rehearsed", "format 1", "format 2", "other format", "would change", "refused"):
        table.add_column(column, justify="left" if column == "tenant" else "right")
    for tenant, c in sorted(report.per_tenant.items()):
        other = sum(n for k, n in c.items() if k.startswith("format ") and k not in ("format 1", "format 2"))
        table.add_row(
            Text(tenant),
            *(
                str(n)
                for n in (c["stored"], c["checked"], c["format 1"], c["format 2"], other, c["changed"], c["refused"])
            ),
            style="red" if c["refused"] else None,
        )
    return table


def _refused(report: Rehearsal | Applied) -> Table | None:
    checks = report.refused if isinstance(report, Rehearsal) else report.batch_refused
    if not checks:
        return None
    table = Table(title=f"refused ({len(checks)}; the first {min(len(checks), SHOWN)})", title_justify="left")
    for column in ("artifact", "subject", "state", "format", "finding", "on", "detail"):
        table.add_column(column)
    for check in checks[:SHOWN]:
        for f in check.findings:
            table.add_row(
                Text(check.artifact_id),
                Text(check.subject_id),
                check.state,
                str(check.from_format),
                f.code,
                Text(f"{f.subject} ({f.against})"),
                Text(f.detail),
            )
    return table


def migrate_command(
    ctx: typer.Context,
    tenants: Annotated[
        list[str] | None,
        typer.Option(
            "--tenant", "-t", metavar="TENANT", help="A tenant whose artifacts to migrate (repeatable; required)."
        ),
    ] = None,
    rehearse: Annotated[
        bool, typer.Option("--rehearse", help="Migrate a sample on a copy in memory and check it; write nothing.")
    ] = False,
    apply: Annotated[
        bool, typer.Option("--apply", help="Rehearse every document, then write, only if that rehearsal is clean.")
    ] = False,
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample", metavar="N", help="Documents to rehearse, drawn at random (default 1000; --rehearse only)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample.")] = 0,
    batch: Annotated[
        int, typer.Option("--batch", metavar="N", help="Documents per read, and per write transaction.", min=1)
    ] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Migrate stored artifacts to the newest format: --rehearse on a sample first, then --apply."""
    if not tenants:
        fail("name at least one --tenant (nothing lists every tenant)")
    for tenant in tenants:
        if not tenant or len(tenant) > 200 or any(ch.isspace() or ch == "\x00" for ch in tenant):
            fail(f"--tenant {tenant!r}: must be 1 to 200 characters, with no whitespace or NUL")
    if rehearse == apply:
        fail("give one of --rehearse or --apply")
    if sample is not None and apply:
        fail("--apply rehearses every document, not a sample: drop --sample")
    if sample is not None and sample < 1:
        fail(f"--sample must be at least 1, got {sample}")
    console = err()
    with (
        open_memory(ctx) as memory,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=quiet or not console.is_terminal,
        ) as bar,
    ):
        tasks: dict[str, TaskID] = {}

        def progress(phase: str, done: int, total: int) -> None:
            task = tasks.setdefault(phase, bar.add_task(phase, total=total))
            bar.update(task, completed=done, total=total)

        if apply:
            report: Rehearsal | Applied = migrate.apply(
                memory.store, tenants, batch=batch, formats=migrate.FORMATS, progress=progress
            )
        else:
            report = migrate.rehearse(
                memory.store,
                tenants,
                sample=1000 if sample is None else sample,
                seed=seed,
                batch=batch,
                formats=migrate.FORMATS,
                progress=progress,
            )
    rehearsal = report if isinstance(report, Rehearsal) else report.rehearsal
    refused = not rehearsal.clean or (isinstance(report, Applied) and report.refused)
    if as_json:
        typer.echo(json.dumps(report.to_json(), sort_keys=True))
    else:
        _render(report, rehearsal)
    if refused:
        raise typer.Exit(1)


def _render(report: Rehearsal | Applied, rehearsal: Rehearsal) -> None:
    console = out()
    console.print(_summary(rehearsal))
    for table in (_refused(rehearsal), _refused(report) if isinstance(report, Applied) else None):
        if table is not None:
            console.print(table)
    notes = f"{rehearsal.checked} rehearsed in {rehearsal.seconds:.2f} s"
    if rehearsal.preexisting:
        notes += f"; {rehearsal.preexisting} differences from the ledger they had already (kept, not the migration's)"
    if rehearsal.kept:
        notes += f"; {rehearsal.kept} claim values that do not read as their type, kept as stored"
    console.print(Text(notes))
    if isinstance(report, Rehearsal):
        if not report.clean:
            console.print(Text("refused: --apply would write nothing", style="red"))
        else:
            console.print(
                Text(
                    "clean: "
                    + (
                        f"{report.changed} of {report.checked} would change; lossgate migrate "
                        "--apply rehearses every document again, then writes"
                        if report.changed
                        else "nothing to migrate in this sample"
                    ),
                    style="green",
                )
            )
    elif report.refused and report.stopped_at is None:
        console.print(
            Text("refused: the rehearsal of every document found the above; nothing was written", style="red")
        )
    elif report.refused:
        console.print(
            Text(
                f"stopped at the batch starting at {report.stopped_at}: {report.written} written before it", style="red"
            )
        )
    else:
        line = f"applied: {report.written} written in {report.batches} batches, {report.seconds:.2f} s"
        if report.skipped:
            line += f"; {report.skipped} changed while being migrated, left as they were (run it again)"
        console.print(Text(line, style="green"))


def register(app: typer.Typer) -> None:
    """Add ``lossgate migrate`` to ``app``."""
    app.command("migrate")(migrate_command)
