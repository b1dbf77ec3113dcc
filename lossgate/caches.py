"""The process-wide caches that hold memory's text, and the one call that empties them.

Some modules keep what they computed from stored text, keyed by that text: the gate's
atoms of each event text (:mod:`lossgate.gate.sources`), its sentences of each source
(:mod:`lossgate.gate.fence`), recall's vectors (:mod:`lossgate.semantic.ranking`). A
result is a pure function of its text, so a cache only saves time; but deleted text
must not linger in a process that deleted it (invariant 13). Each such cache registers
its clear function with :func:`holds_text` where it is defined, and the ledger's write
transaction (:func:`lossgate.ledger.transaction`) calls :func:`forget_text` once a
transaction that erased content has committed, whichever path it came by (a
``Memory`` method, ``Memory.transaction()``, ``lossgate ingest``). A cache whose module
was never imported holds nothing and is not called. Other processes' caches only ever
serve authorized snapshots, and evict deleted text in time.

This module imports nothing, so the lowest layer may call it and any layer may register.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import Lock

__all__ = ["holds_text", "forget_text"]

_clears: list[Callable[[], None]] = []
_lock = Lock()


def holds_text(clear: Callable[[], None]) -> Callable[[], None]:
    """Register ``clear`` (a decorator on a cache's clear function, which it returns unchanged)."""
    with _lock:
        if clear not in _clears:
            _clears.append(clear)
    return clear


def forget_text() -> None:
    """Empty every registered cache of text."""
    with _lock:
        clears = tuple(_clears)
    for clear in clears:
        clear()
