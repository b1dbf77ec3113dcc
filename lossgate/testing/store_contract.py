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
* ledger: the zero clock, event and fact filters and their order, a purged event's
  tombstone (no actor, text or payload; id, seq and hash kept), conflicts, the log,
  the id look-ups, the registry, the tier reads demotion makes (events of a tier
  recorded by an instant, the oldest of each tier);
* per-subject serialisation under concurrency: a write transaction locks a subject on
  its first touch, read or write (a concurrent writer of that subject waits and then
  sees the committed state); concurrent read-modify-write transactions of one subject
  give gap-free sequence numbers; ``lock_alias`` locks the clock, and before the alias;
* derived: the NULL-safe compare-and-swap of the alias, creation-order tie-breaks,
  a script of derived-layer calls with the answer each must give, and the response
  boundary's records (guard results, responses): kept in order, found by what they touched;
* queue: one pending job per subject, claiming order, leases, and a retry that folds
  into the job already pending;
* search: the fresh tail is searched before the index takes it, purged text is not;
* the stored format: a tenant's artifacts listed by id, their documents read as stored
  and swapped only when unchanged since they were read, a newer format refused.
* tenant records: taint policies, tenant settings and daily metrics, each kept per
  tenant, in their stated order, with their types.
* access: API keys found by the hash of their secret across tenants, listed and revoked
  per tenant, never two with one hash; idempotency records kept once per tenant and key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest

from lossgate.access import ApiKey, IdempotencyRecord
from lossgate.derived import (
    Alias,
    Artifact,
    Attempt,
    DailyMetric,
    ExpectedAlias,
    GuardResult,
    InputRef,
    Lane,
    LineageEdge,
    Manifest,
    RecallRecord,
    RecallRedaction,
    Refusal,
    ResponseRecord,
)
from lossgate.errors import IdempotencyConflict, InvalidInput, StoreError
from lossgate.records import ArtifactBody, Clock, Conflict, Event, Fact, NewEvent, Proposal, TaintPolicy
from lossgate.store.protocol import ArtifactDocument, FactFilter, ReadTx, Store, WriteTx, primitives, touch_of
from lossgate.store.rows import ARTIFACT_FORMAT

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


def append(tx: WriteTx, *events: NewEvent, recorded_at: datetime = NOW) -> Clock:
    """Append ``events`` (all of one subject) after the subject's high water, as the ledger does."""
    clock = tx.lock_clock(events[0].tenant_id, events[0].subject_id)
    items = [(e, clock.high_water + i, f"sha256:{e.event_id}", NOW.isoformat()) for i, e in enumerate(events, 1)]
    tx.insert_events(items, recorded_at=recorded_at)
    clock = clock.model_copy(update={"high_water": clock.high_water + len(events)})
    tx.save_clock(clock)
    return clock


def fact(fact_id: str, seq: int, sources: tuple[str, ...], *, value: int = 5, status: str = "active",
         criticality: str = "important", predicate: str = "subscription.seats", tenant: str = T,
         subject: str = S) -> Fact:
    return Fact(tenant_id=tenant, subject_id=subject, fact_id=fact_id, seq=seq, predicate=predicate, registry_version=1,
                value_type="int", value=value, source_event_ids=sources, status=status, recorded_at=NOW,
                content_hash=f"sha256:{fact_id}", criticality=criticality)  # type: ignore[arg-type]


def artifact(artifact_id: str, parent: Alias, *, created_at: datetime = NOW) -> Artifact:
    """An artifact of ``parent``'s subject."""
    T, S = parent.tenant_id, parent.subject_id
    manifest = Manifest(
        artifact_id=artifact_id, tenant_id=T, subject_id=S, new_covers_through=3, input_epoch=0,
        expected_alias=parent.expected(), inputs=(InputRef(kind="event", id="e1", content_hash="sha256:e1", seq=1),),
        input_root="sha256:r", path="direct", selector_version="1", prompt_version="1", compressor="det",
        compressor_version="1", extractor_version="1", schema_version=2, registry_version=1, attempt=1,
        timings={"gate": 0.25, "huge": 1e20}, dropped=("e1",),
    )
    return Artifact(artifact_id=artifact_id, tenant_id=T, subject_id=S, state="candidate",
                    body=ArtifactBody(tenant_id=T, subject_id=S, summary=f"summary {artifact_id}"),
                    manifest=manifest, gate={"outcome": "clean", "score": 1.0}, created_at=created_at)


def recall_record(recall_id: str, *, at: datetime = NOW, candidates: tuple[str, ...] = ("e1",), tenant: str = T,
                  subject: str = S) -> RecallRecord:
    T, S = tenant, subject
    return RecallRecord(recall_id=recall_id, tenant_id=T, subject_id=S, at=at, query="refund", filters={"k": 1.5},
                        mode="summary", candidate_ids=candidates, selected_ids=candidates,
                        alias=Alias(tenant_id=T, subject_id=S), clock=Clock(tenant_id=T, subject_id=S))


def refusal(*, fact_id: str | None = None, sources: tuple[str, ...] = (), conflict_id: str | None = None) -> Refusal:
    return Refusal(rule="no_peanuts", kind="in_conflict" if conflict_id else "excludes", field="items[0].name",
                   value="satay", detail="items[0].name names 'peanuts'", fact_id=fact_id,
                   predicate="food.peanuts_allowed", fact_value=False, qualifiers={"basis": "allergy"},
                   source_event_ids=sources, conflict_id=conflict_id)


def guard_result(guard_id: str, *, at: datetime = NOW, recall_id: str | None = None,
                 refusals: tuple[Refusal, ...] = (), tenant: str = T, subject: str = S) -> GuardResult:
    return GuardResult(guard_id=guard_id, tenant_id=tenant, subject_id=subject, at=at,
                       action={"items": [{"name": "satay", "qty": 2, "price": 9.5}]}, action_sha256="sha256:act",
                       allowed=not refusals, refusals=refusals, rules=("no_peanuts",), recall_id=recall_id,
                       registry_version=1)


def response_record(response_id: str, recall_id: str, *, at: datetime = NOW, guard_id: str | None = None,
                    tenant: str = T, subject: str = S) -> ResponseRecord:
    return ResponseRecord(response_id=response_id, tenant_id=tenant, subject_id=subject, at=at, recall_id=recall_id,
                          guard_id=guard_id, answer="two satay, please", answer_sha256="sha256:ans")


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


def _epoch_after_holding(store: Store, touch: Callable[[WriteTx], object]) -> list[int]:
    """A first writer runs ``touch``, holds its transaction, then moves the subject's epoch; a
    second writer that started meanwhile locks the clock. The epoch it saw: 1 if it waited."""
    touched, seen = threading.Event(), []

    def first() -> None:
        with store.write() as tx:
            touch(tx)
            touched.set()
            time.sleep(HOLD)
            _bump_epoch(tx)

    def second() -> None:
        assert touched.wait(30)
        with store.write() as tx:
            seen.append(tx.lock_clock(T, S).input_epoch)

    assert in_threads(first, second) == []
    return seen


def _bump_epoch(tx: WriteTx) -> None:
    clock = tx.lock_clock(T, S)
    tx.save_clock(clock.model_copy(update={"input_epoch": clock.input_epoch + 1}))


