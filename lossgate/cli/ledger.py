"""Ledger commands: setup, reads and lifecycle operations on one subject.

Each command opens the memory, makes one library call (names mirror :class:`Memory`
methods) and prints the result. Input that the library will reject is left for the
library to reject, so the CLI and the Python API give the same errors.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from pydantic import ValidationError
from rich.text import Text

from lossgate.api.ingest import describe_validation_error
from lossgate.cli.app import fail, open_memory, out
from lossgate.cli.display import (
    clock_text,
    conflict_json,
    conflict_table,
    event_json,
    event_table,
    fact_json,
    fact_table,
    history_json,
    log_table,
    predicate_table,
    print_json_lines,
    print_table,
    value_cell,
)
from lossgate.model.limits import UnreadableJson, read_json
from lossgate.model.records import Authority, EventState, Modality, NewFact, Polarity
from lossgate.model.registry import Registry
from lossgate.model.starter import is_starter

__all__ = ["register"]


def _an_id(value: str) -> str:
    """A tenant or subject id as the ledger takes it: refused here, before any read or write."""
    if not value or len(value) > 200 or any(ch.isspace() or ch == "\x00" for ch in value):
        raise typer.BadParameter("must be 1 to 200 characters, with no whitespace or NUL")
    return value


Tenant = Annotated[str, typer.Option("--tenant", "-t", help="Tenant id.", show_default=False, callback=_an_id)]
Subject = Annotated[str, typer.Option("--subject", "-s", help="Subject id.", show_default=False, callback=_an_id)]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON lines instead of a table.")]
Reason = Annotated[str, typer.Option("--reason", help="Why; kept in the ledger log.")]
RegistryFile = Annotated[
    Path,
    typer.Argument(
        exists=True,
        dir_okay=False,
        readable=True,
        metavar="FILE.toml",
        help="Predicate registry (TOML).",
    ),
]

# typer takes Literal choices for single options but not for lists: an Enum for --state.
StateChoice = Enum("StateChoice", {v: v for v in get_args(EventState)}, type=str)  # type: ignore[misc]

predicates_app = typer.Typer(help="Load, extend or show the predicate registry.", no_args_is_help=True)
delete_app = typer.Typer(help="Delete a fact or an event (content purged, tombstone kept).", no_args_is_help=True)


def parse_value(raw: str) -> Any:
    """``--value`` as JSON with exact decimals (``50`` is an int, ``50.0`` a decimal,
    ``false`` a bool), read as every JSON document is (:func:`lossgate.model.limits.read_json`:
    a key given twice or a number a double cannot hold raises ``UnreadableJson``); text
    that is not JSON at all (``UTC+01:00``) is taken as a string."""
    try:
        return read_json(raw)
    except UnreadableJson:
        raise
    except (ValueError, RecursionError):
        return raw


def parse_qualifiers(items: list[str]) -> dict[str, str]:
    """``k=v`` pairs into a mapping; raises a usage error (exit 2) for anything else."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="'--qualifier'")
        pairs[key] = value
    return pairs


# -- setup ------------------------------------------------------------------------------


def init(
    ctx: typer.Context,
    predicates: Annotated[
        Path | None,
        typer.Option(
            "--predicates",
            exists=True,
            dir_okay=False,
            readable=True,
            metavar="FILE.toml",
            help="Load this predicate registry (else the starter registry, on a store that has none).",
        ),
    ] = None,
    no_starter: Annotated[
        bool,
        typer.Option(
            "--no-starter",
            help="Leave a store that has no predicate registry without one.",
        ),
    ] = False,
) -> None:
    """Create or upgrade the schema (idempotent) and load a predicate registry: FILE.toml with
    --predicates, else the starter registry on a store that has none (a store that has one keeps it)."""
    if predicates is not None and no_starter:
        raise typer.BadParameter("--predicates and --no-starter contradict each other", param_hint="'--no-starter'")
    with open_memory(ctx, create=True, starter=predicates is None and not no_starter) as memory:
        version = memory.admin.migrate()
        registry: Registry | None
        if predicates is not None:
            registry = memory.admin.load_predicates(str(predicates))
        else:
            with memory.store.write() as tx:  # the stored one, else the starter (unless --no-starter) stored now
                registry = memory.registries.needed(tx)
    console = out()
    console.print(Text.assemble("schema version ", (str(version), "bold")))
    if registry is None:
        console.print(Text("no predicate registry loaded (lossgate predicates load FILE.toml)", style="yellow"))
    else:
        which = ", the starter registry" if is_starter(registry.document()) else ""
        console.print(
            Text.assemble(
                "predicate registry version ",
                (str(registry.version), "bold"),
                f" ({len(registry.predicates)} predicates{which})",
            )
        )


