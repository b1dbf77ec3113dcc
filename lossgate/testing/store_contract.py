"""The store contract as a test suite: what :mod:`lossgate.store.protocol` promises,
checked against any store.

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

pytest then runs every test below against it. Each test states its own expected
values; none compares one store with another. The suite needs pytest, and a store that
two threads may use at once (each opening its own transactions).

The tests, by tier:

* the signature check: every primitive of every protocol class, with its exact
  parameters, on the store and on its read and write transactions;
* ledger: the zero clock, event and fact filters and their order, conflicts, the log,
  the id look-ups, the registry;
* per-subject serialisation under concurrency: a write transaction locks a subject on
  its first touch, read or write (a concurrent writer of that subject waits and then
  sees the committed state); concurrent read-modify-write transactions of one subject
  give gap-free sequence numbers; ``lock_alias`` locks the clock, and before the alias;
* derived: the NULL-safe compare-and-swap of the alias, creation-order tie-breaks,
  and a script of derived-layer calls with the answer each must give;
* queue: one pending job per subject, claiming order, leases, and a retry that folds
  into the job already pending;
* search: the fresh tail is searched before the index takes it, purged text is not.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lossgate.derived import (
    Alias,
    Artifact,
    Attempt,
    ExpectedAlias,
    InputRef,
    LineageEdge,
    Manifest,
    RecallRecord,
)
from lossgate.errors import IdempotencyConflict
from lossgate.records import ArtifactBody, Clock, Conflict, Fact, NewEvent, TaintPolicy
from lossgate.store.protocol import FactFilter, ReadTx, Store, WriteTx, primitives

__all__ = ["StoreContract", "check_signatures"]

T, S = "acme", "u1"
NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
HOLD = 0.4  # seconds a transaction holds its lock while a rival waits


# -- the signature check --------------------------------------------------------------------

def _shape(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def check_signatures(store: Store) -> list[str]:
    """What ``store`` and its transactions lack of the protocol, or implement with other
    parameters (names, kinds, defaults): one line each; empty when nothing is wrong."""
    problems: list[str] = []

    def compare(protocol: type, impl: type) -> None:
        for name, member in primitives(protocol).items():
            got = getattr(impl, name, None)
            if got is None:
                problems.append(f"{impl.__name__} lacks {name}")
            elif _shape(got) != _shape(member):
                problems.append(f"{impl.__name__}.{name}{inspect.signature(got)} != {inspect.signature(member)}")

    compare(Store, type(store))
    with store.read() as rtx:
        compare(ReadTx, type(rtx))
    with store.write() as wtx:
        compare(WriteTx, type(wtx))
    return problems


# -- builders ----------------------------------------------------------------------------

def event(event_id: str, text: str = "", *, subject: str = S, tenant: str = T) -> NewEvent:
    return NewEvent(tenant_id=tenant, subject_id=subject, event_id=event_id, text=text or f"text of {event_id}",
                    occurred_at=NOW)


def append(tx: WriteTx, *events: NewEvent) -> Clock:
    """Append ``events`` (all of one subject) after the subject's high water, as the ledger does."""
    clock = tx.lock_clock(events[0].tenant_id, events[0].subject_id)
    items = [(e, clock.high_water + i, f"sha256:{e.event_id}", NOW.isoformat()) for i, e in enumerate(events, 1)]
    tx.insert_events(items, recorded_at=NOW)
    clock = clock.model_copy(update={"high_water": clock.high_water + len(events)})
    tx.save_clock(clock)
    return clock


def fact(fact_id: str, seq: int, sources: tuple[str, ...], *, value: int = 5, status: str = "active",
         criticality: str = "important", predicate: str = "subscription.seats") -> Fact:
    return Fact(tenant_id=T, subject_id=S, fact_id=fact_id, seq=seq, predicate=predicate, registry_version=1,
                value_type="int", value=value, source_event_ids=sources, status=status, recorded_at=NOW,
                content_hash=f"sha256:{fact_id}", criticality=criticality)  # type: ignore[arg-type]


