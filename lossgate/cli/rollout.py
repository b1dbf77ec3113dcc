"""A tenant's rollout: ``lossgate rollout show|set``, ``lossgate shadow report`` and
``lossgate review list|approve|refuse`` (:mod:`lossgate.policy.rollout`).

A tenant runs a live compressor, may run a second one in shadow (built, gated, stored and
published to the subject's shadow alias, which recall never reads; with the exploratory
gate, whatever the gate found, with every violation recorded; with a registry of its own
to try), and may require a person to approve each gated summary before the switch
publishes it.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

import typer
from rich.table import Table

from lossgate.cli.app import open_memory, out
from lossgate.cli.display import print_table
from lossgate.cli.ledger import AsJson, Subject, Tenant

__all__ = ["register"]

rollout_app = typer.Typer(help="A tenant's live and shadow compressors, and review.", no_args_is_help=True)
shadow_app = typer.Typer(help="Compare a tenant's shadow configuration with its live one.", no_args_is_help=True)
review_app = typer.Typer(help="Summaries waiting for a person: list, approve, refuse.", no_args_is_help=True)


def _show(tenant: str, plan: object, as_json: bool) -> None:
    record = plan.model_dump()  # type: ignore[attr-defined]
    if as_json:
        typer.echo(json.dumps(record, sort_keys=True))
        return
    shadow = record["shadow"] or "-"
    if record["shadow"]:
        shadow += f" ({record['shadow_gate']} gate"
        tried = record["shadow_registry"]
        shadow += f", registry v{tried.get('version')})" if tried else ")"
    out().print(
        f"rollout of {tenant}: live {record['live'] or '(the caller or worker default)'}, "
        f"shadow {shadow}, review {'required' if record['review'] else 'off'}",
        markup=False,
    )


@rollout_app.command("show")
def show(ctx: typer.Context, tenant: Tenant, as_json: AsJson = False) -> None:
    """The tenant's live and shadow compressors and whether review is required."""
    with open_memory(ctx) as memory:
        plan = memory.admin.rollout(tenant)
    _show(tenant, plan, as_json)


