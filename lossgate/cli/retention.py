"""Retention commands: ``lossgate retention show|set|run``.

A tenant's retention policy gives raw events a time to live by kind and actor; expiry is a
deletion with all its guarantees (:mod:`lossgate.ledger.retention`). Workers expire the subject of
each job; ``run`` expires a whole tenant now.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Annotated, Any, get_args

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import fail, open_memory, out
from lossgate.cli.ledger import AsJson, Tenant
from lossgate.ledger.retention import RetentionPolicy
from lossgate.model.instants import read_instant
from lossgate.model.records import EventKind
from lossgate.model.values import ValueMismatch, coerce_value

__all__ = ["register"]

retention_app = typer.Typer(
    help="How long raw events live: a tenant's retention policy, and expiry.", no_args_is_help=True
)

# No brackets: rich help reads "[@ACTOR]" as markup and drops it.
_RULE_HELP = (
    "KIND=DURATION or KIND@ACTOR=DURATION, an ISO 8601 duration: message=P30D, tool_result@crm=P7D, "
    "*=P365D "
    "(KIND * for any kind). The first rule that matches an event decides; repeat for more rules."
)


def _rule(spec: str) -> dict[str, Any]:
    """One ``--rule`` (see :data:`_RULE_HELP`) as a retention rule's fields."""
    who, eq, ttl = spec.partition("=")
    kind, at, actor = who.partition("@")
    if not eq or not kind or (at and not actor):
        fail(f"--rule {spec!r}: expected {_RULE_HELP.split(',')[0]}")
    if kind != "*" and kind not in get_args(EventKind):
        fail(f"--rule {spec!r}: kind must be * or one of {', '.join(get_args(EventKind))}")
    return {"kind": None if kind == "*" else kind, "actor": actor or None, "ttl": _duration(f"--rule {spec!r}", ttl)}


def _duration(option: str, text: str) -> timedelta:
    """``text``, an ISO 8601 duration, or exit 2 naming ``option``."""
    try:
        duration: timedelta = coerce_value("duration", text.strip())
    except ValueMismatch as exc:
        fail(f"{option}: {exc}")
    return duration


def _show(tenant: str, policy: RetentionPolicy, as_json: bool) -> None:
    if as_json:
        typer.echo(policy.model_dump_json())
        return
    console = out()
    records = (
        f"recall, guard and response records live {policy.records}"
        if policy.records
        else "recall, guard and response records are kept"
    )
    if not policy.events:
        console.print(
            Text(
                f"tenant {tenant}: no retention rule for events (version {policy.version}): raw events "
                f"are kept; {records}"
            )
        )
        return
    console.print(Text(f"tenant {tenant}: retention policy version {policy.version}, set {policy.at}; {records}"))
    table = Table(title_justify="left")
    for col in ("#", "kind", "actor", "time to live"):
        table.add_column(col)
    for n, r in enumerate(policy.events, 1):
        table.add_row(str(n), r.kind or "*", r.actor or "*", str(r.ttl))
    console.print(table)


@retention_app.command("show")
def show(ctx: typer.Context, tenant: Tenant, as_json: AsJson = False) -> None:
    """The tenant's retention policy and its version."""
    with open_memory(ctx) as memory:
        _show(tenant, memory.admin.retention(tenant), as_json)


@retention_app.command("set")
def set_rules(
    ctx: typer.Context,
    tenant: Tenant,
    rules: Annotated[list[str] | None, typer.Option("--rule", help=_RULE_HELP, show_default=False)] = None,
    records: Annotated[
        str | None,
        typer.Option("--records", help="How long recall records, guard results and responses live (ISO 8601: P90D)."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Replace the tenant's retention rules (none: keep every raw event); a new version."""
    parsed = [_rule(r) for r in rules or []]
    kept = None if records is None else _duration(f"--records {records!r}", records)
    with open_memory(ctx) as memory:
        _show(tenant, memory.admin.set_retention(tenant, parsed, records=kept), as_json)


@retention_app.command("run")
def run(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Annotated[str | None, typer.Option("--subject", "-s", help="Only this subject.")] = None,
    now: Annotated[str | None, typer.Option("--now", help="The instant to expire at (default: now).")] = None,
    as_json: AsJson = False,
) -> None:
    """Expire now what the tenant's retention policy says has lived long enough."""
    at: datetime | None = None
    if now is not None:
        try:
            at = read_instant(now)
        except ValueError as exc:
            fail(f"--now: {exc}")
    with open_memory(ctx) as memory:
        done = memory.admin.expire(tenant, subject, now=at)
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "subject_id": x.subject_id,
                        "expired": x.expired,
                        "kept_for_critical_facts": x.kept_for_critical_facts,
                        "records_forgotten": x.records_forgotten,
                    }
                    for x in done
                ]
            )
        )
        return
    expired, kept = sum(len(x.expired) for x in done), sum(len(x.kept_for_critical_facts) for x in done)
    forgotten = sum(x.records_forgotten for x in done)
    out().print(
        Text(
            f"tenant {tenant}: {expired} events expired in {sum(1 for x in done if x.expired)} subjects; "
            f"{kept} kept past their time for an active critical fact; {forgotten} records forgotten"
        )
    )


def register(app: typer.Typer) -> None:
    """Add the ``retention`` command group to ``app``."""
    app.add_typer(retention_app, name="retention")
