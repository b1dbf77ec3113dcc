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
  sorting by code point (orjson) and by UTF-16 code unit (RFC 8785) agree;
* floats that both write with the same bytes (``0.15``; not ``1.0``, which RFC 8785
  writes ``1``, nor ``1e-6``, ``0.000001``): a number is written the same wherever it
  stands, so each float is compared once, on its own, and the answer remembered.

Anything else (astral-plane keys, large integers, the floats the two write apart) goes
through the reference implementation. ``tests/test_canonical.py`` checks byte equality of
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


# float -> whether orjson writes it as RFC 8785 does (the few a process meets: ratios, scores)
_FLOATS: dict[float, bool] = {}


def _float_ok(number: float) -> bool:
    """Whether orjson writes ``number`` with RFC 8785's bytes (never for a zero, which
    RFC 8785 writes ``0``, nor for NaN or an infinity, which it refuses)."""
    if not number or number != number:  # zeros (0.0 == -0.0 as a key), NaN (never equal to a key)
        return False
    known = _FLOATS.get(number)
    if known is None:
        try:
            known = orjson.dumps(number) == rfc8785.dumps(number)
        except (rfc8785.CanonicalizationError, TypeError, ValueError):
            known = False
        if len(_FLOATS) < 4096:
            _FLOATS[number] = known
    return known


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
    if t is float:
        return _float_ok(value)
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
