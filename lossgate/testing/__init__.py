"""Test support that ships with lossgate, so users can test their own code without mocks.

:mod:`lossgate.testing.postgres` gives each test an empty, migrated PostgreSQL database.
:mod:`lossgate.testing.store_contract` is the store contract as a test suite: subclass
``StoreContract`` (or the classes of the tiers a store has so far) with a ``store`` fixture to prove a
store of your own (docs/writing-a-store.md).
"""
