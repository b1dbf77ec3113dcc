"""Strict JSON reading for the gate's file formats.

Fixtures are evidence, so reading them refuses what plain ``json.loads``
would let through silently: ``NaN`` and ``Infinity``, duplicate object keys
(the last one would win unseen), and binary floats. Numbers with a fraction
or an exponent are parsed as :class:`~decimal.Decimal`, so ``50.0`` stays
distinct from ``50`` and ``14250.10`` keeps its digits. Field accessors check
JSON types and name the failing path in :class:`~lossgate.errors.InvalidInput`.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from lossgate.errors import InvalidInput
from lossgate.gate.typed import json_type_name as _type_name

__all__ = [
    "loads",
    "read_json",
    "field",
    "opt_field",
    "string_list",
    "string_map",
    "require_object",
    "JSON_TYPES",
]

_MISSING = object()

#: Python check per JSON type name used in error messages.
JSON_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,
    "boolean": lambda v: type(v) is bool,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise InvalidInput(f"duplicate key {k!r} in a JSON object")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise InvalidInput(f"{name} is not valid JSON")


def loads(text: str, *, source: str = "input") -> Any:
    """Parse JSON text strictly; raises :class:`InvalidInput` naming ``source``."""
    try:
        return json.loads(text, parse_float=Decimal, parse_constant=_no_constant, object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{source} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except InvalidInput as exc:
        raise InvalidInput(f"{source}: {exc}") from None
    except RecursionError:
        raise InvalidInput(f"{source}: JSON nested too deeply") from None


def read_json(path: str | Path) -> Any:
    """Read and strictly parse a JSON file; raises :class:`InvalidInput`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text") from None
    return loads(text, source=str(path))


def field(obj: dict[str, Any], key: str, kind: str, where: str) -> Any:
    """``obj[key]``, which must exist and be of JSON type ``kind`` (``any`` for any)."""
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        raise InvalidInput(f"{where}: missing key {key!r}")
    if kind != "any" and not JSON_TYPES[kind](value):
        raise InvalidInput(f"{where}.{key}: expected a JSON {kind}, got {_type_name(value)}")
    return value


def opt_field(obj: dict[str, Any], key: str, kind: str, where: str, default: Any = None) -> Any:
    """Like :func:`field`, but an absent key (or ``null``) gives ``default``."""
    if obj.get(key) is None:
        return default
    return field(obj, key, kind, where)


def string_list(obj: dict[str, Any], key: str, where: str, *, required: bool = True) -> tuple[str, ...]:
    """A JSON array of strings."""
    items = field(obj, key, "array", where) if required else opt_field(obj, key, "array", where, [])
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidInput(f"{where}.{key}[{i}]: expected a JSON string, got {_type_name(item)}")
    return tuple(items)


def string_map(obj: dict[str, Any], key: str, where: str) -> tuple[tuple[str, str], ...]:
    """An optional JSON object of string values, as sorted (key, value) pairs."""
    value = opt_field(obj, key, "object", where, {})
    for k, v in value.items():
        if not isinstance(v, str):
            raise InvalidInput(f"{where}.{key}.{k}: expected a JSON string, got {_type_name(v)}")
    return tuple(sorted(value.items()))


def require_object(value: Any, where: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else :class:`InvalidInput`."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}: expected a JSON object, got {_type_name(value)}")
    return value
