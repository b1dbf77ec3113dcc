"""Storage backends behind one protocol. A URL becomes a backend here and nowhere else."""

from __future__ import annotations

import os
from collections.abc import Callable

from lossgate.errors import ConfigError
from lossgate.store.protocol import ReadTx, Store, WriteTx

__all__ = ["DEFAULT_URL", "ROLES", "ReadTx", "Store", "WriteTx", "open_store", "register_scheme"]

DEFAULT_URL = "sqlite:///lossgate.db"
ROLES = ("app", "worker")
_BUILT_IN = ("sqlite:", "postgresql:", "postgres:")

# A third store's URL prefix -> its opener (url, role) -> Store; see register_scheme.
_SCHEMES: dict[str, Callable[[str, str], Store]] = {}


def register_scheme(prefix: str, opener: Callable[[str, str], Store]) -> None:
    """Let :func:`open_store` (and so ``lossgate.open``, workers and the CLI, in this
    process) open URLs that start with ``prefix`` (``"mystore://"``) with
    ``opener(url, role)``. Registering a prefix again replaces its opener. The built-in
    schemes cannot be taken over: :class:`ConfigError`. A process that did not run the
    registration (a child process a test starts) does not know the scheme."""
    if not prefix or any(prefix.startswith(b) or b.startswith(prefix) for b in _BUILT_IN):
        raise ConfigError(f"URL prefix {prefix!r} is empty or overlaps a built-in scheme ({', '.join(_BUILT_IN)})")
    _SCHEMES[prefix] = opener


def open_store(url: str | None = None, *, role: str = "app", create: bool = True) -> Store:
    """Open the store a URL names: ``sqlite:///relative.db``, ``sqlite:////abs/path.db``,
    or ``postgresql://user@host/db``. Raises :class:`ConfigError` for anything else.

    A SQLite file that does not exist is created, unless ``create`` is false: then
    :class:`ConfigError` names the path (a mistyped path is a wrong URL, not an empty
    database). A server's database is never created; ``create`` applies to SQLite only.

    ``role`` is who the store acts for: ``"app"`` or ``"worker"`` (the only one that may
    claim rebuild jobs and extend their leases). PostgreSQL runs every transaction as the
    matching database role (docs/roles.md); SQLite, one embedded file with no database
    roles, ignores it: whoever can open the file can do everything. A scheme added with
    :func:`register_scheme` opens with its opener (the longest matching prefix)."""
    if role not in ROLES:
        raise ConfigError(f"unknown store role {role!r} (expected one of {', '.join(ROLES)})")
    url = url or DEFAULT_URL
    for prefix in sorted((p for p in _SCHEMES if url.startswith(p)), key=len, reverse=True)[:1]:
        return _SCHEMES[prefix](url, role)
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path:
            raise ConfigError(f"SQLite URL {url!r} names no file")
        if "?" in path:  # it would be read as part of the file's name
            raise ConfigError(
                f"SQLite URL {url!r}: a query ({path[path.index('?') :]!r}) is not read; name the file alone"
            )
        if not create and path != ":memory:" and not os.path.exists(path):
            raise ConfigError(f"no SQLite database at {path} (lossgate init creates one)")
        from lossgate.store.sqlite import SQLiteStore

        return SQLiteStore(path)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from lossgate.store.postgres import PostgresStore
        except ImportError as exc:  # pragma: no cover - depends on installed extras
            raise ConfigError(f"PostgreSQL support needs `pip install lossgate[postgres]`: {exc}") from exc
        return PostgresStore(url, role=role)
    raise ConfigError(f"unsupported database URL {url!r} (expected sqlite:///PATH or postgresql://...)")
