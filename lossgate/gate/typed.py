"""Typed values reduced to what equality means for them, for the fact contract.

Two rules, one form (:class:`TypedValue`):

* :func:`typed_value` (lossgate records): a value compares by its ``value_type``
  and :func:`~lossgate.model.values.canonical_value`, so money is a decimal amount
  plus a currency whatever its key order or trailing zeros, and ``False`` is
  not ``"false"``;
* :func:`json_value` (the fact-contract fixture format, ``fact-contract``): a raw
  JSON value compares by JSON type and content, ``True`` is not ``1`` and
  ``50`` is not ``50.0``, even inside objects and arrays.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from lossgate.model.values import Money, ValueMismatch, canonical_value, coerce_value

__all__ = ["TypedValue", "typed_value", "json_value", "json_type_name", "dump_json"]

_ENTITY_ID = re.compile(r"^\S+$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")


class TypedValue(NamedTuple):
    """A value reduced to what equality means for it.

    ``key`` compares with ``==``: equal keys, equal meaning (``None`` never matches,
    used for a value that cannot be read as its declared type). ``type_name`` is
    printed on ``value_changed``; ``shown`` is a JSON rendering for details.
    """

    type_name: str
    key: Hashable | tuple[Any, ...] | None
    canonical: Any

    def shown(self) -> str:
        return f"{self.type_name} {dump_json(self.canonical)}"

    def matches(self, other: TypedValue) -> bool:
        return self.key is not None and self.key == other.key


def dump_json(value: Any) -> str:
    """Compact, key-sorted JSON for violation details (a number parsed as Decimal as written)."""
    if type(value) is Decimal:
        return str(value)
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def json_type_name(value: Any) -> str:
    """JSON type of a parsed value; numbers with a fraction or exponent are ``float``."""
    t = type(value)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is float or t is Decimal:
        return "float"
    if t is str:
        return "string"
    if value is None:
        return "null"
    if t is dict:
        return "object"
    if t is list or t is tuple:
        return "array"
    return t.__name__


def _tag(value: Any) -> Hashable:
    """A hashable form that keeps JSON types apart (``True != 1``, ``50 != 50.0``)."""
    name = json_type_name(value)
    if name == "object":
        return ("object", tuple(sorted((k, _tag(v)) for k, v in value.items())))
    if name == "array":
        return ("array", tuple(_tag(v) for v in value))
    return (name, value)


def json_value(value: Any) -> TypedValue:
    """A raw JSON value compared by JSON type and content (the fixture format's rule)."""
    return TypedValue(json_type_name(value), _tag(value), value)


# Value types whose canonical form is the Python value itself, and that Python type.
# Gating 1,000 facts reads 2,000 values; most are of these types, and coercing them
# through the general path would cost more than the rest of the contract.
_PLAIN = {"bool": bool, "int": int, "string": str, "enum": str, "entity_id": str}


def typed_value(value_type: str, value: Any) -> TypedValue:
    """A typed value compared by ``value_type`` and canonical form.

    A value that cannot be read as ``value_type`` (``"false"`` for a bool) gets
    ``key=None`` and its JSON type as ``type_name``, so the mismatch names both types.
    """
    if value is None:
        return TypedValue("null", None, None)
    plain = _PLAIN.get(value_type)
    if (
        plain is not None
        and type(value) is plain
        and value != ""
        and not (value_type == "entity_id" and not _ENTITY_ID.match(str(value)))
    ):
        return TypedValue(value_type, (value_type, value), value)
    if value_type == "money":
        canon = _money(value)
        if canon is not None:
            return TypedValue("money", ("money", canon["amount"], canon["currency"]), canon)
    try:
        # Enum membership is the registry's business at assertion time; here only
        # the spelling matters, and an enum value is a string.
        coerced = coerce_value("string" if value_type == "enum" else value_type, value)
        canon = canonical_value(value_type, coerced)
    except (ValueMismatch, TypeError, ValueError, AttributeError, ArithmeticError):
        # ArithmeticError: decimal.Overflow from an absurd exponent ("1e400000000"); the
        # gate never raises on artifact content, it names the value as unreadable.
        return TypedValue(json_type_name(value), None, value)
    if value_type == "money":
        return TypedValue(value_type, (value_type, canon["amount"], canon["currency"]), canon)
    return TypedValue(value_type, (value_type, canon), canon)  # canonical strings, ints and bools


def _money(value: Any) -> dict[str, str] | None:
    """Canonical money without building a :class:`~lossgate.model.values.Money` (the hot path of
    invoices); ``None`` sends anything unusual through :func:`coerce_value`, which decides."""
    if type(value) is Money:
        amount, currency = value.amount, value.currency
    elif type(value) is dict and len(value) == 2 and type(value.get("currency")) is str:
        raw, currency = value.get("amount"), value["currency"]
        if type(raw) is str:
            try:
                amount = Decimal(raw.strip())
            except InvalidOperation:
                return None
        elif type(raw) is int or type(raw) is Decimal:
            amount = Decimal(raw)
        else:
            return None
        if not (amount.is_finite() and _CURRENCY.match(currency)):
            return None
    else:
        return None
    try:
        return {"amount": canonical_value("decimal", amount), "currency": currency}
    except ArithmeticError:  # an exponent beyond the decimal context: let coerce_value judge
        return None
