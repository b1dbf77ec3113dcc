"""``lossgate ingest FILE.jsonl``: one file, one transaction, a progress bar on stderr.

The library does the work (:func:`lossgate.api.ingest.ingest_lines`); this module only
reads the file, draws progress and prints the report. A bad line exits 2 with
``error: FILE:LINE: problem`` and nothing from the file is written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from lossgate.api.ingest import IngestReport, ingest_lines
from lossgate.cli.app import err, fail, open_memory, out
from lossgate.cli.display import print_json_lines

__all__ = ["register"]


class _CountingLines:
    """Iterates a binary file's lines, counting the bytes read (the progress bar's unit)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self.bytes_read = 0

    def __iter__(self) -> Iterator[bytes]:
        for raw in self._fh:
            self.bytes_read += len(raw)
            yield raw


def _report_table(report: IngestReport) -> Table:
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    rows = [
        ("events appended", report.events_appended),
        ("duplicate events", report.event_duplicates),
        ("facts asserted", report.facts_asserted),
        ("duplicate facts", report.fact_duplicates),
        ("facts superseded", report.facts_superseded),
        ("facts deleted", report.facts_deleted),
        ("events deleted", report.events_deleted),
        ("events revoked", report.events_revoked),
        ("unchanged (already done)", report.unchanged),
    ]
    for label, count in rows:
        table.add_row(label, str(count), style="dim" if count == 0 else None)
    return table


def ingest(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE.jsonl", help="JSON Lines file, or - for stdin.")],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Ingest a JSON Lines file of events, facts and lifecycle operations as ONE transaction."""
    name = str(file)
    try:
        fh = sys.stdin.buffer if name == "-" else open(file, "rb")
    except OSError as exc:
        fail(f"cannot read {name}: {exc.strerror}")
    try:
        total = None if name == "-" else os.fstat(fh.fileno()).st_size
        lines = _CountingLines(fh)
        console = err()
        with (
            open_memory(ctx, create=True) as memory,
            Progress(
                TextColumn("ingesting"),
                BarColumn(),
                DownloadColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
                disable=quiet or not console.is_terminal,
            ) as bar,
        ):
            task = bar.add_task("ingest", total=total)
            report = ingest_lines(
                memory,
                lines,
                source=name,
                progress=lambda _line: bar.update(task, completed=lines.bytes_read),
            )
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    if as_json:
        print_json_lines([report.model_dump()])
        return
    console = out()
    console.print(Text.assemble("ingested ", (str(report.lines), "bold"), f" lines from {name}"))
    console.print(_report_table(report))


def register(app: typer.Typer) -> None:
    """Add ``lossgate ingest`` to ``app``."""
    app.command()(ingest)