def artifact(artifact_id: str, parent: Alias, *, created_at: datetime = NOW) -> Artifact:
    manifest = Manifest(
        artifact_id=artifact_id, tenant_id=T, subject_id=S, new_covers_through=3, input_epoch=0,
        expected_alias=parent.expected(), inputs=(InputRef(kind="event", id="e1", content_hash="sha256:e1", seq=1),),
        input_root="sha256:r", path="direct", selector_version="1", prompt_version="1", compressor="det",
        compressor_version="1", extractor_version="1", schema_version=2, registry_version=1, attempt=1,
        timings={"gate": 0.25, "huge": 1e20},
    )
    return Artifact(artifact_id=artifact_id, tenant_id=T, subject_id=S, state="candidate",
                    body=ArtifactBody(tenant_id=T, subject_id=S, summary=f"summary {artifact_id}"),
                    manifest=manifest, gate={"outcome": "clean", "score": 1.0}, created_at=created_at)


def recall_record(recall_id: str, *, at: datetime = NOW, candidates: tuple[str, ...] = ("e1",)) -> RecallRecord:
    return RecallRecord(recall_id=recall_id, tenant_id=T, subject_id=S, at=at, query="refund", filters={"k": 1.5},
                        mode="summary", candidate_ids=candidates, selected_ids=candidates,
                        alias=Alias(tenant_id=T, subject_id=S), clock=Clock(tenant_id=T, subject_id=S))


