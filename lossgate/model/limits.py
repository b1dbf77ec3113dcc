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
the JSON sizes count bytes. The records in :mod:`lossgate.model.records` apply these
rules as field types and validators, so the Python API, the JSON Lines ingest and
the CLI all refuse the same input with the same message.

Ids follow one rule (:func:`id_problem`, the type :data:`Id`): no whitespace, control,
format or separator character, so that two ids that look the same are the same. A new
id must obey it wherever it comes from: a record, a ``tenant_id`` or ``subject_id``
argument (:func:`checked_args`), an ingest line, an HTTP path or body, an MCP tool's
arguments. An id that only names a record already stored (:data:`Key`: the event a
deletion erases, a fact's source events) is looked up exactly as given, so what earlier
versions stored stays readable and erasable.

JSON text from outside (an ingest line, an HTTP body, an MCP message) is read by
:func:`read_json`, which refuses what would not read back as written: an object key
given twice and a number a double cannot hold.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
import unicodedata
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, TypeVar

import orjson
from pydantic import AfterValidator, BaseModel, StringConstraints

from lossgate.errors import InvalidInput

__all__ = [
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_NAME_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_PAYLOAD_BYTES",
    "MAX_VALUE_BYTES",
    "Id",
    "Key",
    "Name",
    "Label",
    "Text",
    "Plain",
    "text_problem",
    "id_problem",
    "shown_id",
    "json_problem",
    "nesting_problem",
    "checked_args",
    "UnreadableJson",
    "read_json",
    "fits_double",
    "as_doubles",
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


def _valid_id(value: str) -> str:
    if (problem := id_problem(value)) is not None:
        raise ValueError(problem)
    return value


Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_valid_id)]
"""A new id (tenant, subject, event, fact, policy, key): 1 to 200 characters that obey
:func:`id_problem`."""
Key = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=r"^[^\x00]+$")]
"""An id that names a record already stored (the event a deletion erases, the fact a supersession
replaces): 1 to 200 characters, no NUL or lone surrogate. Earlier versions stored event and fact
ids with spaces and other characters :data:`Id` refuses, so a reference is looked up exactly as
given, and one that was never stored is simply not found."""
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


# -- identifiers ------------------------------------------------------------------------------

# What no new id may hold, by Unicode general category: separators (Zs: the space, NBSP and
# the other spaces; Zl, Zp: the line and paragraph separators), controls (Cc: NUL, tab,
# newline ...), format characters (Cf: zero-width characters, bidirectional controls such as
# U+202E, the byte order mark, the soft hyphen) and surrogates (Cs). Each is invisible or
# changes how the text around it is shown, so two ids that print alike would name two
# records ("t" and "t\u200b" two tenants), and an id could break the one line an error takes.
# Unicode's whitespace is all in these categories. Ids are compared exactly as given,
# character for character, everywhere: nothing normalizes, folds or strips them.
_ID_FORBIDDEN = {
    "Zs": "a space",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Cc": "a control character",
    "Cf": "a format character",
    "Cs": "a lone surrogate",
}
_ASCII_FORBIDDEN = re.compile(r"[\x00-\x20\x7f/]")  # the same rule for ASCII, and "/", in one search
_ASCII_FORBIDDEN_BUT_SLASH = re.compile(r"[\x00-\x20\x7f]")
_CONTROL_NAMES = {"\x00": "NUL", "\t": "TAB", "\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\x7f": "DELETE"}


def id_problem(value: str, *, slash: bool = False) -> str | None:
    """Why ``value`` cannot be a new id, or ``None``.

    An id is 1 to :data:`MAX_ID_CHARS` characters, none of them whitespace, a control, a
    format character or a line or paragraph separator (Unicode categories Z, Cc, Cf), a
    lone surrogate or a ``/`` (an id is one segment of an HTTP path, where an encoded slash
    is refused; with ``slash``, the rule of an ``entity_id`` value, which may name a path). The one rule for every id a caller gives, in the records, the Python
    API's arguments, the JSON Lines ingest, the HTTP service and the MCP tools.
    """
    if not value:
        return "is empty"
    if len(value) > MAX_ID_CHARS:
        return f"is {len(value):,} characters long; the limit is {MAX_ID_CHARS:,}"
    if value.isascii():
        found = (_ASCII_FORBIDDEN_BUT_SLASH if slash else _ASCII_FORBIDDEN).search(value)
        return None if found is None else _bad_id_char(value, found.start())
    for position, char in enumerate(value):
        if (char == "/" and not slash) or unicodedata.category(char) in _ID_FORBIDDEN:
            return _bad_id_char(value, position)
    return None


