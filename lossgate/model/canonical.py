"""Canonical JSON (RFC 8785, the JSON Canonicalization Scheme) and content hashes.

Every event and fact is identified by ``sha256:<hex>`` over the RFC 8785 form
of its content, so a hash is stable across processes, Python versions and key
order. The reference implementation is the ``rfc8785`` package. It is pure
Python and dominates the cost of an append, so :func:`canonical_json` takes a
fast path through ``orjson`` for values where the two are byte-identical:

* strings: both escape exactly ``"``, ``\\`` and the C0 controls, with the same
  short forms (``\\n``...) and lowercase ``\\u00xx``; everything else is raw
  UTF-8;
* integers inside the IEEE-754 safe range (RFC 8785 serialises numbers as
  doubles; beyond 2**53 the reference raises, and so do we);
* ``true``, ``false``, ``null``, lists;
* objects whose keys contain no code point at or above U+D800: below it,
  sorting by code point (orjson) and by UTF-16 code unit (RFC 8785) agree.

Anything else (floats, astral-plane keys, large integers) goes through the
reference implementation. ``tests/test_canonical.py`` checks byte equality of
the two paths with hypothesis.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import rfc8785

from lossgate.errors import InvalidInput

__all__ = ["canonical_json", "content_hash", "envelope_hash", "reference_canonical_json"]

_SAFE_INT = 2**53 - 1
_SORT = orjson.OPT_SORT_KEYS


def _fast_ok(value: Any) -> bool:
    """True if orjson's sorted output is byte-identical to RFC 8785 for ``value``."""
    t = type(value)
    if t is str or value is None or t is bool:
        return True
    if t is int:
        number: int = value
        return -_SAFE_INT <= number <= _SAFE_INT
    if t is dict:
        for k, v in value.items():
            # Strings are the common case: checked inline, no recursive call.
            if type(k) is not str or not (k.isascii() or max(k) < "\ud800"):
                return False
            if type(v) is not str and not _fast_ok(v):
                return False
        return True
    if t is list or t is tuple:
        return all(_fast_ok(v) for v in value)
    return False


def reference_canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes from the reference implementation (slow, always right)."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise InvalidInput(f"value cannot be canonicalised as JSON: {exc}") from exc


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical bytes of a JSON-compatible value.

    Raises :class:`InvalidInput` for values JSON cannot represent exactly
    (NaN, infinities, integers beyond 2**53, non-string keys).
    """
    if _fast_ok(value):
        try:
            return orjson.dumps(value, option=_SORT)
        except orjson.JSONEncodeError:  # lone surrogates: let the reference decide
            pass
    return reference_canonical_json(value)


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON form of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def envelope_hash(envelope: dict[str, Any], free_part: Any) -> str:
    """:func:`content_hash` of ``envelope`` for a caller that guarantees every value of
    ``envelope`` except ``free_part`` is a string under an ASCII key (validated records):
    only ``free_part`` then needs the fast-path check. Same bytes, same hash."""
    if _fast_ok(free_part):
        try:
            return "sha256:" + hashlib.sha256(orjson.dumps(envelope, option=_SORT)).hexdigest()
        except orjson.JSONEncodeError:
            pass
    return "sha256:" + hashlib.sha256(reference_canonical_json(envelope)).hexdigest()