@rollout_app.command("set")
def set_(
    ctx: typer.Context,
    tenant: Tenant,
    live: Annotated[str | None, typer.Option("--live", metavar="SPEC", help="The compressor that publishes.")] = None,
    shadow: Annotated[
        str | None,
        typer.Option("--shadow", metavar="SPEC", help="A compressor that builds beside it, never published."),
    ] = None,
    no_shadow: Annotated[bool, typer.Option("--no-shadow", help="Stop the shadow configuration.")] = False,
    default_live: Annotated[bool, typer.Option("--default-live", help="Unset the live compressor.")] = False,
    review: Annotated[
        bool | None, typer.Option("--review/--no-review", help="Require a person to approve each summary.")
    ] = None,
    shadow_gate: Annotated[
        Literal["release", "exploratory"] | None,
        typer.Option(
            "--shadow-gate",
            metavar="MODE",
            help="release: the shadow alias gets only what the gate passes; "
            "exploratory: every shadow summary, its violations recorded.",
        ),
    ] = None,
    shadow_registry: Annotated[
        str | None,
        typer.Option(
            "--shadow-registry", metavar="FILE", help="A registry TOML the shadow lane builds and gates with."
        ),
    ] = None,
    no_shadow_registry: Annotated[
        bool, typer.Option("--no-shadow-registry", help="The shadow lane uses the loaded registry.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Change the tenant's rollout (SPEC: deterministic, chat or MODULE:CLASS; each new one is
    loaded once to check it, as the registry FILE is read). Other tenants are untouched."""
    from lossgate.cli.app import fail

    if shadow and no_shadow:
        fail("--shadow and --no-shadow contradict each other")
    if shadow_registry and no_shadow_registry:
        fail("--shadow-registry and --no-shadow-registry contradict each other")
    with open_memory(ctx) as memory:
        plan = memory.admin.set_rollout(
            tenant,
            live=live,
            shadow=shadow,
            review=review,
            clear_shadow=no_shadow,
            clear_live=default_live,
            shadow_gate=shadow_gate,
            shadow_registry=shadow_registry,
            clear_shadow_registry=no_shadow_registry,
        )
    _show(tenant, plan, as_json)


@shadow_app.command("report")
def report(ctx: typer.Context, tenant: Tenant, as_json: AsJson = False) -> None:
    """Each subject's latest shadow attempt beside its latest live one: status, gate outcome,
    the violations the shadow's gate found, the facts only one of them claims and those the
    shadow states otherwise, tokens, compression time, and what the shadow alias holds."""
    with open_memory(ctx) as memory:
        rows = memory.admin.shadow_report(tenant)
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row.record(), sort_keys=True, default=str))
        return
    table = Table(title=f"shadow against live, {tenant}", title_justify="left")
    for col in (
        "subject",
        "live",
        "shadow",
        "live outcome",
        "shadow outcome",
        "shadow violations",
        "only live",
        "only shadow",
        "stated otherwise",
        "tokens live/shadow",
        "compress s live/shadow",
        "shadow alias",
    ):
        table.add_column(col)

    def secs(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    for r in rows:
        table.add_row(
            r.subject_id,
            f"{r.live_compressor} {r.live_status}",
            f"{r.shadow_compressor} {r.shadow_status}",
            r.live_outcome or "-",
            r.shadow_outcome or "-",
            str(r.shadow_violations),
            ", ".join(r.only_live) or "-",
            ", ".join(r.only_shadow) or "-",
            ", ".join(r.changed) or "-",
            f"{r.live_tokens or '-'} / {r.shadow_tokens or '-'}",
            f"{secs(r.live_compress_s)} / {secs(r.shadow_compress_s)}",
            f"{r.shadow_alias} ({r.shadow_alias_state})" if r.shadow_alias else "-",
        )
    print_table(out(), table, empty="no shadow attempts")


@review_app.command("list")
def list_(ctx: typer.Context, tenant: Tenant, subject: Subject, as_json: AsJson = False) -> None:
    """The subject's summaries waiting for review."""
    with open_memory(ctx) as memory:
        waiting = memory.admin.artifacts(tenant, subject, states=["review"])
    if as_json:
        for a in waiting:
            typer.echo(
                json.dumps(
                    {
                        "artifact_id": a.artifact_id,
                        "covers_through": a.manifest.new_covers_through,
                        "gate": a.gate.get("outcome"),
                        "created_at": a.created_at.isoformat(),
                    }
                )
            )
        return
    table = Table(title=f"waiting for review, {tenant}/{subject}", title_justify="left")
    for col in ("artifact", "covers through", "gate", "created"):
        table.add_column(col)
    for a in waiting:
        table.add_row(
            a.artifact_id,
            str(a.manifest.new_covers_through),
            str(a.gate.get("outcome", "-")),
            a.created_at.isoformat(timespec="seconds"),
        )
    print_table(out(), table, empty="nothing waits for review")


@review_app.command("approve")
def approve(
    ctx: typer.Context,
    artifact_id: Annotated[str, typer.Argument(help="The waiting artifact.")],
    tenant: Tenant,
    subject: Subject,
) -> None:
    """Publish a waiting summary through the switch. Exit 1 if the switch refuses it."""
    with open_memory(ctx) as memory:
        attempt = memory.admin.approve(tenant, subject, artifact_id)
    if attempt is None or attempt.status != "published":
        out().print(f"{artifact_id} not published: {attempt.reason if attempt else 'no attempt'}", markup=False)
        raise typer.Exit(1)
    out().print(f"{artifact_id} approved and published", markup=False)


@review_app.command("refuse")
def refuse(
    ctx: typer.Context,
    artifact_id: Annotated[str, typer.Argument(help="The waiting artifact.")],
    tenant: Tenant,
    subject: Subject,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in its state).")] = "",
) -> None:
    """Refuse a waiting summary: kept, never published, never compressor input."""
    with open_memory(ctx) as memory:
        memory.admin.refuse(tenant, subject, artifact_id, reason=reason)
    out().print(f"{artifact_id} refused", markup=False)


def narrative_policy(
    ctx: typer.Context,
    tenant: Tenant,
    set_to: Annotated[
        str | None,
        typer.Option(
            "--set",
            metavar="omit|refuse",
            help=(
                "omit: publish a model's narrative without its sentences on a topic only the ledger states "
                "(kept on the attempt); refuse: fail the attempt instead."
            ),
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Show the tenant's narrative policy, or set it with --set."""
    with open_memory(ctx) as memory:
        policy = (
            memory.admin.narrative_policy(tenant)
            if set_to is None
            else memory.admin.set_narrative_policy(tenant, set_to)
        )
    if as_json:
        typer.echo(json.dumps({"tenant_id": tenant, "narrative_policy": policy}))
    else:
        out().print(f"tenant {tenant}: narrative policy {policy}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``rollout``, ``shadow``, ``review`` and ``narrative-policy`` to ``app``."""
    app.command("narrative-policy")(narrative_policy)
    app.add_typer(rollout_app, name="rollout")
    app.add_typer(shadow_app, name="shadow")
    app.add_typer(review_app, name="review")
