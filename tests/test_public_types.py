"""Every type a public method of lossgate's public classes returns is importable from
:mod:`lossgate` (and named in ``lossgate.__all__``): a user can annotate what they get back.

The annotations are read as the type checker reads them: the names a module imports only
under ``TYPE_CHECKING`` or inside a function are resolved by importing them here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import typing
from types import ModuleType
from typing import Any

import pytest

import lossgate


def _namespace(module: ModuleType) -> dict[str, Any]:
    """``module``'s globals, plus every name it imports anywhere in its source (under
    ``TYPE_CHECKING``, inside a function): the modules it imports, the names it takes from lossgate."""
    names = dict(vars(module))
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.setdefault(
                    alias.asname or alias.name.split(".")[0],
                    importlib.import_module(alias.name if alias.asname else alias.name.split(".")[0]),
                )
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("lossgate"):
            source = importlib.import_module(node.module or "lossgate")
            for alias in node.names:
                if hasattr(source, alias.name):
                    names[alias.asname or alias.name] = getattr(source, alias.name)
    return names


def _lossgate_classes(annotation: Any, found: set[type]) -> set[type]:
    """The classes defined in lossgate that ``annotation`` names, however nested
    (``list[Fact] | None``, ``Iterator[tuple[Event, Job]]``)."""
    if typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            _lossgate_classes(arg, found)
    elif isinstance(annotation, type) and annotation.__module__.startswith("lossgate"):
        found.add(annotation)
    return found


def _public_methods(cls: type) -> list[tuple[str, Any]]:
    """(name, function) for each public method and property ``cls`` defines in lossgate."""
    out = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if callable(function) and getattr(function, "__module__", "").startswith("lossgate"):
            out.append((name, function))
    return out


def _public_classes() -> list[type]:
    return [
        value
        for name in lossgate.__all__
        if isinstance(value := getattr(lossgate, name), type) and value.__module__.startswith("lossgate")
    ]


def returned_types_missing() -> dict[str, list[str]]:
    """``module.Class`` -> the methods returning it, for each class lossgate does not export."""
    missing: dict[str, list[str]] = {}
    for cls in _public_classes():
        for name, function in _public_methods(cls):
            hints = typing.get_type_hints(function, globalns=_namespace(sys.modules[function.__module__]))
            for returned in _lossgate_classes(hints.get("return"), set()):
                exported = returned.__name__ in lossgate.__all__ and getattr(lossgate, returned.__name__) is returned
                if not exported:
                    missing.setdefault(f"{returned.__module__}.{returned.__name__}", []).append(
                        f"{cls.__name__}.{name}"
                    )
    return missing


def test_the_walk_reads_the_facade():
    methods = dict(_public_methods(lossgate.Memory))
    assert {"append", "recall", "consolidate"} <= set(methods)
    hints = typing.get_type_hints(methods["recall"], globalns=_namespace(sys.modules[lossgate.Memory.__module__]))
    assert _lossgate_classes(hints["return"], set()) == {lossgate.RecallResult}


@pytest.mark.slow
def test_every_type_a_public_method_returns_is_exported():
    missing = returned_types_missing()
    assert not missing, "returned but not importable from lossgate:\n" + "\n".join(
        f"{name}: {', '.join(sorted(users))}" for name, users in sorted(missing.items())
    )


@pytest.mark.slow
def test_an_unexported_return_type_is_found(monkeypatch):
    monkeypatch.setattr(lossgate, "__all__", [n for n in lossgate.__all__ if n != "Rollout"])
    assert "lossgate.policy.rollout.Rollout" in returned_types_missing()


@pytest.mark.parametrize("name", ["EmbeddingError", "InvalidRecord", "ApiKey", "TierPolicy", "RegateResult"])
def test_errors_and_records_the_api_raises_or_returns_are_exported(name):
    assert name in lossgate.__all__ and getattr(lossgate, name).__name__ == name
