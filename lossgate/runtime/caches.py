"""The process-wide caches that hold memory's text, and the one call that empties them.

Some modules keep what they computed from stored text, keyed by that text: the gate's
atoms of each event text (:mod:`lossgate.gate.sources`), its sentences of each source
(:mod:`lossgate.gate.fence`), recall's vectors (:mod:`lossgate.semantic.ranking`). A
result is a pure function of its text, so a cache only saves time; but deleted text
must not linger in a process that deleted it (invariant 13). Each such cache registers
its clear function with :func:`holds_text` where it is defined, and the ledger's write
transaction (:func:`lossgate.ledger.lifecycle.transaction`) calls :func:`forget_text` once a
transaction that erased content has committed, whichever path it came by (a
``Memory`` method, ``Memory.transaction()``, ``lossgate ingest``); a ledger used over a
bare store transaction calls it as it erases. A cache whose module was never imported
holds nothing and is not called.

Text can also reach a cache after its deletion committed elsewhere: a consolidation that
read the subject before a deletion gates what it read, and another process deletes
without this one knowing. So a consolidation notes the subject's ``input_epoch`` (which
every deletion moves) when it reads and when it writes (:func:`epoch_seen`): a move since
this process last saw the subject, or during the run, forgets the text here too. Until
this process consolidates that subject again, its caches may hold the text of another
process's deletion; they only ever serve authorized snapshots.

This module imports nothing, so the lowest layer may call it and any layer may register.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import Lock

__all__ = ["holds_text", "forget_text", "epoch_seen"]

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


_epochs: dict[tuple[str, str], int] = {}
_MAX_SUBJECTS = 100_000


def epoch_seen(tenant_id: str, subject_id: str, epoch: int) -> bool:
    """Note the subject's ``input_epoch`` as this process sees it; if it moved since this
    process last saw it, forget every cached text (a deletion may be why). Returns whether
    it moved."""
    key = (tenant_id, subject_id)
    with _lock:
        before = _epochs.get(key)
        if len(_epochs) >= _MAX_SUBJECTS and before is None:
            _epochs.clear()  # a bound, not a cache: forgetting the epochs only costs a clear later
        _epochs[key] = epoch
    moved = before is not None and before != epoch
    if moved:
        forget_text()
    return moved