def _bad_id_char(value: str, position: int) -> str:
    """What is wrong with the character of ``value`` at ``position``, named by its code point."""
    char = value[position]
    if char == "/":
        return f"contains '/' at position {position}: an id is one segment of a path (the HTTP service's)"
    if char == "\x00" or "\ud800" <= char <= "\udfff":
        return text_problem(value) or ""  # what every text says of them
    category = _ID_FORBIDDEN[unicodedata.category(char)]
    name = _CONTROL_NAMES.get(char) or unicodedata.name(char, "")
    shown = f"U+{ord(char):04X}" + (f" {name}" if name else "")
    return (
        f"contains {shown} ({category}) at position {position}: an id holds no whitespace, "
        "control, format or separator character"
    )


def shown_id(value: str) -> str:
    """``value`` as a message should show it: as it is when it obeys :func:`id_problem`,
    quoted with its escapes otherwise (an id stored before that rule may hold a newline or a
    right-to-left override, which would break or reverse the line it is printed in)."""
    return value if id_problem(value) is None else ascii(value)


# -- JSON documents ---------------------------------------------------------------------------


class UnreadableJson(InvalidInput):
    """A JSON document that parses but would not read back as it was written: an object that
    gives a key twice (one of the values would be dropped unseen), or a number that a double
    cannot hold (a nonzero number that would read as 0, or one past the largest double, which
    would read as infinity). Nothing was read, so nothing was written.

    ``kind`` is ``duplicate_key`` or ``number_out_of_range``; ``loc`` is where, as the keys and
    indexes from the top of the document (``("events", 0, "payload", "x")``), which the
    message names too.
    """

    def __init__(self, kind: str, message: str, loc: tuple[str | int, ...]) -> None:
        self.kind = kind
        self.loc = loc
        super().__init__(message)


class _Refused(Exception):
    """Stops the fast parse at the first duplicate key or unreadable number."""


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def fits_double(number: Decimal) -> bool:
    """Whether ``number`` reads as a double without becoming 0 (when it is not 0) or infinite."""
    as_float = float(number)
    return math.isfinite(as_float) and (as_float != 0.0 or number.is_zero())


def _number(literal: str) -> Decimal:
    number = Decimal(literal)
    if not fits_double(number):
        raise _Refused
    return number


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Refused
    return obj


class _BadNumber(str):
    """A number literal the locating parse found unreadable."""


class _Duplicated(dict[str, Any]):
    """An object the locating parse found with a key given twice (``duplicate``)."""

    duplicate = ""


def _marked_number(literal: str) -> Any:
    number = Decimal(literal)
    return number if fits_double(number) else _BadNumber(literal)


def _marked_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _Duplicated(pairs)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


# One decoder of each kind for every document: ``json.loads`` with keyword arguments builds a
# new one per call, which costs more than the parse itself.
_STRICT = json.JSONDecoder(parse_float=_number, parse_constant=_no_constants, object_pairs_hook=_object)
_LOCATING = json.JSONDecoder(parse_float=_marked_number, parse_constant=_no_constants, object_pairs_hook=_marked_object)


def read_json(text: str) -> Any:
    """Parse one JSON document the way every boundary of lossgate reads one.

    A number with a fraction or an exponent becomes a :class:`~decimal.Decimal`, never a
    binary float, so ``50.0`` stays distinct from ``50`` and ``0.1`` keeps its digits (a
    payload turns it into the double RFC 8785 hashes, which it is then known to fit).
    Raises :class:`UnreadableJson` for a key given twice in one object or a number a double
    cannot hold (``1e-400``, ``1e999``), ``json.JSONDecodeError`` for text that is not JSON,
    ``ValueError`` for ``NaN`` and ``Infinity`` (not JSON numbers) and ``RecursionError`` for
    a document nested past the parser's stack.
    """
    try:
        return _STRICT.decode(text)
    except _Refused:
        pass
    # Rare: parse again, marking instead of stopping, to say where.
    raise _first_unreadable(_LOCATING.decode(text))


