"""Storage backends behind one protocol. A URL becomes a backend here and nowhere else."""

from __future__ import annotations

from lossgate.errors import ConfigError
from lossgate.store.protocol import ReadTx, Store, WriteTx

__all__ = ["Store", "ReadTx", "WriteTx", "open_store", "DEFAULT_URL", "ROLES"]

DEFAULT_URL = "sqlite:///lossgate.db"
ROLES = ("app", "worker")


def open_store(url: str | None = None, *, role: str = "app") -> Store:
    """Open the store a URL names: ``sqlite:///relative.db``, ``sqlite:////abs/path.db``,
    or ``postgresql://user@host/db``. Raises :class:`ConfigError` for anything else.

    ``role`` is who the store acts for: ``"app"`` or ``"worker"`` (the only one that may
    claim rebuild jobs and extend their leases). PostgreSQL runs every transaction as the
    matching database role (docs/roles.md); SQLite, one embedded file with no database
    roles, ignores it: whoever can open the file can do everything."""
    if role not in ROLES:
        raise ConfigError(f"unknown store role {role!r} (expected one of {', '.join(ROLES)})")
    url = url or DEFAULT_URL
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if not path:
            raise ConfigError(f"SQLite URL {url!r} names no file")
        from lossgate.store.sqlite import SQLiteStore

        return SQLiteStore(path)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from lossgate.store.postgres import PostgresStore
        except ImportError as exc:  # pragma: no cover - depends on installed extras
            raise ConfigError(f"PostgreSQL support needs `pip install lossgate[postgres]`: {exc}") from exc
        return PostgresStore(url, role=role)
    raise ConfigError(f"unsupported database URL {url!r} (expected sqlite:///PATH or postgresql://...)")
