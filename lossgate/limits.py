"""Input limits: what every text and JSON value must satisfy before it reaches a store.

Both stores give one answer for bad input, and the answer is
:class:`~lossgate.errors.InvalidInput`, raised before anything is written. The rules
exist because the engines differ: PostgreSQL cannot store a NUL character in
``text`` or ``jsonb`` (SQLite can), no store can encode a lone surrogate as UTF-8,
and a deeply nested value overflows Python's recursion limit in the JSON parser,
the hash and ``repr``. Refusing them here, once, keeps SQLite and PostgreSQL in
agreement and keeps the errors typed.

The limits (documented for users in ``docs/ingest-format.md``):

=========================  ==========================================================
``MAX_ID_CHARS``           tenant, subject, event and fact ids (and each source id)
``MAX_NAME_CHARS``         an event's actor, a fact's predicate, a qualifier key
``MAX_LABEL_CHARS``        a qualifier value, a lifecycle ``reason``, a recall query
``MAX_TEXT_CHARS``         an event's text
``MAX_PAYLOAD_BYTES``      an event's payload, as compact UTF-8 JSON
``MAX_VALUE_BYTES``        a fact's value, as compact UTF-8 JSON
``MAX_DEPTH``              nesting of payloads and fact values (objects and arrays)
=========================  ==========================================================

Every string anywhere in those fields (object keys included) must be free of lone
surrogates (U+D800 to U+DFFF) and, except inside a payload, of NUL (U+0000): a
payload is stored as JSON text (PostgreSQL ``json``), where NUL is only the escape
``\\u0000``, while ``text`` and ``jsonb`` columns refuse it. Lengths count characters;
the JSON sizes count bytes. The records in :mod:`lossgate.records` apply these
rules as field types and validators, so the Python API, the JSON Lines ingest and
the CLI all refuse the same input with the same message.
"""

from __future__ import annotations

import math

import functools
import inspect
import re
from typing import Annotated, Any, Callable, TypeVar

import orjson
from pydantic import BaseModel, StringConstraints

from lossgate.errors import InvalidInput

__all__ = [
    "MAX_DEPTH", "MAX_ID_CHARS", "MAX_NAME_CHARS", "MAX_LABEL_CHARS", "MAX_TEXT_CHARS",
    "MAX_PAYLOAD_BYTES", "MAX_VALUE_BYTES",
    "Id", "Key", "Name", "Label", "Text", "Plain",
    "text_problem", "json_problem", "nesting_problem", "checked_args",
]

MAX_DEPTH = 64
MAX_ID_CHARS = 200  # the limit ids always had
MAX_NAME_CHARS = 200
MAX_LABEL_CHARS = 4_096
# An event's text is indexed for keyword search, and a PostgreSQL tsvector holds at most
# 1 MiB. Measured: short unique hyphenated words cost that index up to 9.8 bytes per
# character, English prose 0.8 or less, and 1 Mi characters of random five-letter words
# 1.6 MiB: such a text could be stored there but never searched or consolidated (SQLite
# has no such bound). 64 Ki characters always fit; raise this only with an index that
# bounds what it takes of each text.
MAX_TEXT_CHARS = 65_536
MAX_PAYLOAD_BYTES = 1_048_576
MAX_VALUE_BYTES = 65_536  # a fact is a compact claim, not a document

# A constrained pydantic string refuses lone surrogates by itself (``string_unicode``: it
# cannot hand them to its Rust core), so the patterns only need to exclude NUL.
_NO_NUL = r"^[^\x00]*$"

Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=r"^[^\s\x00]+$")]
"""A tenant or subject id, or the id a file line names: 1 to 200 characters, no whitespace or NUL."""
Key = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=r"^[^\x00]+$")]
"""An event or fact id as the records take it: 1 to 200 characters, no NUL (spaces allowed, as always)."""
Name = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS, pattern=_NO_NUL)]
Label = Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS, pattern=_NO_NUL)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS, pattern=_NO_NUL)]
Plain = Annotated[str, StringConstraints(pattern=_NO_NUL)]
"""Any length, no NUL (the registry's free text: its size is the operator's business)."""

_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(value: str, *, nul_ok: bool = False) -> str | None:
    """Why ``value`` cannot be stored as text (a NUL, unless ``nul_ok``, or a lone
    surrogate), or ``None``."""
    found = (_SURROGATE if nul_ok else _BAD_CHAR).search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return f"contains a NUL character (U+0000) at position {found.start()}"
    code = ord(found.group())
    return f"contains a lone surrogate (U+{code:04X}) at position {found.start()}, which is not valid Unicode"


def nesting_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """``"nested more than N levels deep"`` if objects and arrays nest deeper than ``max_depth``.

    Iterative (a recursive walk would hit the very limit this guards against). Only
    containers are visited; strings are not inspected.
    """
    return _walk(value, max_depth=max_depth, strings=False)


def json_problem(value: Any, max_bytes: int, *, nul_ok: bool = False) -> str | None:
    """Why ``value`` (a payload or a fact value) cannot be stored, or ``None``.

    Checks nesting (at most :data:`MAX_DEPTH` levels of objects and arrays), every
    string and object key (no lone surrogate; no NUL unless ``nul_ok``) and the size of
    the compact UTF-8 JSON form (at most ``max_bytes``), and refuses NaN and infinities
    (orjson would write them as ``null``). A non-string key is left to the canonical hash,
    which refuses it.
    """
    try:
        out: bytes | None = orjson.dumps(value, default=str)
    except orjson.JSONEncodeError:  # a lone surrogate, deep nesting, an int beyond 64 bits ...
        out = None
    # The append hot path: orjson refuses lone surrogates and writes NUL as \u0000, and
    # nesting cannot exceed the number of brackets. Only a value that fails one of
    # those tests (rare, and possibly a false alarm) is walked.
    # orjson writes NaN and infinities as null: a payload holding "null" is walked for them.
    if out is None or (not nul_ok and b"\\u0000" in out) or out.count(b"[") + out.count(b"{") > MAX_DEPTH \
            or b"null" in out:
        problem = _walk(value, nul_ok=nul_ok)
        if problem is not None:
            return problem
    size = len(out) if out is not None else len(repr(value).encode("utf-8", "replace"))  # an estimate
    if size > max_bytes:
        return f"is {size:,} bytes as JSON; the limit is {max_bytes:,}"
    return None