@predicates_app.command("load")
def predicates_load(
    ctx: typer.Context,
    file: RegistryFile,
    tenants: Annotated[
        list[str] | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help="Re-gate this tenant's summaries if the version tightens the gate (repeatable).",
        ),
    ] = None,
) -> None:
    """Store a predicate registry version (the same version again is a no-op). A version that
    adds or raises a critical predicate or changes a type re-gates each --tenant's summaries
    in the same transaction (a failure goes stale and queues a rebuild)."""
    with open_memory(ctx, create=True) as memory:
        registry = memory.admin.load_predicates(str(file), tenants=tenants or ())
    out().print(
        Text.assemble(
            "predicate registry version ",
            (str(registry.version), "bold"),
            f" ({len(registry.predicates)} predicates)",
        )
    )


@predicates_app.command("extend")
def predicates_extend(
    ctx: typer.Context,
    file: RegistryFile,
    tenants: Annotated[
        list[str] | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            help="Re-gate this tenant's summaries if the new version tightens the gate (repeatable).",
        ),
    ] = None,
) -> None:
    """Load FILE.toml on top of the stored registry (the starter registry on a store with none):
    its predicates and guard rules are added, one the registry defines otherwise is refused
    unless its table says override = true, nothing is removed; stored as the next version
    (the same file again stores nothing)."""
    with open_memory(ctx, create=True, starter=True) as memory:
        before = memory.admin.registry
        registry = memory.admin.extend_predicates(str(file), tenants=tenants or ())
    changed = before is None or registry.version != before.version
    out().print(
        Text.assemble(
            "predicate registry version ",
            (str(registry.version), "bold"),
            f" ({len(registry.predicates)} predicates)",
            "" if changed else ": unchanged",
        )
    )


@predicates_app.command("show")
def predicates_show(ctx: typer.Context) -> None:
    """Show the newest stored predicate registry."""
    with open_memory(ctx) as memory:
        registry = memory.admin.registry
    if registry is None:
        fail("no predicate registry is loaded (lossgate predicates load FILE.toml)")
    title = f"predicate registry version {registry.version}"
    out().print(predicate_table(sorted(registry.predicates.values(), key=lambda p: p.name), title=title))


# -- reads ------------------------------------------------------------------------------


def facts(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    all_: Annotated[bool, typer.Option("--all", help="Every status, not only active facts.")] = False,
    predicate: Annotated[str | None, typer.Option("--predicate", help="Only this predicate.")] = None,
    as_json: AsJson = False,
) -> None:
    """Active facts of a subject (every status with --all)."""
    with open_memory(ctx) as memory:
        found = memory.facts(tenant, subject, statuses=None if all_ else ("active",), predicate=predicate)
    if as_json:
        print_json_lines(fact_json(f) for f in found)
        return
    label = "facts" if all_ else "active facts"
    print_table(
        out(), fact_table(found, title=f"{label} of {tenant}/{subject}"), empty=f"no {label} for {tenant}/{subject}"
    )


def history(ctx: typer.Context, fact_id: str, tenant: Tenant, subject: Subject, as_json: AsJson = False) -> None:
    """A fact's supersession chain (oldest first), its conflicts and its log lines."""
    with open_memory(ctx) as memory:
        hist = memory.history(tenant, subject, fact_id)
    if as_json:
        print_json_lines([history_json(hist)])
        return
    console = out()
    console.print(fact_table(hist.chain, title=f"history of {fact_id} (oldest first)"))
    if hist.conflicts:
        console.print(conflict_table(hist.conflicts, title="conflicts"))
    print_table(console, log_table(hist.log, title="ledger log"), empty="no log lines")


