"""The access tier: the HTTP service's API keys and idempotency records (:mod:`lossgate.model.api_keys`)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from lossgate.model.api_keys import ApiKey, IdempotencyRecord
from lossgate.store.protocol.scope import tenant_of, unscoped

__all__ = ["AccessReadTx", "AccessWriteTx"]


class AccessReadTx(Protocol):
    """Reads of the HTTP service's API keys and idempotency records (:mod:`lossgate.model.api_keys`).

    **Authentication comes before the tenant is known.** :meth:`api_key_by_hash` is the
    one read that finds a row without its tenant: by the sha256 of a secret that only the
    key's holder knows. Every other primitive here is scoped to the tenant it names. On
    PostgreSQL, row-level security lets a transaction see a key's row either by its tenant
    (the tenant it has set) or by its hash (``lossgate.key_hash``, which only
    :meth:`api_key_by_hash` sets): a transaction that does not know a secret's hash sees
    no other tenant's keys."""

    @unscoped
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key whose secret hashes to ``key_hash``, whatever its tenant, revoked or not,
        or ``None``."""

    @tenant_of("tenant_id")
    def api_keys(self, tenant_id: str) -> list[ApiKey]:
        """Every key of the tenant, revoked ones included, oldest first (``created_at``,
        then ``key_id`` bytewise)."""

    @tenant_of("tenant_id")
    def idempotency_record(self, tenant_id: str, idempotency_key: str) -> IdempotencyRecord | None:
        """The answer stored for the tenant's idempotency key, or ``None``."""


class AccessWriteTx(AccessReadTx, Protocol):
    """Writes of API keys and idempotency records. Neither is ever deleted: a key is
    revoked (kept for audit), and an idempotency record holds no content to erase."""

    @tenant_of("key")
    def insert_api_key(self, key: ApiKey) -> None:
        """Store a new key. Raises :class:`~lossgate.errors.IdempotencyConflict` if its id is
        taken in the tenant or its hash anywhere."""

    @tenant_of("tenant_id")
    def revoke_api_key(self, tenant_id: str, key_id: str, *, at: datetime) -> bool:
        """Mark the tenant's key revoked at ``at``; True if it was active (False if it was
        already revoked or is not the tenant's)."""

    @tenant_of("record")
    def save_idempotency_record(self, record: IdempotencyRecord) -> None:
        """Store the answer to a request under its tenant and idempotency key. Raises
        :class:`~lossgate.errors.IdempotencyConflict` if the key already has one (a
        concurrent request with the same key committed first)."""
