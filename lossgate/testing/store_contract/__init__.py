"""The store contract as a test suite: what :mod:`lossgate.store.protocol` promises,
checked against any store, one test class per tier.

Subclass :class:`StoreContract` in a test module of your own and give it a ``store``
fixture that yields an empty, migrated store which may also claim jobs (on PostgreSQL,
one opened with ``role="worker"``)::

    import pytest
    from lossgate.testing.store_contract import StoreContract

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            store = MyStore(tmp_path / "my.db")
            store.migrate()
            yield store
            store.close()

pytest then runs every test of every tier against it. A store built tier by tier runs
the classes of the tiers it has instead, in :data:`TIER_CONTRACTS`' order (each tier's
tests write the ledger tier too, and check only their tier's signatures), and
:class:`RulesContract` once it has them all::

    from lossgate.testing.store_contract import LedgerContract, TenantContract

    class TestMyLedger(LedgerContract, TenantContract):
        ...  # the same store fixture

Each test states its own expected values; none compares one store with another. The
suite needs pytest, and a store that two threads may use at once (each opening its own
transactions).

The classes, by tier (:data:`lossgate.store.protocol.TIERS`):

* :class:`LedgerContract`: the zero clock, event and fact filters and their order, a purged
  event's tombstone, conflicts, the log, the id look-ups, the registry, a duplicate key and a
  caught database error that write nothing, gap-free seqs from concurrent writers of a subject;
* :class:`TenantContract`: taint policies, tenant settings and daily metrics, each kept per
  tenant, in their stated order, with their types; the events a policy reaches; the tier reads
  and moves demotion makes;
* :class:`DerivedContract`: the NULL-safe compare-and-swap of the alias, ``lock_alias`` taking
  the clock first, the stored format (documents listed by id, swapped only as they were read,
  a newer format refused);
* :class:`EvidenceContract`: guard results and responses kept in order and found by what they
  touched;
* :class:`QueueContract`: one pending job per subject, leases, a retry that folds into the job
  already pending;
* :class:`SearchContract`: the fresh tail searched before the index takes it, purged text never;
* :class:`AccessContract`: API keys found by hash across tenants, listed and revoked per tenant;
  idempotency records once per tenant and key;
* :class:`RulesContract`, across the tiers: every primitive with its exact signature, the scope
  of every primitive that names a subject, first-touch locking by every such primitive (and of a
  subject never written), instants with other UTC offsets, creation-order tie-breaks, and a
  script over the derived layer, the evidence and the queue.
"""

from __future__ import annotations

import pytest

# Before the tier modules are imported: pytest rewrites the asserts of test modules only, and
# a failing contract test in a store author's own run should show the values it compared.
pytest.register_assert_rewrite(
    *(
        f"lossgate.testing.store_contract.{tier}"
        for tier in ("support", "ledger", "tenant", "derived", "evidence", "queue", "search", "access", "rules")
    )
)

from lossgate.testing.store_contract.access import AccessContract
from lossgate.testing.store_contract.derived import DerivedContract
from lossgate.testing.store_contract.evidence import EvidenceContract
from lossgate.testing.store_contract.ledger import LedgerContract
from lossgate.testing.store_contract.queue import QueueContract
from lossgate.testing.store_contract.rules import RulesContract
from lossgate.testing.store_contract.search import SearchContract
from lossgate.testing.store_contract.support import Contract, check_signatures
from lossgate.testing.store_contract.tenant import TenantContract

__all__ = [
    "StoreContract",
    "TIER_CONTRACTS",
    "Contract",
    "LedgerContract",
    "TenantContract",
    "DerivedContract",
    "EvidenceContract",
    "QueueContract",
    "SearchContract",
    "AccessContract",
    "RulesContract",
    "check_signatures",
]

# One class per tier of lossgate.store.protocol.TIERS, in its order: the order a store is built in.
TIER_CONTRACTS: tuple[type[Contract], ...] = (
    LedgerContract,
    TenantContract,
    DerivedContract,
    EvidenceContract,
    QueueContract,
    SearchContract,
    AccessContract,
)


class StoreContract(
    LedgerContract,
    TenantContract,
    DerivedContract,
    EvidenceContract,
    QueueContract,
    SearchContract,
    AccessContract,
    RulesContract,
):
    """Every tier's tests and the rules across them; a subclass provides the ``store`` fixture
    (see the module)."""
