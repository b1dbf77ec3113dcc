"""The search tier (:mod:`lossgate.store.protocol.search`): the fresh tail is searched before
the index takes it, on what the index covers; purged text and facts out of the active set are not;
``skip_erased`` leaves out what a deleted fact cites before ``limit`` counts."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

from lossgate.model.records import Event, NewEvent
from lossgate.store.protocol import Store
from lossgate.testing.store_contract.support import NOW, Contract, S, T, append, check_signatures, event, fact

__all__ = ["SearchContract"]


class SearchContract(Contract):
    """The search tier's tests (see the module); a subclass provides the ``store`` fixture,
    as for :class:`~lossgate.testing.store_contract.StoreContract`."""

    def test_the_search_tier_is_implemented_with_its_exact_signatures(self, store: Store) -> None:
        assert check_signatures(store, ("search",)) == []

    def test_search_covers_the_fresh_tail_and_forgets_purged_text(self, store: Store) -> None:
        def search(query: str) -> list[str]:
            with store.read() as tx:
                return sorted(tx.search_events(T, S, query, limit=10))

        with store.write() as tx:
            append(tx, event("e1", "refund of 50 dollars"), event("e2", "aisle seat please"))
        assert search("refund") == ["e1"] and search("aisle") == ["e2"]  # not indexed yet: found anyway
        with store.read() as tx:
            assert tx.search_backlog(T, S) == 2
        with store.write() as tx:
            tx.lock_clock(T, S)  # the subject is this transaction's to index
            assert tx.refresh_search_index() == 2
            assert tx.refresh_search_index() == 0
        with store.read() as tx:
            assert tx.search_backlog(T, S) == 0
        with store.write() as tx:
            append(tx, event("e3", "another refund request"))
        assert search("refund") == ["e1", "e3"]  # one indexed, one fresh
        with store.write() as tx:
            tx.set_event_state(T, S, "e1", "deleted", purge=True)
            tx.set_event_state(T, S, "e3", "revoked", purge=False)
        assert search("refund") == [] and search("dollars") == []
        with store.write() as tx:
            tx.lock_clock(T, S)
            assert tx.refresh_search_index() == 1
        assert search("refund request aisle") == ["e2"]

    def test_fact_search_matches_active_facts_only(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_facts(
                [fact("f1", 1, ("e1",), value=12), fact("f2", 1, ("e1",), predicate="contact.email", value=7)]
            )
            tx.update_fact(T, S, "f2", status="deleted", purge=True)
            tx.insert_facts([fact("f3", 1, ("e1",), predicate="billing.plan", value=3)])
            tx.update_fact(T, S, "f3", status="superseded", superseded_by="f1")
        with store.read() as tx:
            assert tx.search_facts(T, S, "seats", limit=5) == ["f1"]
            assert tx.search_facts(T, S, "billing plan", limit=5) == []  # superseded
            assert tx.search_facts(T, S, "contact email", limit=5) == []
            assert tx.search_facts(T, S, "  ", limit=5) == []

    def test_fact_search_forgets_a_fact_as_it_leaves_the_active_set(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_facts([fact(f"f{i}", 1, ("e1",), value=i) for i in range(1, 5)])
        with store.read() as tx:
            assert sorted(tx.search_facts(T, S, "seats", limit=10)) == ["f1", "f2", "f3", "f4"]
        with store.write() as tx:
            tx.update_fact(T, S, "f1", status="superseded", superseded_by="f4")
            tx.update_fact(T, S, "f2", status="revoked")
            tx.update_fact(T, S, "f3", status="deleted", purge=True)
        with store.read() as tx:
            assert tx.search_facts(T, S, "seats", limit=10) == ["f4"]
            assert tx.search_facts(T, S, "4", limit=10) == ["f4"] and tx.search_facts(T, S, "2", limit=10) == []

    def test_skip_erased_leaves_out_what_a_deleted_fact_cites_before_the_limit(self, store: Store) -> None:
        """An event a deleted fact cites is erased content (the ledger deletes it with the
        fact; a row stored before it did stays valid): events and search_events leave it out
        in the statement, so ``limit`` counts only what comes back."""
        with store.write() as tx:
            append(
                tx,
                event("e1", "refund one"),
                event("e2", "refund two"),
                event("e3", "refund three"),
                event("e4", "refund four"),
            )
            tx.insert_facts([fact("f-gone", 2, ("e2",)), fact("f-kept", 3, ("e3",)), fact("f-old", 4, ("e4",))])
            tx.update_fact(T, S, "f-gone", status="deleted", purge=True)  # e2 stays valid: a legacy row
            tx.update_fact(T, S, "f-old", status="superseded", superseded_by="f-kept")

        def ids(found: list[Event]) -> list[str]:
            return [e.event_id for e in found]

        for _ in ("the fresh tail", "the index"):  # the same reads from each
            with store.read() as tx:
                assert ids(tx.events(T, S)) == ["e1", "e2", "e3", "e4"]
                assert ids(tx.events(T, S, skip_erased=True)) == ["e1", "e3", "e4"]
                assert ids(tx.events(T, S, ids=["e2", "e3"], skip_erased=True)) == ["e3"]
                assert ids(tx.events(T, S, seqs=[1, 2, 3], states=["valid"], skip_erased=True)) == ["e1", "e3"]
                assert ids(tx.events(T, S, after_seq=1, limit=2, skip_erased=True)) == ["e3", "e4"]
                assert ids(tx.events(T, S, limit=2, newest_first=True, skip_erased=True)) == ["e4", "e3"]
                assert ids(tx.events(T, S, through_seq=2, newest_first=True, limit=1, skip_erased=True)) == ["e1"]
                assert sorted(tx.search_events(T, S, "refund", limit=10)) == ["e1", "e2", "e3", "e4"]
                assert sorted(tx.search_events(T, S, "refund", limit=10, skip_erased=True)) == ["e1", "e3", "e4"]
                assert len(tx.search_events(T, S, "refund", limit=3, skip_erased=True)) == 3
                assert tx.search_events(T, S, "two", limit=5, skip_erased=True) == []
            with store.write() as tx:
                tx.lock_clock(T, S)
                tx.refresh_search_index()

    def test_the_fresh_tail_covers_what_the_index_covers(self, store: Store) -> None:
        """The index takes an event's text and actor: a search finds both before it does too."""
        billing = NewEvent(
            tenant_id=T, subject_id=S, event_id="e1", text="the refunds were approved", actor="billing", occurred_at=NOW
        )
        with store.write() as tx:
            append(tx, billing)

        def search(query: str) -> list[str]:
            with store.read() as tx:
                return tx.search_events(T, S, query, limit=5)

        assert search("billing") == ["e1"] and search("refunds") == ["e1"]  # fresh
        with store.write() as tx:
            tx.lock_clock(T, S)
            tx.refresh_search_index()
        assert search("billing") == ["e1"] and search("refunds") == ["e1"]  # indexed
