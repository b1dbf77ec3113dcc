"""Test support that ships with lossgate, so users can test their own code without mocks.

:mod:`lossgate.testing.postgres` gives each test an empty, migrated PostgreSQL database.
"""
