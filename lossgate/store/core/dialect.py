"""What the two SQL engines spell differently in the statements they share.

The shared primitives (:mod:`lossgate.store.core.tx`, :mod:`lossgate.store.core.derived`)
are written once, with ``?`` placeholders; a :class:`Dialect` turns them into each
engine's SQL: placeholders, list binding, timestamps, the column that records
creation order, NULL-safe equality, JSON field access, byte lengths and keeping a
planner off an index. Anything more than that is engine-specific and lives in the
engine's folder.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

__all__ = ["Dialect", "CHUNK"]

CHUNK = 500  # ids per IN (...) list: well under every backend's parameter limit


@lru_cache(maxsize=2048)
def _format_style(sql: str) -> str:
    # psycopg's placeholders are %s, so a literal % must be doubled first.
    return sql.replace("%", "%%").replace("?", "%s")


@dataclass(frozen=True, slots=True)
class Dialect:
    """One engine's spelling.

    ``placeholder``: ``?`` (qmark, as the shared SQL is written) or ``%s`` (format).
    ``lists``: ``in`` binds a list as ``col IN (?, ?, ...)``, at most :data:`CHUNK` at a
    time; ``any`` binds it as one array parameter, ``col = ANY(?)``.
    ``times``: ``iso`` stores instants as ISO 8601 text in UTC (so that text order is time
    order, whatever offset the caller's ``datetime`` had), ``native`` hands the driver the
    ``datetime``.
    ``creation_order``: per table, the column that counts rows in creation order (the
    tie-break when two rows share a timestamp).
    ``null_safe_eq``: the operator for which NULL equals NULL.
    ``json_text`` / ``json_value``: templates reading ``{key}`` of the JSON column
    ``{col}`` as text / as JSON text.
    ``byte_length``: the function giving a blob's length in bytes.
    ``unindexed``: a template spelling the column ``{col}`` so that the planner uses no index
    on it. SQLite's (``+col``), without statistics, would walk a subject's whole history by
    the (tenant, subject, seq) key for a statement naming the subject and a list of ids;
    PostgreSQL's needs no such hint (and text has no unary ``+`` there).
    ``same_json``: per JSON column whose type needs it, a condition that the column holds
    the JSON text bound to its ``?`` as the store handed it back (default ``{col} = ?``).
    ``fence``: what ends a correlated subquery so that the planner runs it per outer row
    instead of flattening it into a join over everything it could match (PostgreSQL:
    ``OFFSET 0``; SQLite runs it per row anyway, and takes no OFFSET without a LIMIT)."""

    name: str
    placeholder: Literal["?", "%s"]
    lists: Literal["in", "any"]
    times: Literal["iso", "native"]
    creation_order: dict[str, str] = field(default_factory=dict)
    null_safe_eq: str = "IS"
    json_text: str = "json_extract({col}, '$.{key}')"
    json_value: str = "json_extract({col}, '$.{key}')"
    byte_length: str = "length"
    unindexed: str = "+{col}"
    same_json: dict[str, str] = field(default_factory=dict)
    fence: str = ""

    def sql(self, statement: str) -> str:
        """``statement``, written with ``?`` placeholders, in this engine's style."""
        return statement if self.placeholder == "?" else _format_style(statement)

    def in_(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition that ``column`` is one of ``values``, and its arguments."""
        if self.lists == "any":
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def chunks(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        """``values`` in as many slices as :meth:`in_` needs: one for ``any``, slices of
        :data:`CHUNK` for ``in``. Nothing for an empty sequence."""
        step = len(values) if self.lists == "any" else CHUNK
        for i in range(0, len(values), step or 1):
            yield values[i : i + step]

    def ts(self, value: datetime) -> Any:
        """An instant as this engine stores it."""
        if self.times == "native":
            return value
        return (value if value.tzinfo is None else value.astimezone(UTC)).isoformat()

    def ts_or_none(self, value: datetime | None) -> Any:
        return None if value is None else self.ts(value)

    def created(self, table: str) -> str:
        """The column of ``table`` that counts its rows in creation order."""
        return self.creation_order.get(table, "rowid")

    def no_index(self, col: str) -> str:
        """``col``, spelled so that the planner uses no index on it (see ``unindexed``)."""
        return self.unindexed.format(col=col)

    def json_field(self, col: str, key: str, *, as_text: bool) -> str:
        return (self.json_text if as_text else self.json_value).format(col=col, key=key)

    def json_is(self, col: str) -> str:
        """A condition that the JSON column ``col`` still holds the text bound to its ``?``."""
        return self.same_json.get(col, "{col} = ?").format(col=col)
