"""The ``lossgate`` command line: a thin layer over :mod:`lossgate` (see ``lossgate --help``).

Each command group is a module exposing ``register(app)``; :data:`GROUPS` lists them in
the order their commands appear. Add a group by writing its module and listing it here.
"""

from __future__ import annotations

import inspect
from types import ModuleType

import typer

from lossgate.cli import (
    consolidate, diagnose, gate, guard, ingest, keys, ledger, mcp, migrate_artifacts, ops, recovery, responses,
    retention, rollout, serve, taint, tiers,
)
from lossgate.cli.app import app

__all__ = ["app", "main", "GROUPS"]

GROUPS: tuple[ModuleType, ...] = (
    ledger,  # init, predicates, facts, history, events, clock, conflicts, supersede, delete, revoke
    ingest,  # ingest FILE.jsonl
    consolidate,  # consolidate, recall, embed, lineage, attempts, artifacts, jobs, worker
    guard,  # guard ACTION.json
    responses,  # respond, responses, verify-recall RECALL_ID
    gate,  # check FILE.json, eval mutations
    taint,  # taint set, taint list
    tiers,  # demote, tier-policy
    retention,  # retention show|set|run
    recovery,  # quarantine, recover
    rollout,  # rollout show|set, shadow report, review list|approve|refuse
    diagnose,  # diagnose ATTEMPT_ID
    migrate_artifacts,  # migrate --rehearse / --apply (the stored artifact format)
    ops,  # eval daily, report
    keys,  # keys create|list|revoke
    serve,  # serve (the HTTP service)
    mcp,  # mcp (the MCP server: memory as tools for agents)
)


def _one_line_summaries(typer_app: typer.Typer) -> None:
    """Give every command its help's first paragraph, on one line, as the summary a command
    list shows: rich help keeps a docstring's line breaks there, so a list at 80 columns
    would break each summary where the source does rather than where the terminal ends."""
    for info in typer_app.registered_commands:
        text = info.help or (inspect.getdoc(info.callback) if info.callback else None) or ""
        if info.short_help is None and text:
            info.short_help = " ".join(text.split("\n\n")[0].split())
    for group in typer_app.registered_groups:
        if isinstance(group.typer_instance, typer.Typer):
            _one_line_summaries(group.typer_instance)


for _group in GROUPS:
    _group.register(app)
_one_line_summaries(app)


def main() -> None:
    """Console-script entry point (``lossgate = "lossgate.cli:main"``)."""
    app()
