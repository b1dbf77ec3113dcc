"""The ledger tier (:mod:`lossgate.store.protocol.ledger`): the zero clock, event and fact
filters and their order, a purged event's tombstone (no actor, text or payload; id, seq and
hash kept), conflicts, the log, the id look-ups, the registry, a duplicate key and a caught
database error that write nothing, and gap-free seqs from concurrent writers of one subject.
The first tier a store implements: every other tier's tests append events with it."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from lossgate.errors import IdempotencyConflict, StoreError
from lossgate.model.records import Clock, Conflict
from lossgate.store.protocol import FactFilter, Store
from lossgate.testing.store_contract.support import (
    NOW,
    Contract,
    S,
    T,
    append,
    check_signatures,
    event,
    fact,
    in_threads,
)

__all__ = ["LedgerContract"]


class LedgerContract(Contract):
    """The ledger tier's tests (see the module); a subclass provides the ``store`` fixture,
    as for :class:`~lossgate.testing.store_contract.StoreContract`."""

    def test_the_ledger_tier_is_implemented_with_its_exact_signatures(self, store: Store) -> None:
        assert check_signatures(store, ("ledger",)) == []

    def test_migrate_is_idempotent(self, store: Store) -> None:
        version = store.schema_version()
        assert version >= 1 and store.migrate() == version == store.schema_version()

    def test_a_subject_never_written_has_a_zero_clock_and_nothing_else(self, store: Store) -> None:
        with store.read() as tx:
            assert tx.clock(T, "nobody") == Clock(tenant_id=T, subject_id="nobody", high_water=0, input_epoch=0)
            assert tx.events(T, "nobody") == [] and tx.facts(T, "nobody") == []
            assert tx.subjects(T) == []
        with store.write() as wtx:
            assert wtx.lock_clock(T, "nobody") == Clock(tenant_id=T, subject_id="nobody")
        with store.read() as tx:
            assert tx.subjects(T) == ["nobody"]

    def test_events_filter_and_order_by_seq(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, *(event(f"e{i}") for i in range(1, 6)))
            append(tx, event("other", subject="u2"))
            tx.set_event_state(T, S, "e2", "deleted", purge=True)
        with store.read() as tx:

            def ids(**kw: Any) -> list[str]:
                return [e.event_id for e in tx.events(T, S, **kw)]

            assert ids() == ["e1", "e2", "e3", "e4", "e5"]
            assert [e.seq for e in tx.events(T, S)] == [1, 2, 3, 4, 5]
            assert ids(newest_first=True, limit=2) == ["e5", "e4"]
            assert ids(states=["valid"], after_seq=1, through_seq=4) == ["e3", "e4"]
            assert ids(ids=["e4", "e1", "other", "missing"]) == ["e1", "e4"]  # never another subject's row
            assert ids(ids=["e4", "e1", "e3"], newest_first=True, limit=2) == ["e4", "e3"]
            assert ids(seqs=[5, 1]) == ["e1", "e5"] and ids(seqs=[]) == []
            (purged,) = tx.events(T, S, ids=["e2"])
            assert (purged.state, purged.seq, purged.content_hash) == ("deleted", 2, "sha256:e2")
            assert (purged.actor, purged.text, purged.payload) == (None, None, None)
            assert [e.actor for e in tx.events(T, S, states=["valid"])] == ["user"] * 4
            assert tx.clock(T, S).high_water == 5 and tx.subjects(T) == [S, "u2"]
            assert tx.taken_event_ids(T, ["e3", "other", "nope"]) == {
                "e3": (S, "sha256:e3", "authenticated_user"),
                "other": ("u2", "sha256:other", "authenticated_user"),
            }
            assert tx.taken_event_ids("globex", ["e3"]) == {}

    def test_facts_filter_order_and_cite_their_sources(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"), event("e2"), event("e3"))
            tx.insert_facts(
                [
                    fact("f1", 1, ("e1",)),
                    fact("f2", 2, ("e1", "e2"), criticality="critical"),
                    fact("f3", 3, ("e3",), predicate="contact.email"),
                ]
            )
            tx.update_fact(T, S, "f1", status="superseded", superseded_by="f2")
        with store.read() as tx:
            assert [f.fact_id for f in tx.facts(T, S)] == ["f1", "f2", "f3"]
            assert [f.fact_id for f in tx.facts(T, S, statuses=["active"], newest_first=True)] == ["f3", "f2"]
            assert [f.fact_id for f in tx.facts(T, S, criticalities=["critical"])] == ["f2"]
            assert [f.fact_id for f in tx.facts(T, S, predicate="contact.email")] == ["f3"]
            assert [f.fact_id for f in tx.facts(T, S, ids=["f3", "f1"], through_seq=2)] == ["f1"]
            sets = tx.fact_sets(T, S, [FactFilter(statuses=["superseded"]), FactFilter(limit=1)])
            assert [[f.fact_id for f in s] for s in sets] == [["f1"], ["f1"]]
            assert [f.fact_id for f in tx.facts_citing(T, S, ["e1"])] == ["f1", "f2"]
            assert [f.fact_id for f in tx.facts_citing(T, S, ["e1", "e3"], statuses=["active"])] == ["f2", "f3"]
            (f1,) = tx.facts(T, S, ids=["f1"])
            assert (f1.status, f1.superseded_by, f1.value, type(f1.value)) == ("superseded", "f2", 5, int)
            assert tx.taken_fact_ids(T, ["f2", "fx"]) == {"f2": (S, "sha256:f2", "active")}

    def test_conflicts_and_the_log_come_oldest_first(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_facts([fact("f1", 1, ("e1",)), fact("f2", 1, ("e1",), value=6), fact("f3", 1, ("e1",), value=7)])
            for cid, pair, at in (
                ("c-b", ("f1", "f2"), NOW),
                ("c-a", ("f2", "f3"), NOW),
                ("c-0", ("f1", "f3"), NOW + timedelta(seconds=1)),
            ):
                tx.insert_conflict(
                    Conflict(
                        tenant_id=T,
                        subject_id=S,
                        conflict_id=cid,
                        predicate="subscription.seats",
                        fact_ids=pair,
                        detected_at=at,
                    )
                )
            tx.resolve_conflict(T, S, "c-a", at=NOW, resolution="f3 superseded")
            for op, target in (("assert", "f2"), ("assert", "f1"), ("supersede", "f2")):
                tx.add_log(T, S, at=NOW, op=op, target_id=target, detail={"n": 1})
        with store.read() as tx:
            assert [c.conflict_id for c in tx.conflicts(T, S)] == ["c-a", "c-b", "c-0"]  # detected_at, then id
            assert [c.conflict_id for c in tx.conflicts(T, S, unresolved_only=True)] == ["c-b", "c-0"]
            assert [c.conflict_id for c in tx.conflicts(T, S, fact_id="f3")] == ["c-a", "c-0"]
            (resolved,) = [c for c in tx.conflicts(T, S) if c.status == "resolved"]
            assert (resolved.conflict_id, resolved.resolution) == ("c-a", "f3 superseded")
            assert [(e.op, e.target_id) for e in tx.log(T, S)] == [
                ("assert", "f2"),
                ("assert", "f1"),
                ("supersede", "f2"),
            ]
            assert [e.op for e in tx.log(T, S, target_ids=["f1"])] == ["assert"]

    def test_the_registry_is_stored_once_per_version(self, store: Store) -> None:
        with store.write() as tx:
            assert tx.latest_registry_version() is None and tx.registry_document() is None
            assert tx.save_registry(1, {"v": 1}, "h1") is True
            assert tx.save_registry(1, {"v": 1}, "h1") is False
            assert tx.save_registry(2, {"v": 2}, "h2") is True
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.save_registry(1, {"v": "other"}, "h-other")
        with store.read() as tx:
            assert tx.latest_registry_version() == 2
            assert tx.registry_document() == {"v": 2} and tx.registry_document(1) == {"v": 1}

    def test_a_duplicate_key_writes_nothing_of_its_transaction(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"))
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            append(tx, event("e2"))
            tx.insert_events([(event("e1"), 9, "sha256:again", NOW.isoformat())], recorded_at=NOW)
        with store.read() as tx:
            assert [e.event_id for e in tx.events(T, S)] == ["e1"] and tx.clock(T, S).high_water == 1

    def test_a_database_error_the_body_caught_rolls_the_transaction_back(self, store: Store) -> None:
        """Never a commit around a database error: the body caught it, the transaction still
        raises StoreError at its end, and writes nothing."""
        with store.write() as tx:
            append(tx, event("e1"))
        with pytest.raises(StoreError), store.write() as tx:
            append(tx, event("e2"))
            with contextlib.suppress(Exception):  # the body catches the database's error, on purpose
                tx.insert_events([(event("e1"), 9, "sha256:again", NOW.isoformat())], recorded_at=NOW)
        with store.read() as tx:
            assert [e.event_id for e in tx.events(T, S)] == ["e1"] and tx.clock(T, S).high_water == 1

    def test_concurrent_read_modify_write_transactions_of_one_subject_get_gap_free_seqs(self, store: Store) -> None:
        """Each transaction reads the clock (its first touch), then appends after it: only
        per-subject serialisation keeps two of them from taking the same seq."""
        with store.write() as tx:
            tx.lock_clock(T, S)

        def writer(w: int) -> Callable[[], None]:
            def work() -> None:
                for b in range(8):
                    with store.write() as tx:
                        high = tx.clock(T, S).high_water
                        time.sleep(0.002)  # widen the window a missing lock would leave open
                        items = [
                            (event(f"w{w}-{b}-{i}"), high + i, f"sha256:w{w}-{b}-{i}", NOW.isoformat())
                            for i in (1, 2, 3)
                        ]
                        tx.insert_events(items, recorded_at=NOW)
                        tx.save_clock(Clock(tenant_id=T, subject_id=S, high_water=high + 3))

            return work

        assert in_threads(*(writer(w) for w in range(4))) == []
        with store.read() as tx:
            assert [e.seq for e in tx.events(T, S)] == list(range(1, 97))
            assert tx.clock(T, S).high_water == 96

    def test_a_retired_fact_keeps_its_value_terms_until_it_leaves_the_retired_set(self, store: Store) -> None:
        """The terms come with the retirement, in its transaction (a rolled-back retirement
        keeps none); a lookup answers the retired facts holding a term and the facts their
        supersession chains lead through; a fact deleted, purged or active again is found by
        none of its terms (a deleted value's words are never looked up again)."""
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_facts([fact(f"f{i}", i, ("e1",), value=i) for i in range(1, 6)])

        def stating(*terms: str, through: int = 9) -> list[str]:
            with store.read() as tx:
                return [f.fact_id for f in tx.retired_facts_stating(T, S, list(terms), through_seq=through)]

        with pytest.raises(RuntimeError), store.write() as tx:
            tx.update_fact(T, S, "f1", status="superseded", superseded_by="f2", terms=("num=1",))
            raise RuntimeError("rolled back")
        assert stating("num=1") == []
        with store.write() as tx:
            tx.update_fact(T, S, "f1", status="superseded", superseded_by="f2", terms=("num=1", "@one"))
            tx.update_fact(T, S, "f2", status="superseded", superseded_by="f3", terms=("num=2",))
            tx.update_fact(T, S, "f4", status="revoked", terms=("num=4", "@one"))
        assert stating("num=1") == ["f1", "f2", "f3"]  # f1, and its chain to f3, which holds now
        assert stating("@one", "num=9") == ["f1", "f2", "f3", "f4"]
        assert stating("num=2") == ["f2", "f3"] and stating("num=3") == [] and stating() == []
        assert stating("num=4", through=3) == []  # f4 (seq 4) is past the high-water
        with store.write() as tx:
            tx.update_fact(T, S, "f1", status="deleted", purge=True)
            tx.update_fact(T, S, "f4", status="active")
            tx.update_fact(T, S, "f2", status="revoked", purge=True)
        assert stating("num=1", "@one", "num=2", "num=4") == []
        with store.read() as tx:
            assert tx.retired_terms_kept(T, S)
        with store.write() as tx:
            tx.update_fact(T, S, "f5", status="revoked")  # retired with no terms, as before the store kept them
            tx.keep_retired_terms(T, S, {"f5": ["num=5"]})
        assert stating("num=5") == ["f5"]
