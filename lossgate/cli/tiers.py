"""Tier commands: ``lossgate demote`` and ``lossgate tier-policy``.

Events are hot (raw, recent), warm (dormant, covered by a gated published summary) or
cold (past the tenant's cold horizon; raw and still searched). ``demote`` moves them on
the tenant's clock (:mod:`lossgate.ledger.tiers`); ``tier-policy`` shows or sets that clock.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from typing import Annotated

import typer
from rich.text import Text

from lossgate.cli.app import fail, open_memory, out
from lossgate.cli.ledger import AsJson, Tenant
from lossgate.model.instants import SPAN_DAYS, read_instant

__all__ = ["register"]


def _instant(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return read_instant(value)
    except ValueError as exc:
        fail(f"--now: {exc}")


def demote(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Annotated[str | None, typer.Option("--subject", "-s", help="Only this subject.")] = None,
    now: Annotated[
        str | None, typer.Option("--now", help="The clock, ISO 8601 with a UTC offset (default: now).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Move the tenant's events between tiers: dormant hot events a fresh gated summary
    covers go warm, warm ones past the cold horizon go cold; a failed consolidation or a
    stale summary keeps them hot and the log says why."""
    with open_memory(ctx) as memory:
        done = memory.admin.demote(tenant, subject, now=_instant(now))
    if as_json:
        for d in done:
            typer.echo(json.dumps(dataclasses.asdict(d)))
        return
    console = out()
    for d in done:
        line = f"{d.subject_id}: {len(d.warm)} to warm, {len(d.cold)} to cold, {len(d.held)} kept hot"
        console.print(Text(line + (f" ({d.held_reason})" if d.held_reason and d.held else "")))
    if not done:
        console.print(f"no subjects for tenant {tenant}", markup=False)


def tier_policy(
    ctx: typer.Context,
    tenant: Tenant,
    dormancy_days: Annotated[
        float | None, typer.Option("--dormancy-days", min=0, max=SPAN_DAYS, help="Hot to warm after this.")
    ] = None,
    cold_days: Annotated[
        float | None, typer.Option("--cold-days", min=0, max=SPAN_DAYS, help="Warm to cold after this.")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Show the tenant's tier clock, or set it with --dormancy-days / --cold-days."""
    with open_memory(ctx) as memory:
        if dormancy_days is None and cold_days is None:
            policy = memory.admin.tier_policy(tenant)
        else:
            policy = memory.admin.set_tier_policy(
                tenant,
                dormancy=None if dormancy_days is None else timedelta(days=dormancy_days),
                cold_after=None if cold_days is None else timedelta(days=cold_days),
            )
    if as_json:
        typer.echo(json.dumps(policy.record()))
        return
    out().print(Text(f"tenant {tenant}: hot to warm after {policy.dormancy}, warm to cold after {policy.cold_after}"))


def register(app: typer.Typer) -> None:
    """Add ``demote`` and ``tier-policy`` to ``app``."""
    app.command("demote")(demote)
    app.command("tier-policy")(tier_policy)
