"""The access tier (:mod:`lossgate.store.protocol.access`): API keys found by the hash of their
secret across tenants, listed and revoked per tenant, never two with one hash; idempotency
records kept once per tenant and key."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from lossgate.errors import IdempotencyConflict
from lossgate.model.api_keys import ApiKey, IdempotencyRecord
from lossgate.store.protocol import Store
from lossgate.testing.store_contract.support import NOW, Contract, T, check_signatures

__all__ = ["AccessContract"]


class AccessContract(Contract):
    """The access tier's tests (see the module); a subclass provides the ``store`` fixture,
    as for :class:`~lossgate.testing.store_contract.StoreContract`."""

    def test_the_access_tier_is_implemented_with_its_exact_signatures(self, store: Store) -> None:
        assert check_signatures(store, ("access",)) == []

    def test_api_keys_are_found_by_hash_across_tenants_and_listed_and_revoked_per_tenant(self, store: Store) -> None:
        def key(tenant: str, key_id: str, key_hash: str, at: datetime = NOW) -> ApiKey:
            return ApiKey(
                tenant_id=tenant,
                key_id=key_id,
                key_hash=key_hash,
                scopes=("read", "write"),
                name=f"{tenant} {key_id}",
                created_at=at,
            )

        with store.write() as tx:
            tx.insert_api_key(key(T, "k0", "h0", NOW + timedelta(seconds=1)))
            tx.insert_api_key(key(T, "kb", "hb"))
            tx.insert_api_key(key(T, "ka", "ha"))
            tx.insert_api_key(key("other", "ka", "h-other"))
        with store.read() as tx:
            assert tx.api_key_by_hash("h-other") == key("other", "ka", "h-other")  # before any tenant is known
            assert tx.api_key_by_hash("hb") == key(T, "kb", "hb") and tx.api_key_by_hash("nope") is None
            assert [k.key_id for k in tx.api_keys(T)] == ["ka", "kb", "k0"]  # created_at, then key id
            assert [k.key_id for k in tx.api_keys("other")] == ["ka"] and tx.api_keys("nobody") == []
        with store.write() as tx:
            assert tx.revoke_api_key("other", "kb", at=NOW) is False  # not that tenant's key
            assert tx.revoke_api_key(T, "kb", at=NOW) is True
            assert tx.revoke_api_key(T, "kb", at=NOW + timedelta(hours=1)) is False  # already revoked
        with store.read() as tx:
            revoked = tx.api_key_by_hash("hb")
            assert revoked is not None and revoked.revoked_at == NOW and not revoked.active
            assert [k.active for k in tx.api_keys(T)] == [True, False, True]
            assert [k.active for k in tx.api_keys("other")] == [True]
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.insert_api_key(key("third", "k9", "ha"))  # a hash is never taken twice, in any tenant
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.insert_api_key(key(T, "ka", "h9"))  # an id is taken once per tenant
        with store.read() as tx:
            assert tx.api_keys("third") == [] and tx.api_key_by_hash("h9") is None

    def test_idempotency_records_are_kept_once_per_tenant_and_key(self, store: Store) -> None:
        record = IdempotencyRecord(
            tenant_id=T,
            idempotency_key="retry-1",
            request_hash="sha256:r",
            status=200,
            response='{"appended": 2}',
            created_at=NOW,
        )
        with store.write() as tx:
            assert tx.idempotency_record(T, "retry-1") is None
            tx.save_idempotency_record(record)
            tx.save_idempotency_record(record.model_copy(update={"tenant_id": "other", "status": 201}))
        with store.read() as tx:
            assert tx.idempotency_record(T, "retry-1") == record
            stored = tx.idempotency_record("other", "retry-1")
            assert stored is not None and stored.status == 201
            assert tx.idempotency_record("third", "retry-1") is None and tx.idempotency_record(T, "retry-2") is None
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.save_idempotency_record(record.model_copy(update={"request_hash": "sha256:other"}))
        with store.read() as tx:
            assert tx.idempotency_record(T, "retry-1") == record
