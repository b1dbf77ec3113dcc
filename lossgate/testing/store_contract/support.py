"""What every tier's tests share: the tenant and subject they write, the builders of the
records they store, the signature check, threads, and :class:`Contract`, the base of every
tier's test class (it asks for the ``store`` fixture)."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from lossgate.model.derived_records import (
    Alias,
    Artifact,
    Attempt,
    GuardResult,
    InputRef,
    Manifest,
    RecallRecord,
    Refusal,
    ResponseRecord,
)
from lossgate.model.records import ArtifactBody, Clock, Conflict, Fact, FactStatus, NewEvent, Proposal
from lossgate.store.protocol import TIERS, ReadTx, Store, WriteTx, primitives, touch_of

__all__ = ["Contract", "check_signatures", "T", "S", "NOW", "Handoff"]

T, S = "acme", "u1"
NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
HOLD = 0.15  # seconds a transaction goes on holding its lock once its rival is under way


class Handoff:
    """Two writers of one subject: the holder says when it holds its lock, the rival when it
    starts its own transaction. The holder then holds ``HOLD`` seconds more, ample for a rival
    that nothing keeps waiting to commit, so a lock that does not hold shows."""

    def __init__(self) -> None:
        self._held, self._started = threading.Event(), threading.Event()

    def hold(self) -> None:
        """In the holder's transaction, once it holds what the rival must wait for."""
        self._held.set()
        assert self._started.wait(30), "the rival never started"
        time.sleep(HOLD)

    def rival_starts(self) -> None:
        """In the rival, right before it opens its transaction."""
        assert self._held.wait(30), "the holder never held"
        self._started.set()


# -- the signature check --------------------------------------------------------------------


