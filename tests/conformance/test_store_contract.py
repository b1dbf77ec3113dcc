"""The shipped store contract (:mod:`lossgate.testing.store_contract`) against both built-in stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lossgate.store import Store, open_store
from lossgate.testing.store_contract import StoreContract


class TestBuiltInStores(StoreContract):
    @pytest.fixture
    def store(self, store_url: str) -> Iterator[Store]:
        # As the worker: the contract claims jobs too (a worker may do all an application may).
        store = open_store(store_url, role="worker")
        store.migrate()
        yield store
        store.close()