def _touching(kinds: tuple[str, ...]) -> list[str]:
    """The primitives of a write transaction whose declared touch is one of ``kinds``."""
    return sorted(name for name, fn in primitives(WriteTx).items() if touch_of(fn).kind in kinds)


def _attempt(attempt_id: str, number: int, status: str, *, tenant: str = T, subject: str = S) -> Attempt:
    return Attempt(attempt_id=attempt_id, tenant_id=tenant, subject_id=subject, number=number, status=status,  # type: ignore[arg-type]
                   started_at=NOW, high_water=1, input_epoch=0,
                   expected_alias=Alias(tenant_id=tenant, subject_id=subject).expected(), selected_ids=("e1",),
                   input_root="sha256:r", compressor="det")


def _proposal(proposal_id: str, source: str, *, tenant: str = T, subject: str = S) -> Proposal:
    return Proposal(proposal_id=proposal_id, tenant_id=tenant, subject_id=subject, predicate="subscription.seats",
                    value=5, source_event_ids=(source,), authority="user", modality="asserted", extractor="test",
                    status="review", created_at=NOW)


def _conflict(conflict_id: str, a: str, b: str, *, tenant: str = T, subject: str = S) -> Conflict:
    return Conflict(tenant_id=tenant, subject_id=subject, conflict_id=conflict_id, predicate="subscription.seats",
                    fact_ids=(a, b), detected_at=NOW)


# A first touch of the subject by every primitive that touches one (its own, a record's,
# each record's, or the lock itself), reading or writing. The first-touch test runs each
# after a setup that appended e1 and asserted f1 and f2 (citing e1) to the subject.
FIRST_TOUCHES: dict[str, Callable[[WriteTx], object]] = {
    # ledger
    "clock": lambda tx: tx.clock(T, S),
    "events": lambda tx: tx.events(T, S, ids=["e1"]),
    "facts": lambda tx: tx.facts(T, S),
    "fact_sets": lambda tx: tx.fact_sets(T, S, [FactFilter()]),
    "facts_citing": lambda tx: tx.facts_citing(T, S, ["e1"]),
    "events_matching": lambda tx: tx.events_matching(T, S, kind="message", actor=None),
    "tier_events": lambda tx: tx.tier_events(T, S, "hot", recorded_through=NOW),
    "tier_oldest": lambda tx: tx.tier_oldest(T, S),
    "conflicts": lambda tx: tx.conflicts(T, S),
    "log": lambda tx: tx.log(T, S),
    "lock_clock": lambda tx: tx.lock_clock(T, S),
    "save_clock": lambda tx: tx.save_clock(Clock(tenant_id=T, subject_id=S, high_water=1)),
    "insert_events": lambda tx: tx.insert_events([(event("e9"), 9, "sha256:e9", NOW.isoformat())], recorded_at=NOW),
    "set_event_state": lambda tx: tx.set_event_state(T, S, "e1", "revoked", purge=False),
    "set_event_trust": lambda tx: tx.set_event_trust(T, S, "e1", "tool"),
    "insert_facts": lambda tx: tx.insert_facts([fact("f9", 1, ("e1",))]),
    "update_fact": lambda tx: tx.update_fact(T, S, "f1", status="superseded", superseded_by="f2"),
    "retired_terms_kept": lambda tx: tx.retired_terms_kept(T, S),
    "retired_facts_stating": lambda tx: tx.retired_facts_stating(T, S, ["num=5"], through_seq=9),
    "keep_retired_terms": lambda tx: tx.keep_retired_terms(T, S, {"f1": ["num=5"]}),
    "insert_conflict": lambda tx: tx.insert_conflict(_conflict("c1", "f1", "f2")),
    "resolve_conflict": lambda tx: tx.resolve_conflict(T, S, "c9", at=NOW, resolution="none"),
    "add_log": lambda tx: tx.add_log(T, S, at=NOW, op="assert", target_id="f1", detail={}),
    # derived
    "alias": lambda tx: tx.alias(T, S),
    "artifact": lambda tx: tx.artifact(T, S, "a1"),
    "recall_head": lambda tx: tx.recall_head(T, S),
    "artifact_head": lambda tx: tx.artifact_head(T, S, "a1"),
    "artifact_gate": lambda tx: tx.artifact_gate(T, S, "a1"),
    "artifact_drops": lambda tx: tx.artifact_drops(T, S, ["a1"]),
    "artifacts": lambda tx: tx.artifacts(T, S),
    "lineage": lambda tx: tx.lineage(T, S, "a1"),
    "descendants": lambda tx: tx.descendants(T, S, ["e1"]),
    "attempts": lambda tx: tx.attempts(T, S),
    "attempt_tail": lambda tx: tx.attempt_tail(T, S),
    "attempt": lambda tx: tx.attempt(T, S, "at1"),
    "recalls": lambda tx: tx.recalls(T, S),
    "recalls_touching": lambda tx: tx.recalls_touching(T, S, ["e1"]),
    "recall_record": lambda tx: tx.recall_record(T, S, "r1"),
    "guard_result": lambda tx: tx.guard_result(T, S, "g1"),
    "guard_results": lambda tx: tx.guard_results(T, S),
    "guard_results_touching": lambda tx: tx.guard_results_touching(T, S, ["e1"]),
    "responses": lambda tx: tx.responses(T, S),
    "responses_touching": lambda tx: tx.responses_touching(T, S, ["e1"]),
    "proposals": lambda tx: tx.proposals(T, S),
    "extracted_through": lambda tx: tx.extracted_through(T, S),
    "lock_alias": lambda tx: tx.lock_alias(T, S),
    "cas_alias": lambda tx: tx.cas_alias(T, S, expected=ExpectedAlias(parent_artifact_id="a9", source_epoch=0,
                                                                      covers_through=0),
                                         artifact_id="a1", source_epoch=0, covers_through=1, at=NOW),
    "insert_artifact": lambda tx: tx.insert_artifact(artifact("a1", Alias(tenant_id=T, subject_id=S)), []),
    "set_artifact_state": lambda tx: tx.set_artifact_state(T, S, ["a1"], "retired", reason="test"),
    "save_attempt": lambda tx: tx.save_attempt(_attempt("at1", 1, "rejected")),
    "replace_artifact_body": lambda tx: tx.replace_artifact_body(T, S, "a1", ArtifactBody(tenant_id=T, subject_id=S)),
    "replace_recall": lambda tx: tx.replace_recall(recall_record("r1")),
    "record_guard": lambda tx: tx.record_guard(guard_result("g1")),
    "replace_guard": lambda tx: tx.replace_guard(guard_result("g1")),
    "record_response": lambda tx: tx.record_response(response_record("rs1", "r1")),
    "replace_response": lambda tx: tx.replace_response(response_record("rs1", "r1")),
    "replace_artifact_documents": lambda tx: tx.replace_artifact_documents(
        [(ArtifactDocument(T, S, "a1", "candidate", "{}", "{}"), "{}", "{}")]),
    "forget_records": lambda tx: tx.forget_records(T, S, before=NOW),
    "set_tier": lambda tx: tx.set_tier(T, S, through_seq=1, tier="cold"),
    "save_proposals": lambda tx: tx.save_proposals([_proposal("p1", "e1")]),
    "set_extracted_through": lambda tx: tx.set_extracted_through(T, S, 1),
    # queue
    "enqueue_job": lambda tx: tx.enqueue_job(T, S, reason="test", run_after=NOW, at=NOW),
    "finish_job": lambda tx: tx.finish_job(T, S, 999, owner="w", status="done", at=NOW),
    "cancel_pending_jobs": lambda tx: tx.cancel_pending_jobs(T, S, at=NOW, reason="test"),
    # search
    "search_events": lambda tx: tx.search_events(T, S, "text", limit=5),
    "search_facts": lambda tx: tx.search_facts(T, S, "seats", limit=5),
    "search_backlog": lambda tx: tx.search_backlog(T, S),
    "vectors": lambda tx: tx.vectors(T, S, "m", "event"),
    "vector_size": lambda tx: tx.vector_size(T, S, "m"),
    "vectors_version": lambda tx: tx.vectors_version(T, S),
    "unembedded": lambda tx: tx.unembedded(T, S, "m", "event", after_seq=0, limit=5),
    "put_vectors": lambda tx: tx.put_vectors(T, S, "m", [("event", "e1", b"\0\0\0\0")]),
    "drop_vectors": lambda tx: tx.drop_vectors(T, S, "m"),
}