def in_threads(*work: Callable[[], None]) -> list[BaseException]:
    """Run each callable in its own thread; the exceptions they raised."""
    errors: list[BaseException] = []

    def run(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def _bump_epoch(tx: WriteTx) -> None:
    clock = tx.lock_clock(T, S)
    tx.save_clock(clock.model_copy(update={"input_epoch": clock.input_epoch + 1}))


# A first touch of the subject by each tier's primitives, reading or writing.
FIRST_TOUCHES: dict[str, Callable[[WriteTx], object]] = {
    "clock": lambda tx: tx.clock(T, S),
    "events": lambda tx: tx.events(T, S, ids=["e1"]),
    "facts": lambda tx: tx.facts(T, S),
    "set_event_trust": lambda tx: tx.set_event_trust(T, S, "e1", "tool"),
    "alias": lambda tx: tx.alias(T, S),
    "attempts": lambda tx: tx.attempts(T, S),
    "attempt_tail": lambda tx: tx.attempt_tail(T, S),
    "enqueue_job": lambda tx: tx.enqueue_job(T, S, reason="test", run_after=NOW, at=NOW),
    "search_events": lambda tx: tx.search_events(T, S, "text", limit=5),
}


class StoreContract:
    """The contract's tests; a subclass provides the ``store`` fixture (see the module)."""

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        raise NotImplementedError("a StoreContract subclass provides a `store` fixture: an empty, migrated store")

    # -- the protocol ----------------------------------------------------------------------
    def test_every_protocol_primitive_is_implemented_with_its_exact_signature(self, store: Store) -> None:
        assert check_signatures(store) == []

    def test_migrate_is_idempotent(self, store: Store) -> None:
        version = store.schema_version()
        assert version >= 1 and store.migrate() == version == store.schema_version()

    # -- ledger ------------------------------------------------------------------------------
    def test_a_subject_never_written_has_a_zero_clock_and_nothing_else(self, store: Store) -> None:
        with store.read() as tx:
            assert tx.clock(T, "nobody") == Clock(tenant_id=T, subject_id="nobody", high_water=0, input_epoch=0)
            assert tx.events(T, "nobody") == [] and tx.facts(T, "nobody") == []
            assert tx.alias(T, "nobody") == Alias(tenant_id=T, subject_id="nobody")
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
            assert (purged.state, purged.text, purged.content_hash) == ("deleted", None, "sha256:e2")
            assert tx.clock(T, S).high_water == 5 and tx.subjects(T) == [S, "u2"]
            assert tx.taken_event_ids(T, ["e3", "other", "nope"]) == {
                "e3": (S, "sha256:e3", "authenticated_user"), "other": ("u2", "sha256:other", "authenticated_user")}
            assert tx.taken_event_ids("globex", ["e3"]) == {}

    def test_facts_filter_order_and_cite_their_sources(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"), event("e2"), event("e3"))
            tx.insert_facts([fact("f1", 1, ("e1",)), fact("f2", 2, ("e1", "e2"), criticality="critical"),
                             fact("f3", 3, ("e3",), predicate="contact.email")])
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
            for cid, pair, at in (("c-b", ("f1", "f2"), NOW), ("c-a", ("f2", "f3"), NOW),
                                  ("c-0", ("f1", "f3"), NOW + timedelta(seconds=1))):
                tx.insert_conflict(Conflict(tenant_id=T, subject_id=S, conflict_id=cid, predicate="subscription.seats",
                                            fact_ids=pair, detected_at=at))
            tx.resolve_conflict(T, S, "c-a", at=NOW, resolution="f3 superseded")
            for op, target in (("assert", "f2"), ("assert", "f1"), ("supersede", "f2")):
                tx.add_log(T, S, at=NOW, op=op, target_id=target, detail={"n": 1})
        with store.read() as tx:
            assert [c.conflict_id for c in tx.conflicts(T, S)] == ["c-a", "c-b", "c-0"]  # detected_at, then id
            assert [c.conflict_id for c in tx.conflicts(T, S, unresolved_only=True)] == ["c-b", "c-0"]
            assert [c.conflict_id for c in tx.conflicts(T, S, fact_id="f3")] == ["c-a", "c-0"]
            (resolved,) = [c for c in tx.conflicts(T, S) if c.status == "resolved"]
            assert (resolved.conflict_id, resolved.resolution) == ("c-a", "f3 superseded")
            assert [(e.op, e.target_id) for e in tx.log(T, S)] == [("assert", "f2"), ("assert", "f1"), ("supersede", "f2")]
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

    # -- per-subject serialisation -------------------------------------------------------------
    @pytest.mark.parametrize("touch", sorted(FIRST_TOUCHES))
    def test_a_write_transaction_locks_the_subject_on_first_touch(self, store: Store, touch: str) -> None:
        """The first writer touches the subject, then holds its transaction; a second writer of
        the subject must wait, and then see what the first committed."""
        with store.write() as tx:
            append(tx, event("e1"))
        touched, seen = threading.Event(), []

        def first() -> None:
            with store.write() as tx:
                FIRST_TOUCHES[touch](tx)
                touched.set()
                time.sleep(HOLD)
                _bump_epoch(tx)

        def second() -> None:
            assert touched.wait(30)
            with store.write() as tx:
                seen.append(tx.lock_clock(T, S).input_epoch)

        assert in_threads(first, second) == []
        assert seen == [1], f"a writer got the subject while another held it since its first touch ({touch})"

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
                        items = [(event(f"w{w}-{b}-{i}"), high + i, f"sha256:w{w}-{b}-{i}", NOW.isoformat())
                                 for i in (1, 2, 3)]
                        tx.insert_events(items, recorded_at=NOW)
                        tx.save_clock(Clock(tenant_id=T, subject_id=S, high_water=high + 3))
            return work

        assert in_threads(*(writer(w) for w in range(4))) == []
        with store.read() as tx:
            assert [e.seq for e in tx.events(T, S)] == list(range(1, 97))
            assert tx.clock(T, S).high_water == 96

    def test_lock_alias_locks_the_clock(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"))
        held, seen = threading.Event(), []

        def publisher() -> None:
            with store.write() as tx:
                tx.lock_alias(T, S)
                held.set()
                time.sleep(HOLD)
                _bump_epoch(tx)

        def ledger() -> None:
            assert held.wait(30)
            with store.write() as tx:
                seen.append(tx.lock_clock(T, S).input_epoch)

        assert in_threads(publisher, ledger) == []
        assert seen == [1]

    def test_lock_alias_takes_the_clock_before_the_alias(self, store: Store) -> None:
        """A transaction holding the clock and then asking for the alias, against one asking for
        the alias first: both finish (taking the alias first would deadlock them)."""
        with store.write() as tx:
            append(tx, event("e1"))
            tx.lock_alias(T, S)
        held, done = threading.Event(), []

        def ledger_then_publish() -> None:
            with store.write() as tx:
                tx.lock_clock(T, S)
                held.set()
                time.sleep(HOLD)
                tx.lock_alias(T, S)
                done.append("ledger")  # before the commit: the rival cannot have its alias yet

        def publish() -> None:
            assert held.wait(30)
            with store.write() as tx:
                tx.lock_alias(T, S)
            done.append("publish")

        assert in_threads(ledger_then_publish, publish) == []
        assert done == ["ledger", "publish"]

    # -- derived ----------------------------------------------------------------------------
    def test_the_alias_cas_compares_null_safely_and_never_regresses(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"), event("e2"), event("e3"))
            empty = tx.lock_alias(T, S)
            assert empty == Alias(tenant_id=T, subject_id=S)
            tx.insert_artifact(artifact("a1", empty), [])
            tx.insert_artifact(artifact("a2", empty), [])

            def cas(parent: str | None, epoch: int, covers: int, to: str, new_covers: int) -> bool:
                return tx.cas_alias(T, S, expected=ExpectedAlias(parent_artifact_id=parent, source_epoch=epoch,
                                                                 covers_through=covers),
                                    artifact_id=to, source_epoch=0, covers_through=new_covers, at=NOW)

            assert cas("a9", 0, 0, "a1", 2) is False  # the alias has no artifact: only None matches it
            assert cas(None, 1, 0, "a1", 2) is False  # another epoch
            assert cas(None, 0, 0, "a1", 2) is True
            assert cas(None, 0, 0, "a2", 3) is False  # None no longer matches
            assert cas("a1", 0, 1, "a2", 3) is False  # another coverage
            assert cas("a1", 0, 2, "a2", 1) is False  # coverage would regress
            assert cas("a1", 0, 2, "a2", 2) is True  # equal coverage is no regression
            assert tx.alias(T, S).model_dump(exclude={"updated_at"}) == {
                "tenant_id": T, "subject_id": S, "artifact_id": "a2", "source_epoch": 0, "covers_through": 2}

    def test_ties_on_time_are_broken_by_creation_order(self, store: Store) -> None:
        later = NOW + timedelta(seconds=1)
        with store.write() as tx:
            append(tx, event("e1"))
            alias = tx.lock_alias(T, S)
            for aid, at in (("a-z", NOW), ("a-m", later), ("a-a", NOW)):  # ids in the other order
                tx.insert_artifact(artifact(aid, alias, created_at=at), [])
            for rid in ("r-z", "r-a", "r-m"):
                tx.insert_recall(recall_record(rid))
            for sid in ("z", "a"):
                tx.enqueue_job(T, sid, reason="test", run_after=NOW, at=NOW)
        with store.read() as tx:
            assert [a.artifact_id for a in tx.artifacts(T, S)] == ["a-z", "a-a", "a-m"]
            assert [r.recall_id for r in tx.recalls(T, S)] == ["r-m", "r-a", "r-z"]
            assert [r.recall_id for r in tx.recalls(T, S, limit=2)] == ["r-m", "r-a"]
            assert [r.recall_id for r in tx.recalls_touching(T, S, ["e1"])] == ["r-z", "r-a", "r-m"]
            assert [j.subject_id for j in tx.jobs(T, None)] == ["z", "a"]
        with store.write() as tx:
            claimed = tx.claim_job(owner="w1", lease_seconds=30, now=NOW)
            assert claimed is not None and claimed.subject_id == "z"  # the same run_after: created first

    def test_derived_primitives_give_the_expected_answers(self, store: Store) -> None:
        """One script over the derived layer and the queue, each answer stated."""
        later = NOW + timedelta(seconds=5)
        with store.write() as tx:
            clock = tx.lock_clock(T, S)
            tx.insert_events([(event("e1", "refund of 50 dollars approved"), 1, "sha256:1", NOW.isoformat()),
                              (event("e2", "the customer prefers the aisle seat"), 2, "sha256:2", NOW.isoformat()),
                              (event("e3", "refund refund"), 3, "sha256:3", NOW.isoformat())], recorded_at=NOW)
            tx.save_clock(clock.model_copy(update={"high_water": 3}))
            assert tx.lock_alias(T, S) == Alias(tenant_id=T, subject_id=S)

        with store.write() as tx:
            alias = tx.lock_alias(T, S)
            tx.insert_artifact(artifact("a1", alias), [
                LineageEdge(tenant_id=T, subject_id=S, artifact_id="a1", input_kind="event", input_id="e1"),
                LineageEdge(tenant_id=T, subject_id=S, artifact_id="a1", input_kind="event", input_id="e2")])
            tx.insert_artifact(artifact("a2", alias), [
                LineageEdge(tenant_id=T, subject_id=S, artifact_id="a2", input_kind="artifact", input_id="a1")])
            assert tx.cas_alias(T, S, expected=alias.expected(), artifact_id="a1", source_epoch=0,
                                covers_through=3, at=NOW) is True
            assert tx.cas_alias(T, S, expected=alias.expected(), artifact_id="a2", source_epoch=0,
                                covers_through=3, at=NOW) is False  # a stale expectation
            assert tx.set_artifact_state(T, S, ["a1", "a2", "nope"], "published", reason="gate clean",
                                         from_states=["candidate"]) == ["a1", "a2"]
            assert tx.set_artifact_state(T, S, ["a2"], "candidate", reason="back",
                                         from_states=["stale"]) == []
            assert tx.set_artifact_state(T, S, ["a2"], "candidate", reason="back") == ["a2"]
            attempt = Attempt(attempt_id="at1", tenant_id=T, subject_id=S, number=1, status="selected",
                              started_at=NOW, high_water=3, input_epoch=0, expected_alias=alias.expected(),
                              selected_ids=("e1",), input_root="sha256:r", compressor="det", timings={"select": 0.5})
            tx.save_attempt(attempt)
            tx.save_attempt(attempt.model_copy(update={"status": "published", "artifact_id": "a1"}))
            assert tx.attempt_tail(T, S) == (1, [])  # nothing after the publication
            for n, status in ((2, "rejected"), (3, "error")):
                tx.save_attempt(attempt.model_copy(update={"attempt_id": f"at{n}", "number": n, "status": status}))
            count, tail = tx.attempt_tail(T, S)
            assert count == 3 and [(a.attempt_id, a.status) for a in tail] == [("at2", "rejected"), ("at3", "error")]
            assert tx.attempt_tail(T, "nobody") == (0, [])
            tx.insert_recall(recall_record("r0"))
            tx.insert_recall(recall_record("r1"))
            assert tx.set_tier(T, S, through_seq=2, tier="cold") == 2
            assert tx.set_tier(T, S, through_seq=2, tier="cold") == 0
            assert tx.enqueue_job(T, S, reason="revoke", run_after=NOW, at=NOW) is True
            assert tx.enqueue_job(T, S, reason="again", run_after=NOW, at=NOW) is False  # one pending per subject
            assert tx.enqueue_job("globex", "u7", reason="other tenant", run_after=NOW + timedelta(seconds=1),
                                  at=NOW) is True

        with store.write() as tx:
            job = tx.claim_job(owner="w1", lease_seconds=30, now=later)
            job2 = tx.claim_job(owner="w2", lease_seconds=30, now=later)
            assert job is not None and job2 is not None
            assert (job.tenant_id, job.subject_id, job.status, job.reason, job.tries, job.lease_owner) == (
                T, S, "running", "revoke", 1, "w1")
            assert job.lease_expires_at == later + timedelta(seconds=30) and job.run_after == NOW
            assert (job2.tenant_id, job2.subject_id, job2.lease_owner) == ("globex", "u7", "w2")
            assert tx.claim_job(owner="w3", lease_seconds=30, now=later) is None
            assert tx.heartbeat_job(job.job_id, owner="w1", lease_expires_at=later + timedelta(minutes=5)) is True
            assert tx.heartbeat_job(job.job_id, owner="intruder", lease_expires_at=NOW) is False
            assert tx.heartbeat_job(job.job_id + job2.job_id + 999, owner="w1", lease_expires_at=NOW) is False
            assert tx.finish_job(T, S, job.job_id, owner="intruder", status="done", at=NOW) is False
            assert tx.finish_job(T, S, job.job_id, owner="w1", status="pending", at=NOW, run_after=later) is True
            assert tx.cancel_pending_jobs("globex", "u7", at=NOW, reason="covered") == 0  # it is running
            tx.replace_artifact_body(T, S, "a2", ArtifactBody(tenant_id=T, subject_id=S, summary="[purged]",
                                                               open_items=("f9",)))

        with store.read() as tx:
            assert tx.alias(T, S) == Alias(tenant_id=T, subject_id=S, artifact_id="a1", source_epoch=0,
                                           covers_through=3, updated_at=NOW)
            a1 = tx.artifact(T, S, "a1")
            assert a1 is not None and a1.state == "published" and a1.state_reason == "gate clean"
            assert a1.manifest.timings == {"gate": 0.25, "huge": 1e20} and a1.gate == {"outcome": "clean", "score": 1.0}
            assert a1.body.summary == "summary a1" and a1.created_at == NOW
            assert tx.artifact(T, S, "nope") is None
            assert [(a.artifact_id, a.state) for a in tx.artifacts(T, S)] == [("a1", "published"), ("a2", "candidate")]
            assert [a.artifact_id for a in tx.artifacts(T, S, states=["published"])] == ["a1"]
            head = tx.artifact_head(T, S, "a2")
            assert head is not None and (head.state, head.summary, head.open_items) == ("candidate", "[purged]", ("f9",))
            assert tx.artifact_head(T, S, "nope") is None
            clock, head_alias, head1 = tx.recall_head(T, S)
            assert (clock.high_water, head_alias.artifact_id) == (3, "a1")
            assert head1 is not None and (head1.artifact_id, head1.summary) == ("a1", "summary a1")
            assert [(e.input_kind, e.input_id) for e in tx.lineage(T, S, "a1")] == [("event", "e1"), ("event", "e2")]
            assert tx.descendants(T, S, ["e2"]) == ["a1", "a2"] and tx.descendants(T, S, []) == []
            assert [(a.attempt_id, a.status) for a in tx.attempts(T, S)] == [("at1", "published"), ("at2", "rejected"),
                                                                              ("at3", "error")]
            assert [r.recall_id for r in tx.recalls(T, S, limit=1)] == ["r1"]
            assert [e.tier for e in tx.events(T, S)] == ["cold", "cold", "hot"]
            assert tx.search_events(T, S, "refund", limit=5) == ["e3", "e1"]  # e3 says it twice, and is newer
            assert tx.search_events(T, S, 'aisle "quoted', limit=5) == ["e2"]
            assert tx.search_events(T, S, "   ", limit=5) == []
            assert [(j.subject_id, j.status, j.reason, j.tries, j.run_after, j.lease_owner)
                    for j in tx.jobs(T, S)] == [(S, "pending", "revoke", 1, later, None)]
            assert [(j.status, j.lease_owner) for j in tx.jobs("globex", "u7")] == [("running", "w2")]

    # -- queue ------------------------------------------------------------------------------
    def test_a_retry_folds_into_the_job_already_pending(self, store: Store) -> None:
        later = NOW + timedelta(minutes=5)
        with store.write() as tx:
            tx.enqueue_job(T, S, reason="first", run_after=NOW, at=NOW)
        with store.write() as tx:
            job = tx.claim_job(owner="w1", lease_seconds=30, now=NOW)
            assert job is not None
            # queued while the first one runs: the subject has a running and a pending job
            assert tx.enqueue_job(T, S, reason="second", run_after=NOW, at=NOW) is True
            assert tx.finish_job(T, S, job.job_id, owner="w1", status="pending", at=NOW, run_after=later) is True
        with store.read() as tx:
            assert [(j.reason, j.status) for j in tx.jobs(T, S)] == [("first", "done"), ("second", "pending")]
            assert tx.jobs(T, S, statuses=["pending"])[0].run_after == NOW  # the pending job's time stands
        with store.write() as tx:  # with nothing pending, the retry is the job itself, later
            job = tx.claim_job(owner="w2", lease_seconds=30, now=NOW)
            assert job is not None and job.reason == "second"
            assert tx.finish_job(T, S, job.job_id, owner="w2", status="pending", at=NOW, run_after=later) is True
        with store.read() as tx:
            assert [(j.reason, j.status, j.tries, j.lease_owner) for j in tx.jobs(T, S)] == [
                ("first", "done", 1, None), ("second", "pending", 1, None)]
            assert tx.jobs(T, S)[1].run_after == later
            assert [j.reason for j in tx.jobs(T, S, statuses=["pending"])] == ["second"]

    def test_an_expired_lease_is_claimed_again_and_the_first_owner_cannot_finish(self, store: Store) -> None:
        with store.write() as tx:
            tx.enqueue_job(T, S, reason="new events", run_after=NOW, at=NOW)
            tx.enqueue_job(T, "u2", reason="later", run_after=NOW + timedelta(hours=1), at=NOW)
        with store.write() as tx:
            first = tx.claim_job(owner="w1", lease_seconds=10, now=NOW)
            assert first is not None and first.subject_id == S
            assert tx.claim_job(owner="w2", lease_seconds=10, now=NOW + timedelta(seconds=5)) is None
        with store.write() as tx:
            again = tx.claim_job(owner="w2", lease_seconds=10, now=NOW + timedelta(seconds=11))
            assert again is not None and (again.job_id, again.lease_owner, again.tries) == (first.job_id, "w2", 2)
            assert tx.finish_job(T, S, first.job_id, owner="w1", status="done", at=NOW) is False
            assert tx.finish_job(T, S, first.job_id, owner="w2", status="review", at=NOW) is True
            assert tx.cancel_pending_jobs(T, S, at=NOW, reason="published") == 1  # review counts
        with store.read() as tx:
            assert [(j.status, j.reason) for j in tx.jobs(T, S)] == [("done", "new events (published)")]
            assert [j.subject_id for j in tx.jobs(T, None, statuses=["pending"])] == ["u2"]

    # -- search -----------------------------------------------------------------------------
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
            tx.insert_facts([fact("f1", 1, ("e1",), value=12), fact("f2", 1, ("e1",), predicate="contact.email",
                                                                   value=7)])
            tx.update_fact(T, S, "f2", status="deleted", purge=True)
        with store.read() as tx:
            assert tx.search_facts(T, S, "seats", limit=5) == ["f1"]
            assert tx.search_facts(T, S, "contact email", limit=5) == []
            assert tx.search_facts(T, S, "  ", limit=5) == []

    # -- taint policies ----------------------------------------------------------------------
    def test_taint_policies_keep_every_version_of_their_tenant_in_order(self, store: Store) -> None:
        def policy(policy_id: str, version: int, tenant: str = T) -> TaintPolicy:
            return TaintPolicy(tenant_id=tenant, policy_id=policy_id, version=version, kind="tool_result",
                               actor=f"tool:{version}", trust="untrusted", created_at=NOW)

        with store.write() as tx:
            for p in (policy("b", 1), policy("a", 2), policy("a", 1), policy("a", 1, tenant="other")):
                tx.save_taint_policy(p)
        with store.read() as tx:
            assert tx.taint_policies(T) == [policy("a", 1), policy("a", 2), policy("b", 1)]
            assert tx.taint_policies("other") == [policy("a", 1, tenant="other")]
            assert tx.taint_policies("nobody") == []
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.save_taint_policy(policy("a", 2).model_copy(update={"trust": "tool"}))
        with store.read() as tx:
            assert [p.trust for p in tx.taint_policies(T)] == ["untrusted"] * 3

    def test_events_matching_names_the_valid_events_of_a_kind_and_actor_in_seq_order(self, store: Store) -> None:
        def tool(event_id: str, actor: str, kind: str = "tool_result") -> NewEvent:
            return event(event_id).model_copy(update={"kind": kind, "actor": actor, "trust": "tool"})

        with store.write() as tx:
            append(tx, tool("e1", "tool:a"), event("e2"), tool("e3", "tool:b"), tool("e4", "tool:a"),
                   tool("e5", "tool:a", "document"))
            tx.set_event_state(T, S, "e4", "revoked", purge=False)
        with store.read() as tx:
            assert tx.events_matching(T, S, kind="tool_result", actor=None) == [
                ("e1", "tool_result", "tool:a", "tool"), ("e3", "tool_result", "tool:b", "tool")]
            assert tx.events_matching(T, S, kind=None, actor="tool:a") == [
                ("e1", "tool_result", "tool:a", "tool"), ("e5", "document", "tool:a", "tool")]
            assert tx.events_matching(T, S, kind="message", actor="user") == [
                ("e2", "message", "user", "authenticated_user")]
            assert tx.events_matching(T, "nobody", kind="tool_result", actor=None) == []