def _first_unreadable(doc: Any) -> UnreadableJson:
    """The first duplicate key or unreadable number of ``doc``, in document order (iteratively)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), doc)]
    while stack:
        loc, node = stack.pop()
        where = ".".join(str(part) for part in loc)
        if isinstance(node, _BadNumber):
            return UnreadableJson("number_out_of_range", _number_problem(node, where), loc)
        if isinstance(node, _Duplicated):
            place = f"the object at {where}" if where else "the top-level object"
            return UnreadableJson("duplicate_key", f"duplicate key {_clipped(ascii(node.duplicate))} in {place}", loc)
        if isinstance(node, dict):
            stack.extend(reversed([((*loc, k), v) for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed([((*loc, i), v) for i, v in enumerate(node)]))
    raise AssertionError("the strict parse refused a document the locating parse finds nothing in")


def _clipped(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _number_problem(literal: str, where: str = "") -> str:
    """What is wrong with the number ``literal``, which a double cannot hold."""
    reads_as = "0" if float(Decimal(literal)) == 0 else "infinity"
    at = f" at {where}" if where else ""
    return f"the number {_clipped(literal)}{at} would read as {reads_as}: it is beyond the range of a double"


def as_doubles(value: Any, depth: int = 0) -> Any:
    """A payload with its decimals as the doubles RFC 8785 hashes (the parsers read every
    number with a fraction or an exponent as a :class:`~decimal.Decimal`; facts keep theirs
    exact). Raises ``ValueError`` for a decimal a double cannot hold, rather than storing 0
    or refusing an infinity later. Past :data:`MAX_DEPTH` the value is left as it is: the
    record refuses its nesting."""
    if type(value) is Decimal:
        if not fits_double(value):
            raise ValueError(_number_problem(str(value)))
        return float(value)
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {k: as_doubles(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [as_doubles(v, depth + 1) for v in value]
    return value


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
    if (
        out is None
        or (not nul_ok and b"\\u0000" in out)
        or out.count(b"[") + out.count(b"{") > MAX_DEPTH
        or b"null" in out
    ):
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
_ARG_MAX_CHARS = {
    "reason": MAX_LABEL_CHARS,
    "query": MAX_LABEL_CHARS,
    "tenant_id": MAX_ID_CHARS,
    "subject_id": MAX_ID_CHARS,
    "event_id": MAX_ID_CHARS,
    "fact_id": MAX_ID_CHARS,
    "old_fact_id": MAX_ID_CHARS,
    "artifact_id": MAX_ID_CHARS,
    "recall_id": MAX_ID_CHARS,
    "guard_id": MAX_ID_CHARS,
    "answer": MAX_TEXT_CHARS,
}
# The tenant and the subject every call is addressed to obey the id rule (id_problem), as the
# records do; the other ids name a record already stored (Key) and are only looked up.
_ID_ARGS = frozenset({"tenant_id", "subject_id"})
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
    **{name: (str,) for name in _ARG_MAX_CHARS},
    "query": (str, type(None)),
    "k": (int,),
    "limit": (int,),
    "budget": (int, type(None)),
    "context": (bool,),
}

F = TypeVar("F", bound=Callable[..., Any])


def checked_args(func: F) -> F:
    """Check every string argument of ``func`` (and strings in list or tuple arguments)
    before it runs: a NUL or a lone surrogate raises :class:`InvalidInput`, as does a
    ``tenant_id`` or ``subject_id`` that breaks the id rule (:func:`id_problem`), a
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
        for name, value in (*zip(names, args, strict=False), *kwargs.items()):
            wanted = _ARG_TYPES.get(name)
            if (
                wanted is not None
                and not (value is None and name in optional)
                and (not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted))
            ):
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
    if name in _ID_ARGS and (problem := id_problem(value)) is not None:
        raise InvalidInput(f"{name} {problem}")
    limit = _ARG_MAX_CHARS.get(name)
    if limit is not None and len(value) > limit:
        raise InvalidInput(f"{name} is {len(value):,} characters long; the limit is {limit:,}")
