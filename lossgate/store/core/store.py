"""What every SQL store does the same way around its transactions: when to migrate."""

from __future__ import annotations

from typing import ClassVar

from lossgate.store.core.migrations import latest_version

__all__ = ["CoreStore"]


class CoreStore:
    """The part of :class:`~lossgate.store.protocol.Store` both SQL engines share.

    ``engine`` names the folder of the engine's migrations; an engine supplies
    :meth:`schema_version` and :meth:`_apply_migrations` (in one transaction, safe
    when two processes migrate at once)."""

    engine: ClassVar[str]

    def schema_version(self) -> int:
        raise NotImplementedError

    def _apply_migrations(self) -> None:
        raise NotImplementedError

    def migrate(self) -> int:
        latest = latest_version(self.engine)
        if self.schema_version() == latest:
            return latest  # the common case (every open): no lock taken to learn nothing changed
        self._apply_migrations()
        return self.schema_version()
