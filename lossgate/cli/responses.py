"""The response boundary's evidence on the command line: ``lossgate respond`` records what
an agent answered or did after a recall, ``lossgate responses`` lists those records, and
``lossgate verify-recall`` says whether what a recall returned is still what memory says.

Each command opens the memory, makes one library call and prints the result; a missing
recall or guard result, or an action file that is not a JSON object, exits 2 with one line.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import fail, json_object_file, open_memory, out
from lossgate.cli.display import print_json_lines, print_table
from lossgate.cli.ledger import AsJson, Subject, Tenant
from lossgate.model.derived_records import RecallVerification, ResponseRecord

__all__ = ["register"]


EXIT_MOVED = 1  # verify-recall: what the recall returned changed or was erased since
_STATE_STYLE = {"unchanged": "bold green", "changed": "bold yellow", "erased": "bold red"}


def respond(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    recall_id: Annotated[
        str, typer.Option("--recall", help="The recall the agent based its response on.", show_default=False)
    ],
    answer: Annotated[str | None, typer.Option("--answer", help="What the agent answered (text).")] = None,
    action: Annotated[
        str | None,
        typer.Option(
            "--action", metavar="FILE.json", help=("What the agent did: a JSON object in a file (- for stdin).")
        ),
    ] = None,
    guard_id: Annotated[
        str | None,
        typer.Option("--guard", help=("The guard result of the action, if `lossgate guard` checked it first.")),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Record what an agent finally answered or did (at least one of --answer and --action),
    tied to the recall it read and the guard result of its action: the evidence `lossgate
    diagnose` reads at the response boundary."""
    if answer is None and action is None:
        fail("give --answer, --action or both")
    done = None if action is None else json_object_file(action)
    with open_memory(ctx) as memory:
        record = memory.respond(tenant, subject, recall_id, answer=answer, action=done, guard_id=guard_id)
    if as_json:
        typer.echo(record.model_dump_json())
        return
    out().print(
        Text.assemble(
            "response ",
            (record.response_id, "cyan"),
            f" recorded for recall {record.recall_id}",
            f" (guard {record.guard_id})" if record.guard_id else "",
            ("  redacted: it rests on content deleted since", "yellow") if record.redacted else "",
        )
    )


def _said(r: ResponseRecord) -> Text:
    """What a response holds, as a cell: its answer and its action, or that they were redacted."""
    if r.redacted is not None:
        return Text(f"redacted ({r.redacted.cause})", style="dim italic")
    parts = [r.answer] if r.answer is not None else []
    if r.action is not None:
        parts.append(json.dumps(r.action, ensure_ascii=False, sort_keys=True))
    return Text("\n".join(parts))  # stored text is data, never rich markup


def responses(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000, help="At most this many, newest first.")] = 100,
    as_json: AsJson = False,
) -> None:
    """The subject's response records, newest first: the recall and guard result each rests
    on, and what the agent answered or did (or that it was redacted by a deletion)."""
    with open_memory(ctx) as memory:
        found = memory.admin.responses(tenant, subject, limit=limit)
    if as_json:
        print_json_lines(json.loads(r.model_dump_json()) for r in found)
        return
    table = Table(title=f"responses of {tenant}/{subject}", title_justify="left")
    for col in ("response", "at", "recall", "guard", "answer / action"):
        table.add_column(col, overflow="fold")
    for r in found:
        table.add_row(r.response_id, r.at.isoformat(timespec="seconds"), r.recall_id, r.guard_id or "-", _said(r))
    print_table(out(), table, empty=f"no responses for {tenant}/{subject}")


def verify_recall(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    recall_id: Annotated[str, typer.Argument(metavar="RECALL_ID", help="The recall to check.")],
    as_json: AsJson = False,
) -> None:
    """Whether what a recall returned is still what memory says: unchanged (exit 0), changed
    or erased since (exit 1: a returned fact superseded or revoked, its summary no longer the
    live one, or something it returned deleted), with each change."""
    with open_memory(ctx) as memory:
        verdict = memory.verify_recall(tenant, subject, recall_id)
    if as_json:  # each change as the HTTP API gives it: {"id": ..., "what": ...}
        record = verdict.model_dump(mode="json")
        record["changes"] = [{"id": i, "what": what} for i, what in verdict.changes]
        typer.echo(json.dumps(record))
    else:
        _show(verdict)
    if verdict.state != "unchanged":
        raise typer.Exit(EXIT_MOVED)


def _show(v: RecallVerification) -> None:
    console = out()
    rendered = {
        True: "the rendered block hashes as recorded",
        False: "the rendered block no longer hashes as recorded",
        None: "",
    }[v.rendered_matches]
    console.print(
        Text.assemble(
            "recall ",
            (v.recall_id, "cyan"),
            ": ",
            (v.state, _STATE_STYLE[v.state]),
            f"   {rendered}" if rendered else "",
        )
    )
    if v.changes:
        table = Table(title_justify="left")
        table.add_column("id", overflow="fold")
        table.add_column("what")
        for item, what in v.changes:
            table.add_row(item, what)
        console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``respond``, ``responses`` and ``verify-recall`` to ``app``."""
    app.command()(respond)
    app.command()(responses)
    app.command("verify-recall")(verify_recall)
