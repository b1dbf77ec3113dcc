"""The ``lossgate`` command line: a thin layer over :mod:`lossgate` (see ``lossgate --help``).

Each command group is a module exposing ``register(app)``; :data:`GROUPS` lists them in
the order their commands appear. Add a group by writing its module and listing it here.
"""

from __future__ import annotations

from types import ModuleType

from lossgate.cli import (
    consolidate,
    diagnose,
    gate,
    guard,
    ingest,
    keys,
    ledger,
    mcp,
    migrate_artifacts,
    ops,
    recovery,
    responses,
    retention,
    rollout,
    serve,
    taint,
    tiers,
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

for _group in GROUPS:
    _group.register(app)


def main() -> None:
    """Console-script entry point (``lossgate = "lossgate.cli:main"``)."""
    app()
