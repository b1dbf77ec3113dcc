"""The predicate registry: the versioned schema of every kind of fact.

A registry is written as TOML, one table per predicate::

    version = 1

    [predicates."food.peanuts_allowed"]
    type = "bool"                  # bool int decimal money date datetime duration string enum entity_id
    cardinality = "one"            # one | many
    criticality = "critical"       # critical | important | contextual
    category = "attribute"         # attribute preference instruction permission obligation identifier
    owner = "safety-team"
    qualifiers = ["basis", "severity"]
    description = "Whether the subject may be served peanuts."

``enum_values = [...]`` is required for ``type = "enum"``. A ``[[guards]]`` list says how an
agent's planned actions relate to the predicates (:class:`~lossgate.model.records.GuardRule`,
:mod:`lossgate.guard`). For extraction
(:mod:`lossgate.extract`), ``cues = ["invoice total", ...]`` names the phrases that
introduce such a fact in text, and ``extraction = "auto"`` makes a proposal a fact at
once (the default, ``"review"``, keeps it for a person). The registry is
stored in the database, versioned: workers and the CLI all check facts
against the same version. Unknown predicates are rejected, never guessed.

A store with none gets the starter registry the package ships (:mod:`lossgate.model.starter`)
where a memory has it as its default (:meth:`RegistryCache.needed`); a document loaded on
top of the stored registry extends it (:mod:`lossgate.model.registry_overlay`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lossgate.errors import ConfigError, InvalidInput, UnknownPredicate, ValueTypeError
from lossgate.model.canonical import content_hash
from lossgate.model.records import GuardRule, NewFact, Predicate
from lossgate.model.values import ValueMismatch, coerce_value, describe_type

__all__ = [
    "Registry",
    "RegistryCache",
    "load_registry",
    "parse_guard",
    "parse_predicate",
    "parse_registry",
    "read_registry_document",
]


class Registry(BaseModel):
    """A versioned set of predicates."""

    model_config = ConfigDict(frozen=True)

    version: int = Field(ge=1)
    predicates: dict[str, Predicate]
    # How an agent's planned actions relate to the predicates (lossgate.guard)
    guards: tuple[GuardRule, ...] = ()

    def get(self, name: str) -> Predicate:
        """The predicate called ``name``; raises :class:`UnknownPredicate`."""
        try:
            return self.predicates[name]
        except KeyError:
            raise UnknownPredicate(f"unknown predicate {name!r} (registry version {self.version})") from None

    def check(self, fact: NewFact) -> Any:
        """Validate a new fact against its predicate and return its coerced value.

        Raises :class:`UnknownPredicate`, :class:`ValueTypeError` (naming the fact, the
        predicate, the expected and the received type) or :class:`InvalidInput` for a
        qualifier the predicate does not allow.
        """
        pred = self.get(fact.predicate)
        label = fact.fact_id or "(new fact)"
        try:
            value = coerce_value(pred.value_type, fact.value, enum_values=pred.enum_values)
        except ValueMismatch as exc:
            raise ValueTypeError(
                f"fact {label}: predicate {pred.name!r} expects {pred.value_type}, "
                f"received {describe_type(fact.value)} {fact.value!r}{_why(exc, fact.value)}"
            ) from None
        extra = [k for k, _ in fact.qualifiers if k not in pred.qualifiers]
        if extra:
            raise InvalidInput(
                f"fact {label}: predicate {pred.name!r} does not allow qualifier(s) {extra}; "
                f"allowed: {list(pred.qualifiers)}"
            )
        return value

    def document(self) -> dict[str, Any]:
        """The registry as plain JSON (how the store keeps it). The extraction fields are left
        out at their defaults, so a registry that does not use them keeps the document, and
        the content hash, it had before they existed."""
        doc = self.model_dump(mode="json")
        for spec in doc["predicates"].values():
            for listed in ("cues", "synonyms"):
                if not spec.get(listed):
                    spec.pop(listed, None)
            if spec.get("extraction") == "review":
                spec.pop("extraction", None)
        if not doc["guards"]:
            doc.pop("guards")
        else:
            for rule in doc["guards"]:
                for optional in ("qualifier", "currency_field", "conditions_field", "description"):
                    if not rule.get(optional):
                        rule.pop(optional, None)
        return doc


class _StoredRegistries(Protocol):
    """What :class:`RegistryCache` reads: any store transaction has both."""

    def latest_registry_version(self) -> int | None: ...
    def registry_document(self, version: int | None = None) -> dict[str, Any] | None: ...


class _WritableRegistries(_StoredRegistries, Protocol):
    """What :meth:`RegistryCache.needed` writes with: a store's write transaction."""

    def save_registry(self, version: int, document: dict[str, Any], content_hash: str) -> bool: ...


