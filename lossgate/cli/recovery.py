"""Quarantine and forward recovery: ``lossgate quarantine`` and ``lossgate recover``
(:mod:`lossgate.policy.quarantine`).

``quarantine`` takes a published summary (or a part of a hierarchy) out of recall at once:
recall falls back to the raw layer and coverage does not move backwards. ``recover``
builds a new summary from the currently valid inputs with a compressor the operator
chooses (the deterministic one by default), from scratch, and publishes it through the
compare-and-swap.
"""

from __future__ import annotations

from typing import Annotated

import typer

from lossgate.cli.app import open_memory, out
from lossgate.cli.consolidate import _COMPRESSOR_HELP, _attempt_table, _load_compressor
from lossgate.cli.ledger import AsJson, Subject, Tenant

__all__ = ["register"]


def quarantine(
    ctx: typer.Context,
    artifact_id: Annotated[str, typer.Argument(help="The published artifact to take out of recall.")],
    tenant: Tenant,
    subject: Subject,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the artifact's state and the log).")] = "",
    as_json: AsJson = False,
) -> None:
    """Take a published artifact out of recall now. Recall falls back to raw memory; the
    alias keeps its coverage; the artifact, its manifest and lineage stay stored."""
    import json
    from dataclasses import asdict

    with open_memory(ctx) as memory:
        done = memory.admin.quarantine(tenant, subject, artifact_id, reason=reason)
    if as_json:
        typer.echo(json.dumps(asdict(done), sort_keys=True))
        return
    if done.already:
        out().print(f"{artifact_id} was already quarantined", markup=False)
        return
    stale = f"; its root {', '.join(done.stale_roots)} went stale with it" if done.stale_roots else ""
    out().print(
        f"{artifact_id} quarantined: recall of {tenant}/{subject} falls back to raw memory{stale}", markup=False
    )


def recover(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    compressor: Annotated[str | None, typer.Option("--compressor", metavar="SPEC", help=_COMPRESSOR_HELP)] = None,
    as_json: AsJson = False,
) -> None:
    """Build a summary from the currently valid inputs with the chosen compressor (default:
    deterministic), from scratch, and publish it through the CAS (coverage never below the
    current). Exit 1 if nothing was published."""
    chosen = _load_compressor(compressor) if compressor else None
    with open_memory(ctx) as memory:
        attempt = memory.admin.recover(tenant, subject, compressor=chosen)
    if as_json:
        typer.echo(attempt.model_dump_json())
    else:
        out().print(_attempt_table([attempt], title=f"recovery of {tenant}/{subject}"))
    if attempt.status != "published":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``quarantine`` and ``recover`` to ``app``."""
    app.command("quarantine")(quarantine)
    app.command("recover")(recover)