# -- the scope rule: three scopes, each primitive asked for one ---------------------------

# (prefix of every id, tenant, subject, how many events), in the order they are written:
# the subject under test last, and the others' ids sorting before its own, so that a
# statement that forgets its subject (or tenant) meets another's row first, in creation
# order and in key order alike.
SCOPES = (("sib", T, "u0", 3), ("oth", "aardvark", S, 4), ("own", T, S, 2))
_PREFIXES = [p for p, *_ in SCOPES]


def _all(suffix: str) -> list[str]:
    """The id ``<prefix>-<suffix>`` of every scope."""
    return [f"{p}-{suffix}" for p in _PREFIXES]


def _write_scope(tx: WriteTx, p: str, t: str, s: str, n: int) -> None:
    """A subject with something in every table, every id prefixed with ``p``; ``n`` (the
    number of events) sets each number a primitive reports, and when its events were
    recorded (``n`` days before NOW: the other scopes' events are older)."""
    append(tx, *(event(f"{p}-e{i}", f"refund {p} request {i}", subject=s, tenant=t) for i in range(1, n + 1)),
           recorded_at=NOW - timedelta(days=n))
    tx.insert_facts([fact(f"{p}-f1", 1, (f"{p}-e1",), tenant=t, subject=s),
                     fact(f"{p}-f2", 2, (f"{p}-e2",), value=6, tenant=t, subject=s)])
    tx.update_fact(t, s, f"{p}-f2", status="superseded", superseded_by=f"{p}-f1", terms=("num=6", "@refund"))
    tx.insert_conflict(_conflict(f"{p}-c1", f"{p}-f1", f"{p}-f2", tenant=t, subject=s))
    tx.add_log(t, s, at=NOW, op="assert", target_id=f"{p}-f1", detail={"n": n})
    alias = tx.lock_alias(t, s)
    tx.insert_artifact(artifact(f"{p}-a1", alias), [
        LineageEdge(tenant_id=t, subject_id=s, artifact_id=f"{p}-a1", input_kind="event", input_id=f"{p}-e1")])
    tx.insert_artifact(artifact(f"{p}-a2", alias), [
        LineageEdge(tenant_id=t, subject_id=s, artifact_id=f"{p}-a2", input_kind="artifact", input_id=f"{p}-a1")])
    assert tx.cas_alias(t, s, expected=alias.expected(), artifact_id=f"{p}-a1", source_epoch=0, covers_through=n,
                        at=NOW) is True
    tx.set_artifact_state(t, s, [f"{p}-a1"], "published", reason=p)
    for i in range(1, n):
        tx.save_attempt(_attempt(f"{p}-at{i}", i, "rejected", tenant=t, subject=s))
    tx.insert_recall(recall_record(f"{p}-r1", candidates=(f"{p}-e1",), tenant=t, subject=s))
    tx.record_guard(guard_result(f"{p}-g1", recall_id=f"{p}-r1", tenant=t, subject=s,
                                 refusals=(refusal(fact_id=f"{p}-f1", sources=(f"{p}-e1",)),)))
    tx.record_guard(guard_result(f"{p}-g2", tenant=t, subject=s))
    tx.record_response(response_record(f"{p}-rs1", f"{p}-r1", guard_id=f"{p}-g1", tenant=t, subject=s))
    tx.save_proposals([_proposal(f"{p}-p1", f"{p}-e1", tenant=t, subject=s)])
    tx.set_extracted_through(t, s, n)
    for i in range(1, n):  # one call each: the vectors' version counts n - 1 changes
        tx.put_vectors(t, s, "m", [("event", f"{p}-e{i}", b"\0" * 4 * n)])
    tx.enqueue_job(t, s, reason=p, run_after=NOW, at=NOW)


def _ids(items: Any, attr: str) -> list[str]:
    return [getattr(x, attr) for x in items]


def _recall_head(clock: Clock, alias: Alias, head: Any) -> tuple[int, str | None, str | None]:
    return clock.high_water, alias.artifact_id, None if head is None else head.artifact_id


def _attempt_tail(count: int, tail: list[Attempt]) -> tuple[int, list[str]]:
    return count, _ids(tail, "attempt_id")


