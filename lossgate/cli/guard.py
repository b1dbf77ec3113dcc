"""The response boundary on the command line: ``lossgate guard``, an agent's planned action
checked against the ledger before it acts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import fail, open_memory, out
from lossgate.derived import GuardResult
from lossgate.errors import InvalidInput
from lossgate.limits import read_json

__all__ = ["register"]

Tenant = Annotated[str, typer.Option("--tenant", "-t", help="Tenant id.", show_default=False)]
Subject = Annotated[str, typer.Option("--subject", "-s", help="Subject id.", show_default=False)]

EXIT_REFUSED = 1


def _action(path: str) -> Any:
    """The action in the file at ``path`` (``-``: standard input), read as every boundary reads JSON."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}")
    try:
        return read_json(text)
    except (ValueError, RecursionError, InvalidInput) as exc:  # InvalidInput: a key given twice
        fail(f"{path}: not a JSON document ({' '.join(str(exc).split())[:200]})")


def guard(
    ctx: typer.Context, tenant: Tenant, subject: Subject,
    action: Annotated[str, typer.Argument(metavar="ACTION.json", help="The planned action, a JSON object (- for stdin).")],
    recall_id: Annotated[Optional[str], typer.Option("--recall", help="The recall the agent based it on.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Check an agent's planned action against the subject's facts, by the registry's guard
    rules, before it is carried out. Exit 0 allowed, 1 refused, 2 bad input."""
    planned = _action(action)
    with open_memory(ctx) as memory:
        result = memory.guard(tenant, subject, planned, recall_id=recall_id)
    if as_json:
        typer.echo(result.model_dump_json())
    else:
        _show(result)
    if not result.allowed:
        raise typer.Exit(EXIT_REFUSED)


def _show(result: GuardResult) -> None:
    console = out()
    verdict = ("allowed", "bold green") if result.allowed else ("refused", "bold red")
    console.print(Text.assemble("guard ", (result.guard_id, "cyan"), ": ", verdict,
                                f"   rules read: {', '.join(result.rules) or 'none'}",
                                f"   recall: {result.recall_id or '-'}"))
    if result.refusals:
        table = Table(title_justify="left")
        for col in ("rule", "kind", "field", "value", "why", "fact", "sources"):
            table.add_column(col, overflow="fold")
        for r in result.refusals:
            table.add_row(r.rule, r.kind, r.field, Text(json.dumps(r.value, default=str)), Text(r.detail),
                          r.fact_id or r.conflict_id or "-", ", ".join(r.source_event_ids) or "-")
        console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``guard`` to ``app``."""
    app.command()(guard)
