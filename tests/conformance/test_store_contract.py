"""The shipped store contract (:mod:`lossgate.testing.store_contract`) against both built-in stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lossgate.store import Store, open_store
from lossgate.store.protocol import TIERS
from lossgate.testing.store_contract import TIER_CONTRACTS, RulesContract, StoreContract


class TestBuiltInStores(StoreContract):
    @pytest.fixture
    def store(self, store_url: str) -> Iterator[Store]:
        # As the worker: the contract claims jobs too (a worker may do all an application may).
        store = open_store(store_url, role="worker")
        store.migrate()
        yield store
        store.close()


def test_each_test_of_the_contract_belongs_to_one_tier_class_or_to_the_rules() -> None:
    """A store built tier by tier runs the tier classes: together with the rules they are the
    whole contract, each test in one class only."""
    owners: dict[str, list[str]] = {}
    for cls in (*TIER_CONTRACTS, RulesContract):
        for name in vars(cls):
            if name.startswith("test_"):
                owners.setdefault(name, []).append(cls.__name__)
    assert {name: classes for name, classes in owners.items() if len(classes) > 1} == {}
    assert set(owners) == {name for name in dir(StoreContract) if name.startswith("test_")}
    assert [cls.__name__.removesuffix("Contract").lower() for cls in TIER_CONTRACTS] == list(TIERS)