# Every read of one subject, asked for scope (t, s), naming the ids of every scope where it
# takes ids; and what it must answer for the subject under test ("own", 2 events). A
# statement that forgot its subject (or its tenant) answers with another scope's ids or
# numbers. search_backlog is left out: SQLite's index is one for the file (its backlog is
# the file's, as the protocol says).
SCOPED_READS: dict[str, tuple[Callable[[Any, str, str], object], object]] = {
    "clock": (lambda tx, t, s: tx.clock(t, s).high_water, 2),
    "events": (lambda tx, t, s: [[(e.event_id, e.state, e.trust, e.tier) for e in tx.events(t, s)],
                                 _ids(tx.events(t, s, ids=_all("e1")), "event_id"),
                                 _ids(tx.events(t, s, seqs=[1, 2, 3, 4]), "event_id")],
               [[("own-e1", "valid", "authenticated_user", "hot"), ("own-e2", "valid", "authenticated_user", "hot")],
                ["own-e1"], ["own-e1", "own-e2"]]),
    "facts": (lambda tx, t, s: [[(f.fact_id, f.status) for f in tx.facts(t, s)],
                                _ids(tx.facts(t, s, ids=_all("f1")), "fact_id")],
              [[("own-f1", "active"), ("own-f2", "superseded")], ["own-f1"]]),
    "fact_sets": (lambda tx, t, s: [_ids(f, "fact_id") for f in tx.fact_sets(t, s, [
        FactFilter(), FactFilter(ids=_all("f2")), FactFilter(statuses=["active"])])],
        [["own-f1", "own-f2"], ["own-f2"], ["own-f1"]]),
    "facts_citing": (lambda tx, t, s: _ids(tx.facts_citing(t, s, _all("e1") + _all("e2")), "fact_id"),
                     ["own-f1", "own-f2"]),
    "retired_terms_kept": (lambda tx, t, s: tx.retired_terms_kept(t, s), True),
    "retired_facts_stating": (lambda tx, t, s: _ids(tx.retired_facts_stating(t, s, ["num=6"], through_seq=9),
                                                    "fact_id"), ["own-f1", "own-f2"]),
    "events_matching": (lambda tx, t, s: [e[0] for e in tx.events_matching(t, s, kind="message", actor="user")],
                        ["own-e1", "own-e2"]),
    "tier_events": (lambda tx, t, s: [_ids(tx.tier_events(t, s, "hot", recorded_through=NOW), "event_id"),
                                      _ids(tx.tier_events(t, s, "hot", recorded_through=NOW - timedelta(days=2)),
                                           "event_id"),
                                      _ids(tx.tier_events(t, s, "warm", recorded_through=NOW), "event_id")],
                    [["own-e1", "own-e2"], ["own-e1", "own-e2"], []]),
    "tier_oldest": (lambda tx, t, s: tx.tier_oldest(t, s), {"hot": NOW - timedelta(days=2)}),
    "conflicts": (lambda tx, t, s: [[(c.conflict_id, c.status) for c in tx.conflicts(t, s)],
                                    _ids(tx.conflicts(t, s, fact_id="sib-f1"), "conflict_id")],
                  [[("own-c1", "unresolved")], []]),
    "log": (lambda tx, t, s: [[(e.op, e.target_id) for e in tx.log(t, s)],
                              [e.target_id for e in tx.log(t, s, target_ids=_all("f1"))]],
            [[("assert", "own-f1")], ["own-f1"]]),
    "alias": (lambda tx, t, s: (tx.alias(t, s).artifact_id, tx.alias(t, s).covers_through), ("own-a1", 2)),
    "artifact": (lambda tx, t, s: [None if (a := tx.artifact(t, s, i)) is None else a.artifact_id for i in _all("a1")],
                 [None, None, "own-a1"]),
    "recall_head": (lambda tx, t, s: _recall_head(*tx.recall_head(t, s)), (2, "own-a1", "own-a1")),
    "artifact_head": (lambda tx, t, s: [None if (h := tx.artifact_head(t, s, i)) is None else (h.artifact_id, h.summary)
                                        for i in _all("a2")], [None, None, ("own-a2", "summary own-a2")]),
    "artifact_gate": (lambda tx, t, s: [tx.artifact_gate(t, s, i) for i in _all("a1")],
                      [None, None, ("published", "clean")]),
    "artifact_drops": (lambda tx, t, s: tx.artifact_drops(t, s, _all("a1")), {"own-a1": (("e1",), ())}),
    "artifacts": (lambda tx, t, s: [[(a.artifact_id, a.state) for a in tx.artifacts(t, s)],
                                    _ids(tx.artifacts(t, s, states=["published"]), "artifact_id")],
                  [[("own-a1", "published"), ("own-a2", "candidate")], ["own-a1"]]),
    "lineage": (lambda tx, t, s: [[e.input_id for e in tx.lineage(t, s, i)] for i in _all("a1")],
                [[], [], ["own-e1"]]),
    "descendants": (lambda tx, t, s: tx.descendants(t, s, _all("e1")), ["own-a1", "own-a2"]),
    "attempts": (lambda tx, t, s: _ids(tx.attempts(t, s), "attempt_id"), ["own-at1"]),
    "attempt_tail": (lambda tx, t, s: _attempt_tail(*tx.attempt_tail(t, s)), (1, ["own-at1"])),
    "attempt": (lambda tx, t, s: [None if (a := tx.attempt(t, s, i)) is None else a.attempt_id for i in _all("at1")],
                [None, None, "own-at1"]),
    "recalls": (lambda tx, t, s: _ids(tx.recalls(t, s), "recall_id"), ["own-r1"]),
    "recalls_touching": (lambda tx, t, s: _ids(tx.recalls_touching(t, s, _all("e1")), "recall_id"), ["own-r1"]),
    "recall_record": (lambda tx, t, s: [None if (r := tx.recall_record(t, s, i)) is None else r.recall_id
                                        for i in _all("r1")], [None, None, "own-r1"]),
    "guard_result": (lambda tx, t, s: [None if (g := tx.guard_result(t, s, i)) is None else g.guard_id
                                       for i in _all("g1")], [None, None, "own-g1"]),
    "guard_results": (lambda tx, t, s: _ids(tx.guard_results(t, s), "guard_id"), ["own-g2", "own-g1"]),
    "guard_results_touching": (lambda tx, t, s: [_ids(tx.guard_results_touching(t, s, _all(x)), "guard_id")
                                                 for x in ("e1", "f1")], [["own-g1"], ["own-g1"]]),
    "responses": (lambda tx, t, s: _ids(tx.responses(t, s), "response_id"), ["own-rs1"]),
    "responses_touching": (lambda tx, t, s: _ids(tx.responses_touching(t, s, _all("e1")), "response_id"),
                           ["own-rs1"]),
    "proposals": (lambda tx, t, s: [_ids(tx.proposals(t, s), "proposal_id"),
                                    _ids(tx.proposals(t, s, ids=_all("p1")), "proposal_id")],
                  [["own-p1"], ["own-p1"]]),
    "extracted_through": (lambda tx, t, s: tx.extracted_through(t, s), 2),
    "search_events": (lambda tx, t, s: sorted(tx.search_events(t, s, "refund sib oth own", limit=20)),
                      ["own-e1", "own-e2"]),
    "search_facts": (lambda tx, t, s: tx.search_facts(t, s, "seats", limit=20), ["own-f1"]),
    "vectors": (lambda tx, t, s: [(i, len(v)) for i, v in tx.vectors(t, s, "m", "event")], [("own-e1", 8)]),
    "vector_size": (lambda tx, t, s: tx.vector_size(t, s, "m"), 8),
    "vectors_version": (lambda tx, t, s: tx.vectors_version(t, s), 2),  # n - 1 stores, one superseded fact
    "unembedded": (lambda tx, t, s: [[i for i, _, _ in tx.unembedded(t, s, "m", kind, after_seq=0, limit=20)]
                                     for kind in ("event", "fact")], [["own-e2"], ["own-f1"]]),
    "jobs": (lambda tx, t, s: [j.reason for j in tx.jobs(t, s)], ["own"]),
}
SCOPE_EXEMPT = {"search_backlog": "SQLite's full-text index is one for the whole file; so is its backlog"}


