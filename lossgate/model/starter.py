"""The starter registry: the predicate registry lossgate uses when none is loaded.

It ships in the package (``lossgate/model/registry_data/starter.toml``): common facts about a person
an assistant serves (allergies and diet, whether and how to contact them, addresses, names,
timezone, language, preferences, standing instructions, deadlines, commitments, references,
a spending limit with its condition), the cues the deterministic extractor reads and the
guard rules an agent's planned actions are checked by. ``lossgate init`` without
``--predicates`` stores it; so does a memory from :func:`lossgate.open` the first time it needs
a registry on a store that has none (:class:`~lossgate.model.registry.RegistryCache`). It is a
registry like any other once stored: version 1, extended with
:meth:`~lossgate.Admin.extend_predicates` (:mod:`lossgate.model.registry_overlay`).
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources
from typing import Any

from lossgate.model.canonical import content_hash
from lossgate.model.registry import Registry, parse_registry

__all__ = ["STARTER_FILE", "starter_registry", "is_starter"]

STARTER_FILE = "model/registry_data/starter.toml"
"""Where the starter registry's TOML lives, inside the ``lossgate`` package."""


def starter_text() -> str:
    """The starter registry's TOML, as shipped."""
    return (resources.files("lossgate") / STARTER_FILE).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def starter_registry() -> Registry:
    """The starter registry, parsed once per process (a :class:`Registry` is immutable)."""
    return parse_registry(tomllib.loads(starter_text()))


@lru_cache(maxsize=1)
def _starter_hash() -> str:
    return content_hash(starter_registry().document())


def is_starter(document: dict[str, Any] | None) -> bool:
    """Whether a stored registry document is the starter registry, as this lossgate ships it."""
    return document is not None and content_hash(document) == _starter_hash()
