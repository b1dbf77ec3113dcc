"""Read-back verification: an artifact is read back through the store's read path and
compared with what was written before it may be published (a storage layer
that turns ``false`` into ``"false"`` is representation loss, not compression drift).

The comparison walks the body and the manifest as written and as read, field by field,
and names the first field that differs (``body.claims[2].value``) with both values and,
when the type changed, both type names (``bool False`` against ``str 'false'``). When
nothing differs the gate's verdict stands unchanged: the gate is a pure function of the
snapshot and the body (invariant 10), so it is run again only on a body that came back
different, and its findings are kept beside the ``representation_loss`` violation.
"""

from __future__ import annotations

from typing import Any

from lossgate.gate.outcome import Violation
from lossgate.model.derived_records import Artifact

__all__ = ["divergence", "representation_loss", "without_values"]

_MISSING = object()


def divergence(written: Artifact, read: Artifact | None) -> tuple[str, Any, Any] | None:
    """The first field where ``read`` differs from ``written`` (path, written value, read
    value), or None. A missing row differs at its root."""
    if read is None:
        return "artifact", written.artifact_id, None
    for name in ("body", "manifest"):
        found = _first(
            getattr(written, name).model_dump(mode="python"), getattr(read, name).model_dump(mode="python"), name
        )
        if found is not None:
            return found
    return None


def _first(a: Any, b: Any, path: str) -> tuple[str, Any, Any] | None:
    if type(a) is not type(b):
        return path, a, b
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            found = _first(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(a, (list, tuple)):
        for i in range(max(len(a), len(b))):
            found = _first(a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if a == b else (path, a, b)


def _shown(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


def representation_loss(found: tuple[str, Any, Any]) -> Violation:
    """The violation that names the first divergent field, with both types when they differ."""
    path, written, read = found
    changed = type(written) is not type(read)
    detail = f"{path}: written as {_shown(written)}, read back as {_shown(read)}" + (
        f" (the type changed from {type(written).__name__} to {type(read).__name__})" if changed else ""
    )
    return Violation(
        code="representation_loss",
        subject=path,
        severity="critical",
        detail=detail,
        expected=_shown(written),
        observed=_shown(read),
    )


def without_values(found: tuple[str, Any, Any]) -> str:
    """The divergence named by its field and types only, for records that outlive a deletion
    (an artifact's state reason, a log line): the values themselves may be deleted content."""
    path, written, read = found
    if type(written) is not type(read):
        return f"{path}: the type changed from {_kind(written)} to {_kind(read)}"
    return f"{path}: the {_kind(written)} changed"


def _kind(value: Any) -> str:
    return "nothing" if value is _MISSING else type(value).__name__
