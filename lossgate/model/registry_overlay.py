"""A registry document loaded on top of the stored registry (:meth:`lossgate.Admin.extend_predicates`,
``lossgate predicates extend FILE.toml``).

The document is written like a registry (``[predicates."NAME"]`` tables, a ``[[guards]]``
list; ``version`` is optional) and read against the *base*, the newest stored registry (on a
store with none, the memory's default: the starter registry). The rule, per table:

* a predicate or guard rule (by name) the base does not have is **added**;
* one the base has with the same definition is **kept**: extending again with the same
  document changes nothing and stores nothing;
* one the base has with another definition is a :class:`~lossgate.errors.RegistryConflict`
  naming what differs, unless its table says ``override = true``: then the document's
  definition **replaces** the base's. ``override = true`` on a name the base does not have is
  a ``RegistryConflict`` too (a misspelt name would otherwise add a second predicate);
* nothing is removed: the base's other predicates and rules stay as they are.

The result is a new registry version: the document's ``version`` if it gives one (it must be
above the base's), else the base's plus one, checked whole as any registry is (every guard
rule must read predicates it has), and stored as :meth:`~lossgate.Admin.load_predicates`
stores one, re-gating the tenants named when it tightens the gate.
"""

from __future__ import annotations

from typing import Any

from lossgate.errors import ConfigError, RegistryConflict
from lossgate.model.records import GuardRule, Predicate
from lossgate.model.registry import Registry, parse_guard, parse_predicate, parse_registry

__all__ = ["overlay"]

_KEYS = ("version", "predicates", "guards")
# How a registry's TOML names a Predicate field, where it differs from the record's.
_TOML_NAMES = {"value_type": "type"}


def overlay(base: Registry | None, data: dict[str, Any]) -> Registry | None:
    """The registry ``data`` makes of ``base`` by the module's rule, or ``None`` when it
    changes nothing. Raises :class:`RegistryConflict` or :class:`ConfigError` (a malformed
    document, an invalid result)."""
    if not isinstance(data, dict):
        raise ConfigError(f"a registry extension is a document (a TOML table), not {type(data).__name__}")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise ConfigError(f"registry extension: unknown key(s) {unknown}; it holds {list(_KEYS)}")
    tables = data.get("predicates", {})
    if not isinstance(tables, dict):
        raise ConfigError('registry extension: predicates must be a table of tables ([predicates."NAME"])')
    rules = data.get("guards", [])
    if not isinstance(rules, list):
        raise ConfigError("guards: expected a list of tables ([[guards]])")
    was = base.version if base is not None else 0
    predicates: dict[str, Predicate] = dict(base.predicates) if base is not None else {}
    guards: dict[str, GuardRule] = {g.name: g for g in base.guards} if base is not None else {}
    changed = False
    for name, spec in tables.items():
        override, spec = _override(f"predicate {name!r}", spec)
        new = parse_predicate(name, spec)
        changed |= _merge(predicates, name, new, override, f"predicate {name!r}", was)
    for n, spec in enumerate(rules, 1):
        override, spec = _override(f"guard {n}", spec)
        rule = parse_guard(n, spec)
        changed |= _merge(guards, rule.name, rule, override, f"guard {rule.name!r}", was)
    if not changed:
        return None
    version = data.get("version", was + 1)
    if isinstance(version, bool) or not isinstance(version, int) or version <= was:
        raise RegistryConflict(
            f"registry extension: version {version!r} must be a whole number above the stored registry's version {was}"
        )
    return parse_registry(
        {
            "version": version,
            "predicates": {name: p.model_dump(mode="json") for name, p in predicates.items()},
            "guards": [g.model_dump(mode="json") for g in guards.values()],
        }
    )


def _override(label: str, spec: Any) -> tuple[bool, Any]:
    """A table's ``override`` flag, and the table without it."""
    if not isinstance(spec, dict) or "override" not in spec:
        return False, spec
    rest = dict(spec)
    flag = rest.pop("override")
    if not isinstance(flag, bool):
        raise ConfigError(f"{label}: override must be true or false, not {flag!r}")
    return flag, rest


def _merge(
    into: dict[str, Any], name: str, new: Predicate | GuardRule, override: bool, label: str, version: int
) -> bool:
    """Add or replace ``new`` in ``into`` by the module's rule; whether it changed anything."""
    old = into.get(name)
    if old is None:
        if override:
            raise RegistryConflict(
                f"{label}: override = true, but registry v{version} has no such {label.split()[0]} to override"
            )
        into[name] = new
        return True
    if old == new:
        return False
    if not override:
        raise RegistryConflict(
            f"{label} is already defined by registry v{version}, differently ({_differences(old, new)}); "
            "to replace that definition, say override = true in its table"
        )
    into[name] = new
    return True


def _differences(old: Predicate | GuardRule, new: Predicate | GuardRule) -> str:
    """What differs between two definitions, field by field (the first three)."""
    fields = [f for f in type(old).model_fields if getattr(old, f) != getattr(new, f)]
    shown = [f"{_TOML_NAMES.get(f, f)}: {_shown(getattr(old, f))} -> {_shown(getattr(new, f))}" for f in fields[:3]]
    return "; ".join(shown) + (f"; and {len(fields) - 3} more" if len(fields) > 3 else "")


def _shown(value: Any) -> str:
    text = repr(list(value) if isinstance(value, tuple) else value)
    return text if len(text) <= 60 else text[:57] + "..."
