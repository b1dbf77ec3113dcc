"""The access tier's primitives (API keys, idempotency records), written once for both SQL
engines (:mod:`lossgate.store.core.tx` mixes them in).

The one engine-specific step is :meth:`CoreAccessReads._reveal_key`: before looking a key
up by the hash of its secret, PostgreSQL tells row-level security which hash the
transaction knows (``lossgate.key_hash``), since the tenant is not known yet; SQLite has no
row-level security and does nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lossgate.model.api_keys import ApiKey, IdempotencyRecord
from lossgate.store import rows
from lossgate.store.core.base import TxBase

__all__ = ["CoreAccessReads", "CoreAccessWrites"]

_KEY_COLUMNS = "tenant_id, key_id, key_hash, scopes, name, created_at, revoked_at"
_IDEMPOTENCY_COLUMNS = "tenant_id, idempotency_key, request_hash, status, response, created_at"


def _key(r: Any) -> ApiKey:
    return ApiKey(
        tenant_id=r[0],
        key_id=r[1],
        key_hash=r[2],
        scopes=tuple(r[3].split()),
        name=r[4],
        created_at=rows.instant_from(r[5]),
        revoked_at=None if r[6] is None else rows.instant_from(r[6]),
    )


class CoreAccessReads(TxBase):
    """Reads of API keys and idempotency records."""

    def _reveal_key(self, key_hash: str) -> None:
        """Let the transaction see the key row whose hash is ``key_hash`` (row-level security)."""

    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        self._reveal_key(key_hash)
        row = self._one(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash=?", (key_hash,))
        return None if row is None else _key(row)

    def api_keys(self, tenant_id: str) -> list[ApiKey]:
        return [
            _key(r)
            for r in self._all(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE tenant_id=? ORDER BY created_at, key_id", (tenant_id,)
            )
        ]

    def idempotency_record(self, tenant_id: str, idempotency_key: str) -> IdempotencyRecord | None:
        r = self._one(
            f"SELECT {_IDEMPOTENCY_COLUMNS} FROM idempotency_keys WHERE tenant_id=? AND idempotency_key=?",
            (tenant_id, idempotency_key),
        )
        if r is None:
            return None
        return IdempotencyRecord(
            tenant_id=r[0],
            idempotency_key=r[1],
            request_hash=r[2],
            status=r[3],
            response=r[4],
            created_at=rows.instant_from(r[5]),
        )


class CoreAccessWrites(TxBase):
    """Storing and revoking API keys; storing idempotency records."""

    def insert_api_key(self, key: ApiKey) -> None:
        self._run(
            f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
            (
                key.tenant_id,
                key.key_id,
                key.key_hash,
                " ".join(key.scopes),
                key.name,
                self._d.ts(key.created_at),
                self._d.ts_or_none(key.revoked_at),
            ),
        )

    def revoke_api_key(self, tenant_id: str, key_id: str, *, at: datetime) -> bool:
        return (
            self._run(
                "UPDATE api_keys SET revoked_at=? WHERE tenant_id=? AND key_id=? AND revoked_at IS NULL",
                (self._d.ts(at), tenant_id, key_id),
            )
            == 1
        )

    def save_idempotency_record(self, record: IdempotencyRecord) -> None:
        self._run(
            f"INSERT INTO idempotency_keys ({_IDEMPOTENCY_COLUMNS}) VALUES (?,?,?,?,?,?)",
            (
                record.tenant_id,
                record.idempotency_key,
                record.request_hash,
                record.status,
                record.response,
                self._d.ts(record.created_at),
            ),
        )
