"""Reading an action's fields by a guard rule's path (``items[].ingredients``)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from lossgate.errors import InvalidInput

__all__ = ["values_at", "number_at"]


def values_at(action: dict[str, Any], path: str) -> list[tuple[str, Any]]:
    """Every value at ``path`` in ``action``, each with where it is (``items[1].ingredients[0]``).

    A ``[]`` segment reads each element of a list; a list at the end of the path is read
    element by element as well. A path that leads nowhere (an unknown field, a missing key, a
    ``[]`` over something that is not a list) reads nothing: a rule on a field the action
    does not have does not apply."""
    found: list[tuple[str, Any]] = [("", action)]
    for segment in path.split("."):
        each = segment.endswith("[]")
        key = segment[:-2] if each else segment
        step: list[tuple[str, Any]] = []
        for where, value in found:
            if not isinstance(value, dict) or key not in value:
                continue
            here = f"{where}.{key}" if where else key
            inner = value[key]
            if each:
                if isinstance(inner, list):
                    step += [(f"{here}[{i}]", v) for i, v in enumerate(inner)]
            else:
                step.append((here, inner))
        found = step
    out: list[tuple[str, Any]] = []
    for where, value in found:
        if isinstance(value, list):
            out += [(f"{where}[{i}]", v) for i, v in enumerate(value) if v is not None]
        elif value is not None:
            out.append((where, value))
    return out


def number_at(where: str, value: Any) -> Decimal:
    """``value`` as a number, or :class:`InvalidInput` naming ``where``: an amount is a JSON
    number or a decimal string ("40.00"), never a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
        raise InvalidInput(f"action field {where}: expected a number, got {type(value).__name__} {value!r:.80}")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise InvalidInput(f"action field {where}: expected a number, got {value!r:.80}") from None
    if not number.is_finite():
        raise InvalidInput(f"action field {where}: expected a finite number, got {value!r:.80}")
    return number


def text_of(value: Any) -> str:
    """A field's value as the text a rule reads for names (a number as written)."""
    if isinstance(value, dict):
        return " ".join(text_of(v) for v in value.values())
    return str(value)
