"""The response boundary on the command line: ``lossgate guard``, an agent's planned action
checked against the ledger before it acts."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import json_object_file, open_memory, out
from lossgate.cli.ledger import Subject, Tenant
from lossgate.model.derived_records import GuardResult

__all__ = ["register"]

EXIT_REFUSED = 1


def guard(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    action: Annotated[
        str, typer.Argument(metavar="ACTION.json", help="The planned action, a JSON object (- for stdin).")
    ],
    recall_id: Annotated[str | None, typer.Option("--recall", help="The recall the agent based it on.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Check an agent's planned action against the subject's facts, by the registry's guard
    rules, before it is carried out. Exit 0 allowed, 1 refused, 2 bad input."""
    planned = json_object_file(action)
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
    console.print(
        Text.assemble(
            "guard ",
            (result.guard_id, "cyan"),
            ": ",
            verdict,
            f"   rules read: {', '.join(result.rules) or 'none'}",
            f"   recall: {result.recall_id or '-'}",
        )
    )
    if result.refusals:
        table = Table(title_justify="left")
        for col in ("rule", "kind", "field", "value", "why", "fact", "sources"):
            table.add_column(col, overflow="fold")
        for r in result.refusals:
            table.add_row(
                r.rule,
                r.kind,
                r.field,
                Text(json.dumps(r.value, default=str)),
                Text(r.detail),
                r.fact_id or r.conflict_id or "-",
                ", ".join(r.source_event_ids) or "-",
            )
        console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``guard`` to ``app``."""
    app.command()(guard)
