"""The cyclic garbage collector, held off while a consolidation runs.

A consolidation of a long history builds hundreds of thousands of small objects that live
until it ends (a snapshot of every event, the atoms of each, their inputs and findings),
and few cycles: CPython's collector, which runs a full pass each time the objects that
survived grew by a quarter, walks them all again and again (measured on one subject of
50,000 events: a quarter to a third of the job's time). :func:`collection_held` turns automatic
collection off for the span of a job and back on when the last job running in the process
ends (jobs in several threads share one collector), and only if it was on: a process that
turned it off keeps it off. What a job frees by reference counting (nearly everything) is
freed at once as always; a cycle it drops waits for the next collection after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from threading import Lock

__all__ = ["collection_held"]

_lock = Lock()
_holding = 0  # jobs running with collection held
_resume = False  # whether collection was on when the first of them began


@contextmanager
def collection_held() -> Iterator[None]:
    """Automatic garbage collection off while the block runs (see the module docstring)."""
    global _holding, _resume
    with _lock:
        if _holding == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holding += 1
    try:
        yield
    finally:
        with _lock:
            _holding -= 1
            if _holding == 0 and _resume:
                gc.enable()
