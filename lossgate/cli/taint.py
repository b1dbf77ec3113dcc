"""Taint policy commands: ``lossgate taint set`` and ``lossgate taint list``.

A taint policy is a tenant-level rule that sets the trust of every event it matches, by
kind (the event's source: ``tool_result``, ``document``, ...) and/or actor (who said it;
for a tool result, the tool). Setting one applies it at once, in one transaction
(:meth:`lossgate.Admin.set_taint_policy`); each subject's log records it.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import open_memory, out
from lossgate.cli.ledger import AsJson, Reason, Tenant
from lossgate.model.records import EventKind, Trust

__all__ = ["register"]

taint_app = typer.Typer(
    help="Tenant-level taint policies: set the trust of every matching event.", no_args_is_help=True
)


@taint_app.command("set")
def set_policy(
    ctx: typer.Context,
    policy_id: Annotated[str, typer.Argument(metavar="POLICY", help="The policy's id (a new version if it exists).")],
    tenant: Tenant,
    trust: Annotated[Trust, typer.Option("--trust", help="The trust every matching event gets.", show_default=False)],
    kind: Annotated[EventKind | None, typer.Option("--kind", help="Match events of this kind (their source).")] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="Match events by this actor (a tool's name).")] = None,
    reason: Reason = "",
    as_json: AsJson = False,
) -> None:
    """Set or upgrade a taint policy and apply it now: matching events change trust, facts
    that now claim more than their sources are recorded again as quoted, derived summaries
    go stale and rebuilds are queued, in one transaction. Events appended later that match
    get the policy's trust."""
    with open_memory(ctx) as memory:
        outcome = memory.admin.set_taint_policy(tenant, policy_id, trust=trust, kind=kind, actor=actor, reason=reason)
    if as_json:
        typer.echo(outcome.model_dump_json())
        return
    p = outcome.policy
    if not outcome.changed:
        out().print(
            Text.assemble("taint policy ", (p.policy_id, "cyan"), f" v{p.version} already in force; nothing changed")
        )
        return
    subjects = sorted({s for s, _ in outcome.events})
    out().print(
        Text.assemble(
            "taint policy ",
            (p.policy_id, "cyan"),
            f" v{p.version}: {len(outcome.events)} event(s) of "
            f"{len(subjects)} subject(s) now {p.trust}; {len(outcome.demoted_facts)} fact(s) recorded again, "
            f"{len(outcome.stale_artifacts)} artifact(s) stale" + ("; rebuilds queued" if subjects else ""),
        )
    )


@taint_app.command("list")
def list_policies(
    ctx: typer.Context,
    tenant: Tenant,
    history: Annotated[bool, typer.Option("--history", help="Every version, not only those in force.")] = False,
    as_json: AsJson = False,
) -> None:
    """The tenant's taint policies in force (every version with --history)."""
    with open_memory(ctx) as memory:
        policies = memory.admin.taint_policies(tenant, history=history)
    if as_json:
        for p in policies:
            typer.echo(p.model_dump_json())
        return
    if not policies:
        out().print(f"no taint policies for tenant {tenant}", markup=False)
        return
    table = Table(title=f"taint policies of {tenant}", title_justify="left")
    for col in ("policy", "version", "kind", "actor", "trust", "set at", "reason"):
        table.add_column(col, overflow="fold")
    for p in policies:
        table.add_row(
            Text(p.policy_id, style="cyan"),
            str(p.version),
            p.kind or "any",
            Text(p.actor or "any"),
            p.trust,
            p.created_at.isoformat(timespec="seconds"),
            Text(p.reason),
        )
    out().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``taint`` command group to ``app``."""
    app.add_typer(taint_app, name="taint")