def _walk(value: Any, *, nul_ok: bool = False, max_depth: int = MAX_DEPTH, strings: bool = True) -> str | None:
    """The first nesting problem in ``value`` (and, with ``strings``, the first bad string or
    object key), iteratively."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if strings and isinstance(node, str):
            if (problem := text_problem(node, nul_ok=nul_ok)) is not None:
                return f"a string {problem}"
            continue
        if isinstance(node, float) and not math.isfinite(node):
            return "a number that is not finite (NaN or an infinity): JSON has none"
        children = _children(node)
        if children is None:
            continue
        depth += 1
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep"
        if strings and isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and (problem := text_problem(key, nul_ok=nul_ok)) is not None:
                    return f"an object key {problem}"
        stack.extend((child, depth) for child in children)
    return None


def _children(node: Any) -> Any:
    """The items a JSON-like container holds (``None`` for a scalar)."""
    if isinstance(node, dict):
        return node.values()
    if isinstance(node, (list, tuple, set, frozenset)):
        return node
    if isinstance(node, BaseModel):  # e.g. Money: its fields reach the store as a JSON object
        return node.__dict__.values()
    return None


# -- the Python API's plain arguments ------------------------------------------------------

# Arguments that are stored as free text (log lines, recall records): bounded like a label.
_ARG_MAX_CHARS = {"reason": MAX_LABEL_CHARS, "query": MAX_LABEL_CHARS, "tenant_id": MAX_ID_CHARS,
                  "subject_id": MAX_ID_CHARS, "event_id": MAX_ID_CHARS, "fact_id": MAX_ID_CHARS,
                  "old_fact_id": MAX_ID_CHARS, "artifact_id": MAX_ID_CHARS}
# Counts a caller passes (how many, how much): negative ones mean nothing, and past the
# maxima no store can count that far (SQLite and PostgreSQL integers are 64-bit) nor would a
# reader want it (a budget: at most MAX_BUDGET_TOKENS, as consolidation's).
MAX_COUNT = 1_000_000
MAX_BUDGET_TOKENS = 1_000_000_000
_ARG_MIN = {"k": 0, "budget": 1, "limit": 0}
_ARG_MAX = {"k": MAX_COUNT, "budget": MAX_BUDGET_TOKENS, "limit": MAX_COUNT}
# What each named argument must be (None where it is optional): a caller's 123 as a query
# or "5" as k gets InvalidInput, not an AttributeError from deep inside.
_ARG_TYPES: dict[str, tuple[type, ...]] = {
    **{name: (str,) for name in _ARG_MAX_CHARS}, "query": (str, type(None)),
    "k": (int,), "limit": (int,), "budget": (int, type(None)), "context": (bool,),
}

F = TypeVar("F", bound=Callable[..., Any])


def checked_args(func: F) -> F:
    """Check every string argument of ``func`` (and strings in list or tuple arguments)
    before it runs: a NUL or a lone surrogate raises :class:`InvalidInput`, as does a
    ``reason`` or ``query`` longer than :data:`MAX_LABEL_CHARS`, an id longer than
    :data:`MAX_ID_CHARS`, a negative ``k`` or ``limit`` or a ``budget`` under 1 (or any of them past
    :data:`MAX_COUNT` / :data:`MAX_BUDGET_TOKENS`), or an argument
    of the wrong type (an id that is not a string, a ``k`` that is not an int).

    For methods that take ids, reasons and queries as plain arguments rather than in a
    record; the store would otherwise refuse them differently (PostgreSQL fails on NUL,
    SQLite stores it or finds nothing).
    """
    signature = inspect.signature(func)
    names = tuple(signature.parameters)
    optional = {name for name, p in signature.parameters.items() if p.default is None}  # None is allowed there

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, value in (*zip(names, args), *kwargs.items()):
            wanted = _ARG_TYPES.get(name)
            if wanted is not None and not (value is None and name in optional) and (not isinstance(value, wanted) or (
                    isinstance(value, bool) and bool not in wanted)):
                names_of = " or ".join("None" if t is type(None) else t.__name__ for t in wanted)
                raise InvalidInput(f"{name} must be {names_of}, got {type(value).__name__}")
            if isinstance(value, str):
                _check_arg(name, value)
            elif isinstance(value, int) and name in _ARG_MIN and not _ARG_MIN[name] <= value <= _ARG_MAX[name]:
                raise InvalidInput(f"{name} must be from {_ARG_MIN[name]} to {_ARG_MAX[name]:,}, got {value}")
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, str):
                        _check_arg(name, item)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _check_arg(name: str, value: str) -> None:
    if (problem := text_problem(value)) is not None:
        raise InvalidInput(f"{name} {problem}")
    limit = _ARG_MAX_CHARS.get(name)
    if limit is not None and len(value) > limit:
        raise InvalidInput(f"{name} is {len(value):,} characters long; the limit is {limit:,}")
