"""What every SQL store does the same way around its transactions: when to migrate."""

from __future__ import annotations

from typing import ClassVar

from lossgate.store.core.migrations import migrations

__all__ = ["CoreStore"]


class CoreStore:
    """The part of :class:`~lossgate.store.protocol.Store` both SQL engines share.

    ``engine`` names the folder of the engine's migrations; an engine supplies
    :meth:`schema_version` and :meth:`_apply_migrations` (in one transaction, safe
    when two processes migrate at once)."""

    engine: ClassVar[str]

    def schema_version(self) -> int:
        raise NotImplementedError

    def applied_migrations(self) -> frozenset[int]:
        """The versions recorded in ``schema_migrations`` (none before the first migration)."""
        raise NotImplementedError

    def _apply_migrations(self) -> None:
        raise NotImplementedError

    def migrate(self) -> int:
        shipped = frozenset(v for v, _ in migrations(self.engine))
        if self.applied_migrations() >= shipped:
            # the common case (every open): no lock taken to learn nothing changed. Every
            # version is compared, not the highest: a lower-numbered migration shipped later
            # (numbers are reserved per change) is still applied.
            return max(shipped)
        self._apply_migrations()
        return self.schema_version()