def events(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    state: Annotated[
        list[StateChoice] | None, typer.Option("--state", help="Only events in this state (repeatable).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Events of a subject in sequence order (deleted ones show as tombstones)."""
    with open_memory(ctx) as memory:
        found = memory.events(tenant, subject, states=[s.value for s in state] if state else None)
    if as_json:
        print_json_lines(event_json(e) for e in found)
        return
    print_table(
        out(), event_table(found, title=f"events of {tenant}/{subject}"), empty=f"no events for {tenant}/{subject}"
    )


def clock(ctx: typer.Context, tenant: Tenant, subject: Subject, as_json: AsJson = False) -> None:
    """The subject's clock: high_water (largest seq) and input_epoch."""
    with open_memory(ctx) as memory:
        found = memory.admin.clock(tenant, subject)
    if as_json:
        print_json_lines([found.model_dump(mode="json")])
    else:
        out().print(clock_text(found))


def conflicts(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    all_: Annotated[bool, typer.Option("--all", help="Include resolved conflicts.")] = False,
    as_json: AsJson = False,
) -> None:
    """Unresolved conflicts of a subject (resolved ones too with --all)."""
    with open_memory(ctx) as memory:
        found = memory.conflicts(tenant, subject, unresolved_only=not all_)
    if as_json:
        print_json_lines(conflict_json(c) for c in found)
        return
    label = "conflicts" if all_ else "unresolved conflicts"
    print_table(
        out(), conflict_table(found, title=f"{label} of {tenant}/{subject}"), empty=f"no {label} for {tenant}/{subject}"
    )


# -- lifecycle --------------------------------------------------------------------------


def supersede(
    ctx: typer.Context,
    old_fact_id: Annotated[str, typer.Argument(metavar="OLD_FACT_ID", help="The active fact to replace.")],
    tenant: Tenant,
    subject: Subject,
    value: Annotated[
        str,
        typer.Option(
            "--value", help='New value as JSON (50, false, "x", {...}); non-JSON text is a string.', show_default=False
        ),
    ],
    source: Annotated[
        list[str], typer.Option("--source", help="Event id the new value rests on (repeatable).", show_default=False)
    ],
    fact_id: Annotated[
        str | None, typer.Option("--fact-id", help="Id of the new fact (default: derived from content).")
    ] = None,
    qualifier: Annotated[
        list[str] | None,
        typer.Option("--qualifier", "-q", help="KEY=VALUE (repeatable). Not inherited from the old fact."),
    ] = None,
    polarity: Annotated[Polarity, typer.Option("--polarity")] = "positive",
    modality: Annotated[Modality, typer.Option("--modality")] = "asserted",
    authority: Annotated[Authority, typer.Option("--authority")] = "user",
) -> None:
    """Replace an active fact with a new value; the old fact is kept as superseded."""
    quals = parse_qualifiers(qualifier or [])
    with open_memory(ctx) as memory:
        # The predicate is the old fact's (supersession never changes it): read it first.
        old = memory.fact(tenant, subject, old_fact_id)
        new = _new_fact(
            tenant_id=tenant,
            subject_id=subject,
            fact_id=fact_id,
            predicate=old.predicate,
            value=parse_value(value),
            qualifiers=quals,
            polarity=polarity,
            modality=modality,
            authority=authority,
            source_event_ids=source,
        )
        fact = memory.supersede(tenant, subject, old_fact_id, new)
    out().print(
        Text.assemble(
            "superseded ",
            (old_fact_id, "cyan"),
            " by ",
            (fact.fact_id, "cyan"),
            f": {fact.predicate} = ",
            value_cell(fact.value_type, fact.value),
        )
    )


def _new_fact(**fields: Any) -> NewFact:
    try:
        return NewFact(**fields)
    except ValidationError as exc:
        fail(describe_validation_error(exc))


@delete_app.command("fact")
def delete_fact(ctx: typer.Context, fact_id: str, tenant: Tenant, subject: Subject, reason: Reason = "") -> None:
    """Delete a fact: value and qualifiers purged, id and hash kept."""
    with open_memory(ctx) as memory:
        fact = memory.delete_fact(tenant, subject, fact_id, reason=reason)
    out().print(Text.assemble("deleted fact ", (fact.fact_id, "cyan"), f" ({fact.predicate}); tombstone kept"))


@delete_app.command("event")
def delete_event(ctx: typer.Context, event_id: str, tenant: Tenant, subject: Subject, reason: Reason = "") -> None:
    """Delete an event: text and payload purged, id and hash kept; facts resting only on it leave."""
    with open_memory(ctx) as memory:
        event = memory.delete_event(tenant, subject, event_id, reason=reason)
    out().print(Text.assemble("deleted event ", (event.event_id, "cyan"), "; tombstone kept"))


def revoke(ctx: typer.Context, event_id: str, tenant: Tenant, subject: Subject, reason: Reason = "") -> None:
    """Revoke an event: kept for audit, out of the authorized view; facts resting only on it leave."""
    with open_memory(ctx) as memory:
        event = memory.revoke_event(tenant, subject, event_id, reason=reason)
    out().print(Text.assemble("revoked event ", (event.event_id, "cyan")))


def compact(ctx: typer.Context) -> None:
    """Make deleted text leave the database files too: merge the full-text indexes, VACUUM,
    truncate the WAL (SQLite); VACUUM the lossgate tables (PostgreSQL). Run it after erasure
    requests; it takes the write lock while it runs."""
    with open_memory(ctx) as memory:
        report = memory.admin.compact()
    line = Text.assemble("compacted: ", ", ".join(report.steps), f" in {report.seconds:.2f} s")
    if report.bytes_before is not None and report.bytes_after is not None:
        line.append(f"; {report.bytes_before:,} -> {report.bytes_after:,} bytes")
    out().print(line)


def extract(
    ctx: typer.Context,
    tenant: Tenant,
    subject: Subject,
    review: Annotated[bool, typer.Option("--review", help="List the proposals waiting for review instead.")] = False,
    accept: Annotated[
        str | None,
        typer.Option(
            "--accept",
            metavar="PROPOSAL",
            help=("Accept a proposal waiting for review: it becomes a fact, or opens a conflict."),
        ),
    ] = None,
    reject: Annotated[
        str | None,
        typer.Option(
            "--reject", metavar="PROPOSAL", help=("Reject a proposal waiting for review (kept, with --reason).")
        ),
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why a proposal is rejected.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines instead of a table.")] = False,
) -> None:
    """Propose facts from the subject's events not read before (amounts, dates, ids and counts
    named by a predicate's registry cues): each is asserted or kept for review by its
    predicate's policy, or refused, and recorded. --review lists those waiting for a person;
    --accept and --reject decide one."""
    from rich.table import Table

    if sum((review, accept is not None, reject is not None)) > 1:
        fail("choose one of --review, --accept and --reject", 2)
    with open_memory(ctx) as memory:
        if accept is not None:
            found = [memory.admin.accept_proposal(tenant, subject, accept)]
        elif reject is not None:
            found = [memory.admin.reject_proposal(tenant, subject, reject, reason=reason)]
        elif review:
            found = memory.admin.proposals(tenant, subject, statuses=["review"])
        else:
            found = memory.extract(tenant, subject)
    if as_json:
        for p in found:
            typer.echo(p.model_dump_json())
        return
    table = Table(title=f"proposals of {tenant}/{subject}", title_justify="left")
    for col in ("proposal", "status", "predicate", "value", "authority", "sources", "fact / reason"):
        table.add_column(col, overflow="fold")
    for p in found:
        table.add_row(
            p.proposal_id,
            p.status,
            p.predicate,
            json.dumps(p.value, default=str),
            p.authority,
            ", ".join(p.source_event_ids),
            p.fact_id or p.reason or "",
        )
    if found:
        out().print(table)
    else:
        out().print("no proposals" if review else "nothing new to propose", markup=False)


def register(app: typer.Typer) -> None:
    """Add the ledger commands to ``app``."""
    app.command()(init)
    app.add_typer(predicates_app, name="predicates")
    app.command()(facts)
    app.command()(history)
    app.command()(events)
    app.command()(clock)
    app.command()(conflicts)
    app.command()(supersede)
    app.add_typer(delete_app, name="delete")
    app.command()(revoke)
    app.command()(compact)
    app.command()(extract)
