"""The gate tests' registry: the one the shipped gate cases were written against. Their
helpers (cases from compact specs, the gate run on a case) are in :mod:`tests.support.gate`."""

from __future__ import annotations

import pytest

from lossgate.model.registry import Registry, load_registry
from tests.gate.build_cases import FIXTURES


@pytest.fixture(scope="session")
def registry() -> Registry:
    return load_registry(FIXTURES / "predicates.toml")