def _read_scope(tx: Any, t: str, s: str) -> dict[str, object]:
    return {name: read(tx, t, s) for name, (read, _) in SCOPED_READS.items()}


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
            assert (purged.state, purged.seq, purged.content_hash) == ("deleted", 2, "sha256:e2")
            assert (purged.actor, purged.text, purged.payload) == (None, None, None)
            assert [e.actor for e in tx.events(T, S, states=["valid"])] == ["user"] * 4
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

    # -- the scope rule -----------------------------------------------------------------------
    def test_every_read_of_a_subject_answers_with_that_subjects_rows_only(self, store: Store) -> None:
        """Three subjects with something in every table (another subject of the tenant, the same
        subject id in another tenant, then the subject under test); every read primitive that
        names a subject, asked for the last, answers what it holds and nothing of the others,
        before the search index takes the events and after."""
        reads = {name for name, fn in primitives(ReadTx).items() if touch_of(fn).kind == "subject"}
        assert sorted(reads - set(SCOPED_READS) - set(SCOPE_EXEMPT)) == [], "a read primitive the scope test lacks"
        with store.write() as tx:
            for p, t, s, n in SCOPES:
                _write_scope(tx, p, t, s, n)
        expected = {name: want for name, (_, want) in SCOPED_READS.items()}

        def wrong(got: dict[str, object]) -> dict[str, tuple[object, object]]:
            return {name: (value, expected[name]) for name, value in got.items() if value != expected[name]}

        with store.read() as tx:
            bad = wrong(_read_scope(tx, T, S))
            assert bad == {}, f"(got, expected) of each read that answered wrong: {bad}"
        with store.write() as tx:
            for _, t, s, _ in SCOPES:
                tx.lock_clock(t, s)  # PostgreSQL indexes the subjects a transaction has locked
            tx.refresh_search_index()
            bad = wrong(_read_scope(tx, T, S))  # indexed, and inside a write transaction
            assert bad == {}, f"(got, expected) of each read that answered wrong: {bad}"

    def test_writes_to_a_subject_leave_every_other_subject_as_it_was(self, store: Store) -> None:
        """Every write primitive that names a subject, given the subject under test and another
        scope's ids: the other scopes read the same after, and each answer is the subject's own."""
        with store.write() as tx:
            for p, t, s, n in SCOPES:
                _write_scope(tx, p, t, s, n)
        with store.write() as tx:
            job = tx.claim_job(owner="w", lease_seconds=600, now=NOW)
            assert job is not None and (job.tenant_id, job.subject_id) == (T, "u0")  # queued first
            assert tx.enqueue_job(T, "u0", reason="sib-again", run_after=NOW, at=NOW) is True

        def others() -> dict[tuple[str, str], dict[str, object]]:
            with store.read() as tx:
                return {(t, s): _read_scope(tx, t, s) for p, t, s, _ in SCOPES if p != "own"}

        before = others()
        with store.write() as tx:
            assert tx.lock_clock(T, S).high_water == 2
            assert tx.lock_alias(T, S).artifact_id == "own-a1"
            tx.save_clock(Clock(tenant_id=T, subject_id=S, high_water=2, input_epoch=1))
            tx.set_event_state(T, S, "sib-e1", "deleted", purge=True)
            tx.set_event_trust(T, S, "sib-e2", "tool")
            tx.update_fact(T, S, "sib-f1", status="deleted", purge=True)
            tx.resolve_conflict(T, S, "sib-c1", at=NOW, resolution="not this subject's")
            assert tx.cas_alias(T, S, expected=ExpectedAlias(parent_artifact_id="sib-a1", source_epoch=0,
                                                             covers_through=3),
                                artifact_id="own-a2", source_epoch=0, covers_through=3, at=NOW) is False
            assert tx.set_artifact_state(T, S, _all("a1"), "retired", reason="test") == ["own-a1"]
            tx.replace_artifact_body(T, S, "sib-a2", ArtifactBody(tenant_id=T, subject_id=S, summary="[purged]"))
            (sib_a2,) = tx.artifact_documents(T, ["sib-a2"])  # the sibling's, as read, said to be this subject's
            assert tx.replace_artifact_documents([(dataclasses.replace(sib_a2, subject_id=S), "{}", "{}")]) == []
            tx.replace_recall(recall_record("sib-r1", candidates=()))
            tx.replace_guard(guard_result("sib-g1"))  # the sibling's id, said to be this subject's
            tx.replace_response(response_record("sib-rs1", "sib-r1"))
            assert tx.set_tier(T, S, through_seq=9, tier="cold") == 2
            tx.set_extracted_through(T, S, 9)
            assert tx.put_vectors(T, S, "m", [("event", "sib-e2", b"\0" * 8)]) == 0  # not this subject's event
            assert tx.drop_vectors(T, S, "m") == 1
            assert tx.finish_job(T, S, job.job_id, owner="w", status="done", at=NOW) is False  # another's job
            assert tx.cancel_pending_jobs(T, S, at=NOW, reason="test") == 1
            tx.add_log(T, S, at=NOW, op="note", target_id="sib-f1", detail={})
        after = others()
        changed = {(scope, name): (before[scope][name], after[scope][name]) for scope in before
                   for name in before[scope] if before[scope][name] != after[scope][name]}
        assert changed == {}, f"another scope's reads changed (before, after): {changed}"
        with store.read() as tx:
            assert tx.clock(T, S).input_epoch == 1 and tx.extracted_through(T, S) == 9
            assert [e.tier for e in tx.events(T, S)] == ["cold", "cold"] and tx.vectors(T, S, "m", "event") == []
            assert [(j.reason, j.status) for j in tx.jobs(T, S)] == [("own (test)", "done")]
            assert [e.target_id for e in tx.log(T, S)] == ["own-f1", "sib-f1"]

    # -- errors -----------------------------------------------------------------------------
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

    # -- instants -----------------------------------------------------------------------------
    def test_instants_with_another_utc_offset_order_as_time(self, store: Store) -> None:
        plus2 = timezone(timedelta(hours=2))
        half_past_eleven = datetime(2026, 3, 14, 13, 30, tzinfo=plus2)  # 11:30 UTC, before NOW (12:00 UTC)
        with store.write() as tx:
            append(tx, event("e1"))
            alias = tx.lock_alias(T, S)
            tx.insert_artifact(artifact("a-noon", alias, created_at=NOW), [])
            tx.insert_artifact(artifact("a-1130", alias, created_at=half_past_eleven), [])
            tx.insert_recall(recall_record("r-noon", at=NOW))
            tx.insert_recall(recall_record("r-1130", at=half_past_eleven))
            tx.enqueue_job(T, S, reason="due at 11:00 UTC", run_after=datetime(2026, 3, 14, 13, 0, tzinfo=plus2),
                           at=NOW)
        with store.read() as tx:
            assert [a.artifact_id for a in tx.artifacts(T, S)] == ["a-1130", "a-noon"]
            assert [r.recall_id for r in tx.recalls(T, S)] == ["r-noon", "r-1130"]  # newest first
            a = tx.artifact(T, S, "a-1130")
            assert a is not None and a.created_at == half_past_eleven  # the same instant
        with store.write() as tx:
            assert tx.claim_job(owner="w", lease_seconds=30, now=NOW - timedelta(minutes=75)) is None  # 10:45 UTC
        with store.write() as tx:
            job = tx.claim_job(owner="w", lease_seconds=30, now=NOW - timedelta(minutes=45))  # 11:15 UTC: due
            assert job is not None and job.run_after == datetime(2026, 3, 14, 11, 0, tzinfo=UTC)


    # -- per-subject serialisation -------------------------------------------------------------
    def test_the_first_touch_test_covers_every_primitive_that_touches_a_subject(self) -> None:
        assert sorted(FIRST_TOUCHES) == _touching(("subject", "subjects", "own"))

    @pytest.mark.parametrize("touch", sorted(FIRST_TOUCHES))
    def test_a_write_transaction_locks_the_subject_on_first_touch(self, store: Store, touch: str) -> None:
        """The first writer touches the subject, then holds its transaction; a second writer of
        the subject must wait, and then see what the first committed."""
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_facts([fact("f1", 1, ("e1",)), fact("f2", 1, ("e1",), value=6)])
        seen = _epoch_after_holding(store, FIRST_TOUCHES[touch])
        assert seen == [1], f"a writer got the subject while another held it since its first touch ({touch})"

    @pytest.mark.parametrize("touch", sorted(set(FIRST_TOUCHES) & set(primitives(ReadTx))))
    def test_the_first_touch_locks_a_subject_never_written(self, store: Store, touch: str) -> None:
        """The subject has no row anywhere yet: a read of it still locks it, so a rival cannot
        append to it before this transaction ends."""
        touched, seen = threading.Event(), []

        def first() -> None:
            with store.write() as tx:
                FIRST_TOUCHES[touch](tx)
                touched.set()
                time.sleep(HOLD)
                seen.append([e.event_id for e in tx.events(T, S)])

        def second() -> None:
            assert touched.wait(30)
            with store.write() as tx:
                append(tx, event("e1"))

        assert in_threads(first, second) == []
        assert seen == [[]], f"a rival wrote the subject inside a transaction that had read it ({touch})"
        with store.read() as tx:
            assert [e.event_id for e in tx.events(T, S)] == ["e1"]

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
        assert _epoch_after_holding(store, lambda tx: tx.lock_alias(T, S)) == [1]

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
    @pytest.mark.parametrize("lane", ["live", "shadow"])
    def test_the_alias_cas_compares_null_safely_and_never_regresses(self, store: Store, lane: Lane) -> None:
        other: Lane = "shadow" if lane == "live" else "live"
        with store.write() as tx:
            append(tx, event("e1"), event("e2"), event("e3"))
            empty = tx.lock_alias(T, S, lane=lane)
            assert empty == Alias(tenant_id=T, subject_id=S)
            tx.insert_artifact(artifact("a1", empty), [])
            tx.insert_artifact(artifact("a2", empty), [])

            def cas(parent: str | None, epoch: int, covers: int, to: str, new_covers: int) -> bool:
                return tx.cas_alias(T, S, expected=ExpectedAlias(parent_artifact_id=parent, source_epoch=epoch,
                                                                 covers_through=covers),
                                    artifact_id=to, source_epoch=0, covers_through=new_covers, at=NOW, lane=lane)

            assert cas("a9", 0, 0, "a1", 2) is False  # the alias has no artifact: only None matches it
            assert cas(None, 1, 0, "a1", 2) is False  # another epoch
            assert cas(None, 0, 0, "a1", 2) is True
            assert cas(None, 0, 2, "a2", 2) is False  # only the parent differs: None matches no published alias
            assert cas(None, 0, 0, "a2", 3) is False  # None no longer matches
            assert cas("a1", 0, 1, "a2", 3) is False  # another coverage
            assert cas("a1", 0, 2, "a2", 1) is False  # coverage would regress
            assert cas("a1", 0, 2, "a2", 2) is True  # equal coverage is no regression
            assert tx.alias(T, S, lane=lane).model_dump(exclude={"updated_at"}) == {
                "tenant_id": T, "subject_id": S, "artifact_id": "a2", "source_epoch": 0, "covers_through": 2}
            assert tx.alias(T, S, lane=other) == Alias(tenant_id=T, subject_id=S)  # each lane its own alias

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
            assert tx.artifact_gate(T, S, "a1") == ("published", "clean")
            assert tx.artifact_gate(T, S, "a2") == ("candidate", "clean")
            assert tx.artifact_gate(T, S, "nope") is None
            assert tx.artifact_drops(T, S, ["a1", "a2", "nope"]) == {"a1": (("e1",), ()), "a2": (("e1",), ())}
            assert tx.artifact_drops(T, S, []) == {}
            assert a1.manifest.dropped == ("e1",)
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

    def test_guard_results_and_responses_keep_their_order_and_are_found_by_what_they_touched(
            self, store: Store) -> None:
        """The response boundary's records: read back as written, newest first (creation order
        breaking ties on ``at``, given with any UTC offset), one per id in the tenant; found for a
        deletion by what they touched (a refusal's fact, conflict or source event; the tied
        recall's candidates or the summary it read) until they are redacted."""
        plus2 = timezone(timedelta(hours=2))
        later = datetime(2026, 3, 14, 14, 0, 1, tzinfo=plus2)  # 12:00:01 UTC
        summary_recall = recall_record("r-sum", candidates=("e9",)).model_copy(
            update={"alias": Alias(tenant_id=T, subject_id=S, artifact_id="a1")})
        raw_recall = recall_record("r-raw", candidates=("e9",)).model_copy(
            update={"mode": "raw_fallback", "alias": Alias(tenant_id=T, subject_id=S, artifact_id="a1")})
        by_fact = guard_result("g-z", refusals=(refusal(fact_id="f1", sources=("e1",)),))
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_recall(recall_record("r-e2", candidates=("e2", "f2")))
            tx.insert_recall(summary_recall)
            tx.insert_recall(raw_recall)
            tx.record_guard(by_fact)
            tx.record_guard(guard_result("g-a", refusals=(refusal(conflict_id="c1", sources=("e3",)),)))
            tx.record_guard(guard_result("g-m", at=later, recall_id="r-e2"))
            tx.record_guard(guard_result("g-sum", recall_id="r-sum"))
            tx.record_guard(guard_result("g-raw", recall_id="r-raw"))
            tx.record_guard(guard_result("g-other", tenant="globex", refusals=(refusal(fact_id="f1"),)))
            tx.record_response(response_record("rs-z", "r-e2", guard_id="g-m"))
            tx.record_response(response_record("rs-a", "r-sum"))
            tx.record_response(response_record("rs-m", "r-raw", at=later))
            tx.record_response(response_record("rs-gone", "r-never-stored"))
        with store.read() as tx:
            assert tx.guard_result(T, S, "g-z") == by_fact  # the action, refusals and their values as written
            assert tx.guard_result(T, S, "g-other") is None and tx.guard_result("globex", S, "g-other") is not None
            assert tx.recall_record(T, S, "r-sum") == summary_recall and tx.recall_record(T, S, "nope") is None
            assert _ids(tx.guard_results(T, S), "guard_id") == ["g-m", "g-raw", "g-sum", "g-a", "g-z"]
            assert _ids(tx.guard_results(T, S, limit=2), "guard_id") == ["g-m", "g-raw"]
            assert _ids(tx.responses(T, S), "response_id") == ["rs-m", "rs-gone", "rs-a", "rs-z"]
            assert tx.responses(T, S, limit=1)[0].at == later
            assert tx.responses(T, "nobody") == [] and tx.guard_results(T, "nobody") == []

            def touching(*ids: str) -> tuple[list[str], list[str]]:
                return (_ids(tx.guard_results_touching(T, S, list(ids)), "guard_id"),
                        _ids(tx.responses_touching(T, S, list(ids)), "response_id"))

            assert touching("f1") == (["g-z"], [])  # a refusal's fact
            assert touching("e1") == (["g-z"], [])  # a refusal's source event
            assert touching("c1") == (["g-a"], [])  # a refusal's conflict
            assert touching("e2") == (["g-m"], ["rs-z"])  # the tied recall's candidate
            assert touching("f2", "nope") == (["g-m"], ["rs-z"])
            assert touching("a1") == (["g-sum"], ["rs-a"])  # the summary a summary-mode recall read
            assert touching("e9") == (["g-sum", "g-raw"], ["rs-a", "rs-m"])
            assert touching("g-m") == ([], ["rs-z"])  # a response on a guard result
            assert touching("nope") == ([], []) and touching() == ([], [])
        redaction = RecallRedaction(at=NOW, cause="delete_event e2", query_sha256="sha256:act", query_chars=3)
        with store.write() as tx:
            redacted = tx.guard_result(T, S, "g-m")
            assert redacted is not None
            tx.replace_guard(redacted.model_copy(update={"action": None, "redacted": redaction}))
            (answered,) = tx.responses_touching(T, S, ["e2"])
            tx.replace_response(answered.model_copy(update={"answer": None, "redacted": redaction}))
        with store.read() as tx:
            assert tx.guard_results_touching(T, S, ["e2"]) == [] and tx.responses_touching(T, S, ["e2"]) == []
            g_m = tx.guard_result(T, S, "g-m")
            assert g_m is not None and g_m.action is None and g_m.action_sha256 == "sha256:act"
            assert g_m.redacted is not None and g_m.redacted.cause == "delete_event e2"
            assert [(r.response_id, r.answer) for r in tx.responses(T, S)][-1] == ("rs-z", None)
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.record_guard(guard_result("g-z", subject="u2"))  # an id is taken once per tenant
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.record_response(response_record("rs-z", "r-e2", subject="u2"))
        with store.read() as tx:
            assert tx.guard_results(T, "u2") == [] and tx.responses(T, "u2") == []

    # -- the stored format -----------------------------------------------------------------
    def test_artifact_documents_are_listed_by_id_and_swapped_only_as_they_were_read(self, store: Store) -> None:
        """A migration of the stored format pages through a tenant's artifacts by id (every
        subject's, no other tenant's), reads their documents as stored and swaps in new ones,
        each only if it is unchanged since it was read; the body states its format, and a
        format newer than the store's is refused, not misread."""
        with store.write() as tx:
            for t, s, ids in ((T, S, ("a2", "a1")), (T, "u2", ("b1",)), ("globex", S, ("a0",))):
                append(tx, event(f"e-{t}-{s}", subject=s, tenant=t))
                alias = tx.lock_alias(t, s)
                for aid in ids:
                    tx.insert_artifact(artifact(aid, alias), [])
        with store.read() as tx:
            assert tx.artifact_ids(T, limit=10) == [("a1", S), ("a2", S), ("b1", "u2")]
            assert tx.artifact_ids(T, after="a1", limit=1) == [("a2", S)]
            assert tx.artifact_ids(T, after="b1", limit=10) == [] and tx.artifact_ids("nobody", limit=10) == []
            assert tx.artifact_ids("globex", limit=10) == [("a0", S)]
            docs = tx.artifact_documents(T, ["b1", "a0", "nope", "a1"])  # a0 is globex's
            assert tx.artifact_documents(T, []) == []
        assert [(d.tenant_id, d.subject_id, d.artifact_id, d.state) for d in docs] == [
            (T, S, "a1", "candidate"), (T, "u2", "b1", "candidate")]
        a1, b1 = docs
        body = orjson.loads(a1.body)
        assert body["format"] == ARTIFACT_FORMAT and body["summary"] == "summary a1"
        assert orjson.loads(a1.manifest)["artifact_id"] == "a1"

        def without_format(doc: ArtifactDocument, summary: str) -> str:
            return orjson.dumps({**{k: v for k, v in orjson.loads(doc.body).items() if k != "format"},
                                 "summary": summary}).decode()

        with store.write() as tx:
            assert tx.replace_artifact_documents([(a1, without_format(a1, "format 1"), a1.manifest)]) == ["a1"]
            assert tx.replace_artifact_documents([(a1, without_format(a1, "again"), a1.manifest)]) == []  # changed
            tx.replace_artifact_body(T, "u2", "b1", ArtifactBody(tenant_id=T, subject_id="u2", summary="[purged]"))
            assert tx.replace_artifact_documents([(b1, without_format(b1, "resurrected"), b1.manifest)]) == []
            assert tx.replace_artifact_documents([]) == []
        with store.read() as tx:
            read = tx.artifact(T, S, "a1")
            assert read is not None and (read.body.summary, read.state) == ("format 1", "candidate")
            assert read.manifest == artifact("a1", Alias(tenant_id=T, subject_id=S)).manifest
            assert "format" not in orjson.loads(tx.artifact_documents(T, ["a1"])[0].body)
            b1_now = tx.artifact(T, "u2", "b1")
            assert b1_now is not None and b1_now.body.summary == "[purged]"
            (a1,) = tx.artifact_documents(T, ["a1"])
        newer = orjson.dumps({**orjson.loads(a1.body), "format": ARTIFACT_FORMAT + 97}).decode()
        with store.write() as tx:
            assert tx.replace_artifact_documents([(a1, newer, a1.manifest)]) == ["a1"]
        with pytest.raises(StoreError, match=f"format {ARTIFACT_FORMAT + 97}"), store.read() as tx:
            tx.artifact(T, S, "a1")

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
            tx.insert_facts([fact("f3", 1, ("e1",), predicate="billing.plan", value=3)])
            tx.update_fact(T, S, "f3", status="superseded", superseded_by="f1")
        with store.read() as tx:
            assert tx.search_facts(T, S, "seats", limit=5) == ["f1"]
            assert tx.search_facts(T, S, "billing plan", limit=5) == []  # superseded
            assert tx.search_facts(T, S, "contact email", limit=5) == []
            assert tx.search_facts(T, S, "  ", limit=5) == []


    def test_skip_erased_leaves_out_what_a_deleted_fact_cites_before_the_limit(self, store: Store) -> None:
        """An event a deleted fact cites is erased content (the ledger deletes it with the
        fact; a row stored before it did stays valid): events and search_events leave it out
        in the statement, so ``limit`` counts only what comes back."""
        with store.write() as tx:
            append(tx, event("e1", "refund one"), event("e2", "refund two"), event("e3", "refund three"),
                   event("e4", "refund four"))
            tx.insert_facts([fact("f-gone", 2, ("e2",)), fact("f-kept", 3, ("e3",)), fact("f-old", 4, ("e4",))])
            tx.update_fact(T, S, "f-gone", status="deleted", purge=True)  # e2 stays valid: a legacy row
            tx.update_fact(T, S, "f-old", status="superseded", superseded_by="f-kept")

        def ids(found: list[Event]) -> list[str]:
            return [e.event_id for e in found]

        for indexed in (False, True):  # the fresh tail, then the index
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

    def test_the_fresh_tail_covers_what_the_index_covers(self, store: Store) -> None:
        """The index takes an event's text and actor: a search finds both before it does too."""
        billing = NewEvent(tenant_id=T, subject_id=S, event_id="e1", text="the refunds were approved",
                           actor="billing", occurred_at=NOW)
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

    # -- access: API keys and idempotency records ---------------------------------------------
    def test_api_keys_are_found_by_hash_across_tenants_and_listed_and_revoked_per_tenant(self, store: Store) -> None:
        def key(tenant: str, key_id: str, key_hash: str, at: datetime = NOW) -> ApiKey:
            return ApiKey(tenant_id=tenant, key_id=key_id, key_hash=key_hash, scopes=("read", "write"),
                          name=f"{tenant} {key_id}", created_at=at)

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
        record = IdempotencyRecord(tenant_id=T, idempotency_key="retry-1", request_hash="sha256:r", status=200,
                                   response='{"appended": 2}', created_at=NOW)
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

    # -- daily metrics -----------------------------------------------------------------------------
    def test_daily_metrics_are_kept_per_tenant_in_order_with_their_types(self, store: Store) -> None:
        plus2 = timezone(timedelta(hours=2))
        march13, march14 = date(2026, 3, 13), date(2026, 3, 14)

        def metric(run: str, day: date, name: str, value: float, *, dimension: dict[str, str | int] | None = None,
                   at: datetime = NOW, tenant: str = T) -> DailyMetric:
            return DailyMetric(tenant_id=tenant, run_id=run, day=day, metric=name, dimension=dimension or {},
                               value=value, recorded_at=at)

        # r-b is stored first but recorded at noon UTC; r-a at 11:30 UTC, given with a +02:00 offset.
        late = [metric("r-b", march14, "key_facts", 4), metric("r-b", march14, "key_facts", 3, dimension={"v": 2}),
                metric("r-b", march14, "key_fact_recall", 0.75)]
        early = [metric("r-a", march14, "key_facts", 5, at=datetime(2026, 3, 14, 13, 30, tzinfo=plus2))]
        before = [metric("r-0", march13, "key_facts", 1.5, at=NOW + timedelta(days=1))]
        with store.write() as tx:
            assert tx.save_daily_metrics(T, late) == 3
            assert tx.save_daily_metrics("other", [metric("r-x", march14, "key_facts", 9, tenant="other")]) == 1
            assert tx.save_daily_metrics(T, early + before) == 2
            assert tx.save_daily_metrics(T, []) == 0
        with store.read() as tx:
            got = tx.daily_metrics(T)  # day, recorded_at as an instant, run, metric, dimension (bytewise)
            assert [(m.run_id, m.day.isoformat(), m.metric, m.dimension, m.value) for m in got] == [
                ("r-0", "2026-03-13", "key_facts", {}, 1.5), ("r-a", "2026-03-14", "key_facts", {}, 5.0),
                ("r-b", "2026-03-14", "key_fact_recall", {}, 0.75), ("r-b", "2026-03-14", "key_facts", {"v": 2}, 3.0),
                ("r-b", "2026-03-14", "key_facts", {}, 4.0)]
            first = got[0]
            assert (type(first.day), type(first.value), first.recorded_at) == (date, float, NOW + timedelta(days=1))
            assert type(got[3].dimension["v"]) is int
            assert [m.run_id for m in tx.daily_metrics(T, since=march14)] == ["r-a", "r-b", "r-b", "r-b"]
            assert [m.run_id for m in tx.daily_metrics(T, until=march13)] == ["r-0"]
            assert [m.value for m in tx.daily_metrics(T, metrics=["key_fact_recall", "nope"])] == [0.75]
            assert [m.metric for m in tx.daily_metrics(T, run_id="r-a", since=march13, until=march14)] == ["key_facts"]
            assert [(m.tenant_id, m.value) for m in tx.daily_metrics("other")] == [("other", 9.0)]
            assert tx.daily_metrics("nobody") == []
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.save_daily_metrics(T, [metric("r-c", march14, "key_facts", 1)])
            tx.save_daily_metrics(T, [metric("r-b", march14, "key_facts", 7)])  # (tenant, run, metric, dimension) again
        with pytest.raises(InvalidInput), store.write() as tx:
            tx.save_daily_metrics(T, [metric("r-d", march14, "key_facts", 1), metric("r-d", march14, "claims", 1,
                                                                                      tenant="other")])
        with store.read() as tx:
            assert sorted({m.run_id for m in tx.daily_metrics(T)}) == ["r-0", "r-a", "r-b"]  # nothing of r-c, r-d
            assert len(tx.daily_metrics("other")) == 1

    # -- tenant settings and tiers ----------------------------------------------------------------
    def test_tenant_settings_are_one_record_per_tenant_replaced_whole(self, store: Store) -> None:
        with store.read() as tx:
            assert tx.tenant_settings(T) == {}
        with store.write() as tx:
            tx.save_tenant_settings(T, {"tiers": {"dormancy_s": 60}}, at=NOW)
            tx.save_tenant_settings("other", {"tiers": {"dormancy_s": 5}}, at=NOW)
        with store.write() as tx:
            tx.save_tenant_settings(T, {"tiers": {"dormancy_s": 120, "cold_after_s": 600}}, at=NOW)
        with store.read() as tx:
            assert tx.tenant_settings(T) == {"tiers": {"dormancy_s": 120, "cold_after_s": 600}}
            assert tx.tenant_settings("other") == {"tiers": {"dormancy_s": 5}}

    def test_set_tier_moves_named_events_to_hot_warm_or_cold(self, store: Store) -> None:
        with store.write() as tx:
            tx.lock_clock(T, S)
            tx.insert_events([(event(f"e{n}"), n, f"sha256:e{n}", NOW.isoformat()) for n in (1, 2, 3)],
                             recorded_at=NOW)
            assert tx.set_tier(T, S, through_seq=9, tier="warm", event_ids=["e1", "e3", "nope"]) == 2
            assert tx.set_tier(T, S, through_seq=2, tier="cold", event_ids=["e1", "e3"]) == 1
            assert tx.set_tier(T, S, through_seq=9, tier="cold", event_ids=[]) == 0
        with store.read() as tx:
            assert [e.tier for e in tx.events(T, S)] == ["cold", "hot", "warm"]

    def test_tier_reads_find_the_valid_events_of_a_tier_recorded_by_an_instant(self, store: Store) -> None:
        """What demotion may move: the subject's valid events of one tier recorded at or before
        an instant (given with any UTC offset), in seq order whatever order they were recorded
        in; and the oldest valid event of each tier."""
        day = timedelta(days=1)
        with store.write() as tx:
            append(tx, event("e1"), recorded_at=NOW - day)
            append(tx, event("e2"), event("e3"), recorded_at=NOW - 3 * day)
            append(tx, event("e4"), recorded_at=NOW)
            append(tx, event("e5"), recorded_at=NOW - 4 * day)
            append(tx, event("other", subject="u2"), recorded_at=NOW - 9 * day)
            tx.set_event_state(T, S, "e5", "revoked", purge=False)
            tx.set_tier(T, S, through_seq=9, tier="warm", event_ids=["e3"])
        with store.read() as tx:
            def ids(tier: Any, through: datetime) -> list[str]:
                return [e.event_id for e in tx.tier_events(T, S, tier, recorded_through=through)]

            assert ids("hot", NOW) == ["e1", "e2", "e4"]  # e5 is revoked, e3 warm
            assert ids("hot", (NOW - day).astimezone(timezone(timedelta(hours=2)))) == ["e1", "e2"]  # at it counts
            assert ids("hot", NOW - day - timedelta(microseconds=1)) == ["e2"]
            assert ids("warm", NOW) == ["e3"] and ids("cold", NOW) == []
            first = tx.tier_events(T, S, "hot", recorded_through=NOW)[0]
            assert (first.event_id, first.seq, first.tier, first.recorded_at) == ("e1", 1, "hot", NOW - day)
            assert tx.tier_oldest(T, S) == {"hot": NOW - 3 * day, "warm": NOW - 3 * day}
            assert tx.tier_events(T, "nobody", "hot", recorded_through=NOW) == [] and tx.tier_oldest(T, "nobody") == {}

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
