"""The base every SQL transaction class stands on: the four ways to run a statement,
the subject-scoping choke point, and the ordered selects of events and facts.

Scoping. Every primitive of :mod:`lossgate.store.protocol` names what it touches
(its ``tenant_id`` and ``subject_id``, or a declaration). A transaction class that
sets :attr:`TxBase.locks_subjects` gets every primitive wrapped, when the class is
defined, so that its :meth:`TxBase._scope` (or :meth:`TxBase._use_tenant`) runs
before the primitive's body: a primitive cannot forget to lock its subject, and a
new primitive that names no subject fails at import (:func:`~lossgate.store.protocol.touch_of`).
SQLite needs none of it (its write lock covers the file) and skips the wrappers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from lossgate.store.core.dialect import Dialect
from lossgate.store.protocol import SUBJECT, Touch, WriteTx, primitives, touch_of

__all__ = ["TxBase", "Select", "by_tenant", "Row"]

Row = tuple[Any, ...]
T = TypeVar("T")

# Every primitive and what it touches, read once from the protocol (a primitive that
# declares nothing and names no subject fails here, at import).
TOUCHES: dict[str, Touch] = {name: touch_of(fn) for name, fn in primitives(WriteTx).items()}


def by_tenant(items: Iterable[T], tenant_of: Callable[[T], str]) -> Iterable[tuple[str, list[T]]]:
    """Items grouped by tenant (order kept within a tenant), so each group needs one tenant switch."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(tenant_of(item), []).append(item)
    return groups.items()


@dataclass(slots=True)
class Select:
    """A select of one subject's rows in ``seq`` order, as the filtered reads (events, facts)
    build it; each engine runs it its own way (:meth:`TxBase._fetch`): SQLite looks long id
    lists up in chunks, PostgreSQL binds them as one array and pipelines several selects."""

    head: str  # SELECT <columns> FROM <table>
    id_column: str
    seq_index: int  # where seq is in a row
    where: list[str] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)
    ids: Sequence[str] | None = None
    newest_first: bool = False
    limit: int | None = None

    def when(self, condition: str, *args: Any) -> None:
        self.where.append(condition)
        self.args.extend(args)

    def ordered(self, *more: tuple[str, list[Any]], inline_limit: bool = False) -> tuple[str, list[Any]]:
        """The statement with ``more`` conditions, in seq order, limited (by a parameter, or
        ``inline_limit`` by a literal)."""
        where, args = [*self.where, *(c for c, _ in more)], [*self.args, *(a for _, m in more for a in m)]
        sql = f"{self.head} WHERE {' AND '.join(where)} ORDER BY seq" + (" DESC" if self.newest_first else "")
        if self.limit is None:
            return sql, args
        if inline_limit:
            return sql + f" LIMIT {int(self.limit)}", args
        return sql + " LIMIT ?", [*args, self.limit]


def _subjects(touch: Touch, given: Any) -> list[tuple[str, str]]:
    """The (tenant, subject) pairs that the argument ``given`` names, by ``touch``: one
    record's, or each record's of a sequence, sorted (as Ledger.append locks its subjects,
    so that two such calls never wait for each other in a cycle)."""
    if touch.kind == "subject":
        return [(given.tenant_id, given.subject_id)]
    records = given if touch.item is None else (x[touch.item] for x in given)
    return sorted({(r.tenant_id, r.subject_id) for r in records})


def _scoped(fn: Callable[..., Any], touch: Touch) -> Callable[..., Any]:
    """``fn`` preceded by the scoping that ``touch`` asks for."""
    if touch.kind in ("own", "none"):
        return fn
    if touch == SUBJECT:  # the common case, kept to one extra call

        def on_subject(self: TxBase, tenant_id: str, subject_id: str, *args: Any, **kwargs: Any) -> Any:
            self._scope(tenant_id, subject_id)
            return fn(self, tenant_id, subject_id, *args, **kwargs)

        run: Callable[..., Any] = on_subject
    else:
        arg = touch.arg
        assert arg is not None
        position = fn.__code__.co_varnames[1 : fn.__code__.co_argcount].index(arg)

        def on_argument(self: TxBase, *args: Any, **kwargs: Any) -> Any:
            given = args[position] if len(args) > position else kwargs[arg]
            if touch.kind == "tenant":
                self._use_tenant(given if isinstance(given, str) else given.tenant_id)
            else:
                for tenant_id, subject_id in _subjects(touch, given):
                    self._scope(tenant_id, subject_id)
            return fn(self, *args, **kwargs)

        run = on_argument
    scoped = functools.wraps(fn)(run)
    scoped.__lossgate_scoped__ = True  # type: ignore[attr-defined]
    return scoped


class TxBase:
    """What every shared primitive needs from a transaction: a dialect, four ways to run a
    statement (written with ``?`` placeholders) and the scoping hooks.

    ``locks_subjects``: wrap every primitive so that it scopes itself before its body (see
    the module). The hooks :meth:`_scope` and :meth:`_use_tenant` do nothing here."""

    _d: ClassVar[Dialect]
    locks_subjects: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.locks_subjects:
            return
        for name, touch in TOUCHES.items():
            impl = getattr(cls, name, None)
            if impl is not None and not getattr(impl, "__lossgate_scoped__", False):
                setattr(cls, name, _scoped(impl, touch))

    # -- scoping hooks -------------------------------------------------------------------
    def _scope(self, tenant_id: str, subject_id: str) -> None:
        """Called before any primitive touching the subject (when ``locks_subjects``)."""

    def _use_tenant(self, tenant_id: str) -> None:
        """Called before any primitive touching only the tenant, and by primitives that write
        rows of several tenants before each tenant's rows (when ``locks_subjects``)."""

    # -- running statements --------------------------------------------------------------
    def _one(self, sql: str, args: Sequence[Any] = ()) -> Row | None:
        """The first row of a statement, or ``None``."""
        raise NotImplementedError

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Every row of a statement."""
        raise NotImplementedError

    def _run(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        raise NotImplementedError

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement once per row of arguments."""
        raise NotImplementedError

    def _fetch(self, selects: Sequence[Select]) -> list[list[Row]]:
        """The rows of each select, in its order."""
        raise NotImplementedError

    def _value(self, sql: str, args: Sequence[Any] = (), default: Any = None) -> Any:
        """The first column of the first row of a statement, or ``default``."""
        row = self._one(sql, args)
        return default if row is None else row[0]