def _shape(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def check_signatures(store: Store, tiers: tuple[str, ...] | None = None) -> list[str]:
    """What ``store`` and its transactions lack of the protocol, or implement with other
    parameters (names, kinds, defaults): one line each; empty when nothing is wrong. With
    ``tiers`` (names of :data:`~lossgate.store.protocol.TIERS`), only those tiers' primitives
    are compared, and not the store's own methods: a store built tier by tier checks what it has."""
    problems: list[str] = []

    def compare(protocol: type, impl: type) -> None:
        for name, member in primitives(protocol).items():
            got = getattr(impl, name, None)
            if got is None:
                problems.append(f"{impl.__name__} lacks {name}")
            elif _shape(got) != _shape(member):
                problems.append(f"{impl.__name__}.{name}{inspect.signature(got)} != {inspect.signature(member)}")

    halves = [TIERS[t] for t in tiers] if tiers is not None else [(ReadTx, WriteTx)]
    if tiers is None:
        compare(Store, type(store))
    with store.read() as rtx:
        for read, _ in halves:
            compare(read, type(rtx))
    with store.write() as wtx:
        for _, write in halves:
            compare(write, type(wtx))
    return problems


# -- builders ----------------------------------------------------------------------------


def event(event_id: str, text: str = "", *, subject: str = S, tenant: str = T) -> NewEvent:
    return NewEvent(
        tenant_id=tenant, subject_id=subject, event_id=event_id, text=text or f"text of {event_id}", occurred_at=NOW
    )


def append(tx: WriteTx, *events: NewEvent, recorded_at: datetime = NOW) -> Clock:
    """Append ``events`` (all of one subject) after the subject's high water, as the ledger does."""
    clock = tx.lock_clock(events[0].tenant_id, events[0].subject_id)
    items = [(e, clock.high_water + i, f"sha256:{e.event_id}", NOW.isoformat()) for i, e in enumerate(events, 1)]
    tx.insert_events(items, recorded_at=recorded_at)
    clock = clock.model_copy(update={"high_water": clock.high_water + len(events)})
    tx.save_clock(clock)
    return clock


def fact(
    fact_id: str,
    seq: int,
    sources: tuple[str, ...],
    *,
    value: int = 5,
    status: FactStatus = "active",
    criticality: str = "important",
    predicate: str = "subscription.seats",
    tenant: str = T,
    subject: str = S,
) -> Fact:
    return Fact(
        tenant_id=tenant,
        subject_id=subject,
        fact_id=fact_id,
        seq=seq,
        predicate=predicate,
        registry_version=1,
        value_type="int",
        value=value,
        source_event_ids=sources,
        status=status,
        recorded_at=NOW,
        content_hash=f"sha256:{fact_id}",
        criticality=criticality,  # type: ignore[arg-type]
    )


def artifact(artifact_id: str, parent: Alias, *, created_at: datetime = NOW) -> Artifact:
    """An artifact of ``parent``'s subject."""
    T, S = parent.tenant_id, parent.subject_id
    manifest = Manifest(
        artifact_id=artifact_id,
        tenant_id=T,
        subject_id=S,
        new_covers_through=3,
        input_epoch=0,
        expected_alias=parent.expected(),
        inputs=(InputRef(kind="event", id="e1", content_hash="sha256:e1", seq=1),),
        input_root="sha256:r",
        path="direct",
        selector_version="1",
        prompt_version="1",
        compressor="det",
        compressor_version="1",
        extractor_version="1",
        schema_version=2,
        registry_version=1,
        attempt=1,
        timings={"gate": 0.25, "huge": 1e20},
        dropped=("e1",),
    )
    return Artifact(
        artifact_id=artifact_id,
        tenant_id=T,
        subject_id=S,
        state="candidate",
        body=ArtifactBody(tenant_id=T, subject_id=S, summary=f"summary {artifact_id}"),
        manifest=manifest,
        gate={"outcome": "clean", "score": 1.0},
        created_at=created_at,
    )


def recall_record(
    recall_id: str, *, at: datetime = NOW, candidates: tuple[str, ...] = ("e1",), tenant: str = T, subject: str = S
) -> RecallRecord:
    T, S = tenant, subject
    return RecallRecord(
        recall_id=recall_id,
        tenant_id=T,
        subject_id=S,
        at=at,
        query="refund",
        filters={"k": 1.5},
        mode="summary",
        candidate_ids=candidates,
        selected_ids=candidates,
        alias=Alias(tenant_id=T, subject_id=S),
        clock=Clock(tenant_id=T, subject_id=S),
    )


def refusal(*, fact_id: str | None = None, sources: tuple[str, ...] = (), conflict_id: str | None = None) -> Refusal:
    return Refusal(
        rule="no_peanuts",
        kind="in_conflict" if conflict_id else "excludes",
        field="items[0].name",
        value="satay",
        detail="items[0].name names 'peanuts'",
        fact_id=fact_id,
        predicate="food.peanuts_allowed",
        fact_value=False,
        qualifiers={"basis": "allergy"},
        source_event_ids=sources,
        conflict_id=conflict_id,
    )


def guard_result(
    guard_id: str,
    *,
    at: datetime = NOW,
    recall_id: str | None = None,
    refusals: tuple[Refusal, ...] = (),
    tenant: str = T,
    subject: str = S,
) -> GuardResult:
    return GuardResult(
        guard_id=guard_id,
        tenant_id=tenant,
        subject_id=subject,
        at=at,
        action={"items": [{"name": "satay", "qty": 2, "price": 9.5}]},
        action_sha256="sha256:act",
        allowed=not refusals,
        refusals=refusals,
        rules=("no_peanuts",),
        recall_id=recall_id,
        registry_version=1,
    )


def response_record(
    response_id: str,
    recall_id: str,
    *,
    at: datetime = NOW,
    guard_id: str | None = None,
    tenant: str = T,
    subject: str = S,
) -> ResponseRecord:
    return ResponseRecord(
        response_id=response_id,
        tenant_id=tenant,
        subject_id=subject,
        at=at,
        recall_id=recall_id,
        guard_id=guard_id,
        answer="two satay, please",
        answer_sha256="sha256:ans",
    )


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
    handoff, seen = Handoff(), []

    def first() -> None:
        with store.write() as tx:
            touch(tx)
            handoff.hold()
            _bump_epoch(tx)

    def second() -> None:
        handoff.rival_starts()
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
    return Attempt(
        attempt_id=attempt_id,
        tenant_id=tenant,
        subject_id=subject,
        number=number,
        status=status,  # type: ignore[arg-type]
        started_at=NOW,
        high_water=1,
        input_epoch=0,
        expected_alias=Alias(tenant_id=tenant, subject_id=subject).expected(),
        selected_ids=("e1",),
        input_root="sha256:r",
        compressor="det",
    )


def _proposal(proposal_id: str, source: str, *, tenant: str = T, subject: str = S) -> Proposal:
    return Proposal(
        proposal_id=proposal_id,
        tenant_id=tenant,
        subject_id=subject,
        predicate="subscription.seats",
        value=5,
        source_event_ids=(source,),
        authority="user",
        modality="asserted",
        extractor="test",
        status="review",
        created_at=NOW,
    )


def _conflict(conflict_id: str, a: str, b: str, *, tenant: str = T, subject: str = S) -> Conflict:
    return Conflict(
        tenant_id=tenant,
        subject_id=subject,
        conflict_id=conflict_id,
        predicate="subscription.seats",
        fact_ids=(a, b),
        detected_at=NOW,
    )


def _ids(items: Any, attr: str) -> list[str]:
    return [getattr(x, attr) for x in items]


class Contract:
    """The base of every tier's tests: a subclass provides the ``store`` fixture, an empty,
    migrated store that may also claim jobs (on PostgreSQL, opened with ``role="worker"``)."""

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        raise NotImplementedError("a contract subclass provides a `store` fixture: an empty, migrated store")
