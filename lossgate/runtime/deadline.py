"""Foreign code under a deadline: a compressor or a judge is called in a daemon thread and
waited for at most ``timeout_s``. A call that does not answer in time is abandoned: the
caller gets :class:`Overdue` at once, and the thread, being a daemon, never holds the
process open at exit (a thread pool's worker would be joined then: a model that hangs for
ever would keep a cron job or a worker from ending)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Overdue", "Escaped", "call_with_deadline"]

T = TypeVar("T")


class Overdue(Exception):
    """The call did not return within its deadline."""


class Escaped(Exception):
    """The call raised a ``BaseException`` that is no ``Exception`` (``SystemExit``,
    ``KeyboardInterrupt``, ``GeneratorExit``...). Raised inside foreign code, it is no signal
    to this process, so the caller gets it as an ordinary error: ``original`` is what was
    raised (a real Ctrl-C arrives in the waiting thread and is raised there as it is)."""

    def __init__(self, original: BaseException) -> None:
        self.original = original
        super().__init__(type(original).__name__)


def call_with_deadline(fn: Callable[..., T], *args: Any, timeout_s: float, name: str = "lossgate-call") -> T:
    """``fn(*args)``, or :class:`Overdue` after ``timeout_s``; ``fn``'s own exception is re-raised
    (as :class:`Escaped` if it is no ``Exception``)."""
    value: list[T] = []  # fn's result, once it returns
    failure: list[BaseException] = []  # or what it raised
    done = threading.Event()

    def run() -> None:
        try:
            value.append(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as it is
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not done.wait(timeout_s):
        raise Overdue(f"no answer within {timeout_s:g}s")
    if failure:
        error = failure[0]
        if not isinstance(error, Exception):
            raise Escaped(error) from error
        raise error
    return value[0]