class RegistryCache:
    """The newest stored registry, parsed once per version.

    :meth:`current` costs one small read (the newest version number) per call; the
    document is read and parsed only when that version is new to this cache. A stored
    version never changes content (``save_registry`` refuses), so a version number is a
    complete cache key. One per :class:`~lossgate.api.memory.Memory`, shared with what it opens.

    ``default`` is the registry used on a store that has none (a memory from
    :func:`lossgate.open` has the starter registry, :mod:`lossgate.model.starter`): :meth:`needed`
    stores it, in the caller's write transaction, the first time an operation needs a
    registry and none is stored, so a registry loaded before that is the one used instead.
    """

    def __init__(self, default: Registry | None = None) -> None:
        self._registry: Registry | None = None
        self.default = default

    def current(self, tx: _StoredRegistries) -> Registry | None:
        """The newest registry stored, as ``tx`` sees it; ``None`` if none was ever loaded."""
        version = tx.latest_registry_version()
        if version is None:
            return None
        registry = self._registry
        if registry is None or registry.version != version:
            registry = self._registry = Registry.model_validate(tx.registry_document(version))
        return registry

    def needed(self, tx: _WritableRegistries) -> Registry | None:
        """:meth:`current`, or, on a store that has no registry, the ``default`` stored now in
        ``tx`` (it commits or rolls back with the operation that needed it); ``None`` when
        there is neither."""
        registry = self.current(tx)
        if registry is None and self.default is not None:
            doc = self.default.document()
            # Another process may have stored a registry since current() read: the store keeps
            # the first (the same content again is a no-op; other content raises IdempotencyConflict).
            tx.save_registry(self.default.version, doc, content_hash(doc))
            registry = self.current(tx)
        return registry


def _why(exc: ValueMismatch, value: Any) -> str:
    """The coercion's reason, unless it only repeats the received type."""
    reason = str(exc)
    return "" if reason == f"got {describe_type(value)}" else f" ({reason})"


def parse_registry(data: dict[str, Any]) -> Registry:
    """Build a registry from its TOML/JSON document form."""
    if not isinstance(data, dict) or "version" not in data or "predicates" not in data:
        raise ConfigError("a registry needs a top-level 'version' and a [predicates] table")
    preds = {}
    for name, spec in (data.get("predicates") or {}).items():
        preds[name] = parse_predicate(name, spec)
    guards = _guards(data.get("guards", []), preds)
    try:
        return Registry(version=data["version"], predicates=preds, guards=guards)
    except ValidationError as exc:
        raise ConfigError(f"registry: {exc.errors()[0]['msg']}") from None


def parse_predicate(name: str, spec: Any) -> Predicate:
    """One ``[predicates."NAME"]`` table. Raises :class:`ConfigError` naming the predicate."""
    if not isinstance(spec, dict):
        raise ConfigError(f"predicate {name!r}: expected a table")
    spec = dict(spec)
    if "type" in spec:
        spec["value_type"] = spec.pop("type")
    spec.setdefault("name", name)
    try:
        pred = Predicate.model_validate(spec)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"predicate {name!r}: {where}: {first['msg']}") from None
    if pred.name != name:
        raise ConfigError(f"predicate {name!r}: name field says {pred.name!r}")
    if pred.value_type == "enum" and not pred.enum_values:
        raise ConfigError(f"predicate {name!r}: enum predicates need enum_values")
    return pred


def parse_guard(n: int, spec: Any) -> GuardRule:
    """The ``n``-th ``[[guards]]`` table, alone (what it reads is checked with the registry's
    predicates, by :func:`parse_registry`). Raises :class:`ConfigError` naming the rule."""
    if not isinstance(spec, dict):
        raise ConfigError(f"guard {n}: expected a table")
    try:
        return GuardRule.model_validate(spec)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"guard {spec.get('name', n)!r}: {where}: {first['msg']}") from None


def _guards(data: Any, predicates: dict[str, Predicate]) -> tuple[GuardRule, ...]:
    """The ``[[guards]]`` list: each rule valid, named once, reading predicates the registry has."""
    if not isinstance(data, list):
        raise ConfigError("guards: expected a list of tables ([[guards]])")
    rules: list[GuardRule] = []
    for n, spec in enumerate(data, 1):
        rule = parse_guard(n, spec)
        label = f"guard {rule.name!r}"
        if any(r.name == rule.name for r in rules):
            raise ConfigError(f"{label}: a second guard of that name")
        read = [name for name in predicates if rule.reads(name)]
        if not read:
            raise ConfigError(f"{label}: no predicate of the registry matches {list(rule.predicates)}")
        if rule.kind == "at_most" and any(predicates[p].value_type not in ("int", "decimal", "money") for p in read):
            raise ConfigError(f"{label}: at_most reads numbers, and {read} are not all int, decimal or money")
        if rule.qualifier and not any(rule.qualifier in predicates[p].qualifiers for p in read):
            raise ConfigError(f"{label}: no predicate it reads has the qualifier {rule.qualifier!r}")
        rules.append(rule)
    return tuple(rules)


def load_registry(path: str | Path) -> Registry:
    """Read a registry TOML file. Raises :class:`ConfigError` if unreadable or invalid."""
    return parse_registry(read_registry_document(path))


def read_registry_document(path: str | Path) -> dict[str, Any]:
    """A registry TOML file's document, not yet checked as a registry. Raises
    :class:`ConfigError` if the file is unreadable, not UTF-8 or not TOML."""
    if not isinstance(path, (str, os.PathLike)):  # open() takes an int as a file descriptor
        raise ConfigError(f"a registry is a TOML file's path, not {type(path).__name__} {path!r}")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"cannot read registry {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:  # TOML is UTF-8; tomllib would raise this untyped
        raise ConfigError(
            f"registry {path} is not UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r}); TOML files are UTF-8"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"registry {path} is not valid TOML: {exc}") from None
    return data
