"""Which subject a store primitive touches, declared beside it: what per-subject locking and
the scope rule read (:func:`touch_of`; the rules are in :mod:`lossgate.store.protocol`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = ["Touch", "SUBJECT", "touch_of", "subject_of", "subjects_of", "tenant_of", "locks_itself", "unscoped"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Touch:
    """What a primitive touches, read from its arguments.

    ``kind``: ``subject`` (the subject of ``arg``: the ``tenant_id`` and ``subject_id``
    arguments, or a record's), ``subjects`` (the subject of each record in the sequence
    ``arg``; ``item`` picks the record out of a tuple), ``tenant`` (only the tenant of
    ``arg``: row-level security, no lock), ``own`` (the primitive is the lock itself) or
    ``none`` (global, or admin across tenants)."""

    kind: Literal["subject", "subjects", "tenant", "own", "none"]
    arg: str | None = None
    item: int | None = None


SUBJECT = Touch("subject")  # the default: the primitive's (tenant_id, subject_id) arguments


def _declare(touch: Touch) -> Callable[[F], F]:
    def mark(fn: F) -> F:
        fn.__lossgate_touch__ = touch  # type: ignore[attr-defined]
        return fn

    return mark


def subject_of(arg: str) -> Callable[[F], F]:
    """Declares that the primitive touches the subject of the record ``arg``."""
    return _declare(Touch("subject", arg))


def subjects_of(arg: str, *, item: int | None = None) -> Callable[[F], F]:
    """Declares that the primitive touches the subject of each record in ``arg`` (of
    ``record[item]`` when its items are tuples)."""
    return _declare(Touch("subjects", arg, item))


def tenant_of(arg: str) -> Callable[[F], F]:
    """Declares that the primitive touches only the tenant ``arg`` (an id, or a record's):
    it never waits for the subject's writers."""
    return _declare(Touch("tenant", arg))


def locks_itself(fn: F) -> F:
    """Declares a primitive whose work is to lock its subject (:meth:`LedgerWriteTx.lock_clock`)."""
    return _declare(Touch("own"))(fn)


def unscoped(fn: F) -> F:
    """Declares a primitive that touches no one subject: the global registry, the index, the
    worker's claim."""
    return _declare(Touch("none"))(fn)


def touch_of(primitive: Callable[..., Any]) -> Touch:
    """What ``primitive`` (a method of a protocol class here) touches: its declaration, or
    the default when its first arguments are ``tenant_id, subject_id``. Raises
    :class:`TypeError` for a primitive that names neither: a new primitive must say
    which subject it touches, or nothing could lock it."""
    declared: Touch | None = getattr(primitive, "__lossgate_touch__", None)
    if declared is not None:
        return declared
    code = primitive.__code__
    if code.co_varnames[1:3] == ("tenant_id", "subject_id"):
        return SUBJECT
    raise TypeError(
        f"store primitive {primitive.__qualname__} takes no (tenant_id, subject_id): declare what it "
        "touches in its tier module of lossgate/store/protocol/ (@subject_of, @subjects_of, @tenant_of, @locks_itself, @unscoped)"
    )
