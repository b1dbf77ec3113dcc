"""Reading an action's fields by a guard rule's path (``items[].ingredients``)."""

from __future__ import annotations

import unicodedata
from decimal import Decimal, InvalidOperation
from typing import Any

from lossgate.errors import InvalidInput

__all__ = ["values_at", "number_at", "text_of"]


def values_at(action: dict[str, Any], path: str) -> list[tuple[str, Any]]:
    """Every value at ``path`` in ``action``, each with where it is (``items[1].ingredients[0]``).

    A ``[]`` segment reads each element of a list; a list at the end of the path is read
    element by element as well (lists in it too). A path whose first key the action lacks
    reads nothing: a rule on a field the action does not have does not apply. Once the action
    has that key, the path must lead to values: a list where an object is read, an object or
    a scalar where a list is, a missing key or a ``null`` on the way is
    :class:`InvalidInput`, never a silent pass ("items" as an object hides no ingredient)."""
    segments = path.split(".")
    if segments[0].removesuffix("[]") not in action:
        return []
    found: list[tuple[str, Any]] = [("", action)]
    for segment in segments:
        each = segment.endswith("[]")
        key = segment[:-2] if each else segment
        step: list[tuple[str, Any]] = []
        for where, value in found:
            here = f"{where}.{key}" if where else key
            if not isinstance(value, dict):
                raise InvalidInput(
                    f"action field {where}: expected an object holding {key!r}, got {type(value).__name__}"
                )
            if value.get(key) is None:
                raise InvalidInput(f"action field {here}: missing (a rule reads {path})")
            inner = value[key]
            if each:
                if not isinstance(inner, list):
                    raise InvalidInput(f"action field {here}: expected a list, got {type(inner).__name__}")
                step += [(f"{here}[{i}]", v) for i, v in enumerate(inner)]
            else:
                step.append((here, inner))
        found = step
    out: list[tuple[str, Any]] = []
    while found:
        where, value = found.pop(0)
        if isinstance(value, list):
            found[:0] = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        elif value is None:
            raise InvalidInput(f"action field {where}: null where a rule reads a value")
        else:
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
    """A field's value as the text a rule reads for names: NFKC-normalised and case-folded
    ("ｐｅａｎｕｔ" is "peanut"), an object's keys with its values, a number as written."""
    if isinstance(value, dict):
        raw = " ".join(f"{k} {text_of(v)}" for k, v in value.items())
    elif isinstance(value, list):
        raw = " ".join(text_of(v) for v in value)
    else:
        raw = str(value)
    return unicodedata.normalize("NFKC", raw).casefold()
