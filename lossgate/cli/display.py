"""How the CLI shows records: rich tables for people, JSON lines for programs.

Every cell holding stored data is a :class:`rich.text.Text`, never a markup string:
event text and fact values may be untrusted, and ``[bold]`` in them must print as is.
Typed values are rendered so their type stays visible (invariant 9): a bool prints as
``false``, a string as ``"false"``, money as ``14250.00 USD``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lossgate.model.records import Clock, Conflict, Event, Fact, FactHistory, LedgerEntry, Predicate
from lossgate.model.values import Money, encode_value

__all__ = [
    "value_cell",
    "fact_json",
    "event_json",
    "conflict_json",
    "history_json",
    "print_json_lines",
    "fact_table",
    "event_table",
    "conflict_table",
    "log_table",
    "predicate_table",
    "clock_text",
    "print_table",
]

_STATUS_STYLE = {
    "active": "green",
    "superseded": "yellow",
    "deleted": "red",
    "revoked": "magenta",
    "valid": "green",
    "unresolved": "red",
    "resolved": "dim",
}


def value_cell(value_type: str, value: Any) -> Text:
    """A typed value for a table cell; ``(purged)`` once deleted."""
    if value is None:
        return Text("(purged)", style="dim italic")
    if value_type == "bool":
        return Text("true" if value else "false", style="bold")
    if value_type == "money" and isinstance(value, Money):
        return Text(f"{value.amount} {value.currency}")
    if value_type == "string":
        return Text(json.dumps(value, ensure_ascii=False))  # quoted: "false" is not false
    encoded = encode_value(value_type, value)
    return Text(encoded if isinstance(encoded, str) else json.dumps(encoded))


def _qualifiers(pairs: Iterable[tuple[str, str]]) -> Text:
    return Text("\n".join(f"{k}={v}" for k, v in pairs))  # one per line: narrow, never split


def _status(status: str) -> Text:
    return Text(status, style=_STATUS_STYLE.get(status, ""))


def _ts(value: Any) -> str:
    return value.isoformat() if value is not None else ""


# -- JSON -------------------------------------------------------------------------------


def fact_json(fact: Fact) -> dict[str, Any]:
    """A fact as JSON: the value in its exact stored form beside ``value_type``."""
    return {
        "fact_id": fact.fact_id,
        "tenant_id": fact.tenant_id,
        "subject_id": fact.subject_id,
        "seq": fact.seq,
        "predicate": fact.predicate,
        "value_type": fact.value_type,
        "value": None if fact.value is None else encode_value(fact.value_type, fact.value),
        "qualifiers": dict(fact.qualifiers),
        "polarity": fact.polarity,
        "modality": fact.modality,
        "authority": fact.authority,
        "source_event_ids": list(fact.source_event_ids),
        "status": fact.status,
        "supersedes": fact.supersedes,
        "superseded_by": fact.superseded_by,
        "valid_from": _ts(fact.valid_from) or None,
        "recorded_at": _ts(fact.recorded_at),
        "registry_version": fact.registry_version,
        "content_hash": fact.content_hash,
    }


def event_json(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json")


def conflict_json(conflict: Conflict) -> dict[str, Any]:
    return conflict.model_dump(mode="json")


def history_json(history: FactHistory) -> dict[str, Any]:
    return {
        "fact_id": history.fact_id,
        "chain": [fact_json(f) for f in history.chain],
        "conflicts": [conflict_json(c) for c in history.conflicts],
        "log": [e.model_dump(mode="json") for e in history.log],
    }


def print_json_lines(rows: Iterable[dict[str, Any]]) -> None:
    """One compact JSON object per line on stdout (plain print: no rich wrapping)."""
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))


# -- tables -----------------------------------------------------------------------------


def fact_table(facts: Iterable[Fact], *, title: str | None = None) -> Table:
    """Facts as a table; the value type sits under the predicate to save a column."""
    table = _table(title)
    # Ids and one-word columns never wrap; when the terminal is narrow, rich folds the
    # free-form ones (value, predicate, qualifiers, sources), widest first.
    for name in (
        "fact id",
        "predicate",
        "value",
        "qualifiers",
        "polarity",
        "modality",
        "authority",
        "sources",
        "status",
    ):
        table.add_column(name, overflow="fold", no_wrap=name in _ONE_WORD)
    for f in facts:
        table.add_row(
            Text(f.fact_id, style="cyan"),
            Text.assemble(f.predicate, "\n", (f.value_type, "dim")),
            value_cell(f.value_type, f.value),
            _qualifiers(f.qualifiers),
            Text(f.polarity, style="bold red" if f.polarity == "negative" else ""),
            Text(f.modality, style="yellow" if f.modality != "asserted" else ""),
            Text(f.authority, style="red" if f.authority == "untrusted" else ""),
            Text("\n".join(f.source_event_ids)),
            _status(f.status),
        )
    return table


_ONE_WORD = frozenset(
    {
        "fact id",
        "polarity",
        "modality",
        "authority",
        "status",
        "seq",
        "event id",
        "kind",
        "trust",
        "state",
        "#",
        "op",
        "conflict id",
    }
)


def _table(title: str | None) -> Table:
    # A light box and no left padding: lossgate's tables are wide, columns are what matter.
    # Cells wrap rather than truncate: rich narrows the widest columns (free text) first.
    return Table(
        title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False
    )


def event_table(events: Iterable[Event], *, title: str | None = None) -> Table:
    table = _table(title)
    for name in ("seq", "event id", "kind", "actor", "trust", "state", "occurred at", "text"):
        table.add_column(name, overflow="fold", no_wrap=name in _ONE_WORD, justify="right" if name == "seq" else "left")
    for e in events:
        text = Text("(purged)", style="dim italic") if e.text is None else Text(e.text)
        actor = Text("(purged)", style="dim italic") if e.actor is None else Text(e.actor)
        table.add_row(
            str(e.seq),
            Text(e.event_id, style="cyan"),
            e.kind,
            actor,
            Text(e.trust, style="red" if e.trust == "untrusted" else ""),
            _status(e.state),
            _ts(e.occurred_at),
            text,
        )
    return table


def conflict_table(conflicts: Iterable[Conflict], *, title: str | None = None) -> Table:
    table = _table(title)
    for name in ("conflict id", "predicate", "facts", "status", "detected at", "resolution"):
        table.add_column(name, overflow="fold", no_wrap=name in _ONE_WORD)
    for c in conflicts:
        table.add_row(
            Text(c.conflict_id, style="cyan"),
            Text(c.predicate),
            Text("\n".join(c.fact_ids)),
            _status(c.status),
            _ts(c.detected_at),
            Text(c.resolution or ""),
        )
    return table


def log_table(entries: Iterable[LedgerEntry], *, title: str | None = None) -> Table:
    table = _table(title)
    for name in ("#", "at", "op", "target", "detail"):
        table.add_column(name, overflow="fold", no_wrap=name in _ONE_WORD)
    for e in entries:
        table.add_row(
            str(e.entry_id),
            _ts(e.at),
            Text(e.op, style="bold"),
            Text(e.target_id, style="cyan"),
            Text(json.dumps(e.detail, ensure_ascii=False, default=str)),
        )
    return table


def predicate_table(predicates: Iterable[Predicate], *, title: str | None = None) -> Table:
    table = _table(title)
    for name in ("predicate", "type", "cardinality", "criticality", "category", "owner", "qualifiers", "values"):
        table.add_column(name, overflow="fold")
    for p in predicates:
        table.add_row(
            Text(p.name, style="cyan"),
            p.value_type,
            p.cardinality,
            Text(p.criticality, style="bold red" if p.criticality == "critical" else ""),
            p.category,
            Text(p.owner),
            Text(", ".join(p.qualifiers)),
            Text(", ".join(p.enum_values)),
        )
    return table


def clock_text(clock: Clock) -> Text:
    return Text.assemble(
        (f"{clock.tenant_id}/{clock.subject_id}", "cyan"),
        "  high_water ",
        (str(clock.high_water), "bold"),
        "  input_epoch ",
        (str(clock.input_epoch), "bold"),
    )


def print_table(console: Console, table: Table, *, empty: str) -> None:
    """Print a table, or a dim note when it has no rows."""
    if table.row_count:
        console.print(table)
    else:
        console.print(Text(empty, style="dim"))
