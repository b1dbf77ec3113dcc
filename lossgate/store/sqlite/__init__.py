"""The embedded SQLite store (``sqlite:///path.db``): :mod:`.store` opens transactions,
:mod:`.tx` and :mod:`.derived` hold SQLite's own primitives beside the shared ones of
:mod:`lossgate.store.core`, ``migrations/`` the schema."""

from lossgate.store.sqlite.store import SQLiteStore
from lossgate.store.sqlite.tx import SQLiteReadTx, SQLiteWriteTx

__all__ = ["SQLiteStore", "SQLiteReadTx", "SQLiteWriteTx"]
