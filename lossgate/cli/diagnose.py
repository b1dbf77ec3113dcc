"""``lossgate diagnose ATTEMPT_ID``: write one attempt's diagnosis bundle (:mod:`lossgate.ops.diagnose`).

It opens the memory, builds the bundle (one library call), writes it and prints which
boundary diverged first. An unknown attempt exits 2 with one line and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import EXIT_STORE, cli_errors, fail, open_memory, out

__all__ = ["register"]

Tenant = Annotated[str, typer.Option("--tenant", "-t", help="Tenant id.", show_default=False)]
Subject = Annotated[str, typer.Option("--subject", "-s", help="Subject id.", show_default=False)]
_STYLE = {"ok": "green", "diverged": "bold red", "unchecked": "yellow"}


def diagnose(
    ctx: typer.Context,
    attempt_id: Annotated[str, typer.Argument(help="The attempt (`lossgate attempts` lists them).")],
    tenant: Tenant,
    subject: Subject,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="DIR",
            help=(
                "Directory to write the bundle in (created if missing): diagnose-ATTEMPT_ID/, or "
                "diagnose-ATTEMPT_ID.tar.gz with --archive. An existing bundle is never overwritten."
            ),
        ),
    ] = Path("."),
    archive: Annotated[bool, typer.Option("--archive", help="Write one .tar.gz instead of a directory.")] = False,
    include_text: Annotated[
        bool,
        typer.Option(
            "--include-text",
            help=(
                "Admin option: also write the raw text (event text and payloads, summaries, raw compressor output, "
                "queries, string values). Without it, each is replaced by its sha256 and length."
            ),
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Write a sanitized diagnosis bundle of one consolidation attempt: its selected sources,
    the expected facts, the immediate and read-back artifacts, versions, the gate's result,
    the recalls that served it and the responses made after them, and the first boundary
    where a fact diverged (selection, compression, storage, retrieval or response)."""
    from lossgate.ops.diagnose import bundle_name, write_bundle
    from lossgate.ops.diagnose import diagnose as build

    with open_memory(ctx) as memory:
        bundle = build(memory, tenant, subject, attempt_id, include_text=include_text)
    target = out_dir / bundle_name(bundle.attempt_id, archive=archive)
    try:
        with cli_errors():
            written = write_bundle(bundle, target, archive=archive)
    except OSError as exc:
        fail(f"cannot write the bundle to {target}: {exc.strerror or exc}", EXIT_STORE)
    summary = {**bundle.summary(), "path": str(written)}
    if as_json:
        typer.echo(json.dumps(summary, sort_keys=True))
        return
    table = Table(title=f"attempt {bundle.attempt_id} of {tenant}/{subject}: {bundle.note}", title_justify="left")
    for col in ("boundary", "status", "findings"):
        table.add_column(col, overflow="fold")
    for check in bundle.checks:
        lines = [
            f"{f.subject}: {f.code}"
            + (
                f" ({f.expected_type} -> {f.observed_type})"
                if f.expected_type and f.expected_type != f.observed_type
                else ""
            )
            + (f" in {f.recall_id}" if f.recall_id else "")
            for f in check.findings
        ]
        table.add_row(
            check.boundary, Text(check.status, style=_STYLE[check.status]), Text("\n".join(lines) or check.note)
        )  # ids are data, never rich markup
    console = out()
    console.print(table)
    console.print(Text(f"bundle written to {written}" + ("" if include_text else " (text as sha256 and length)")))


def register(app: typer.Typer) -> None:
    """Add ``lossgate diagnose`` to ``app``."""
    app.command()(diagnose)
