"""Policies with one home each, on every store: the registry is read only by the
transactions that need it, deleted text leaves this process's caches wherever the
deletion commits, the must-preserve set is built once per consolidation, and the
queue's rules (lossgate.lineage.queue) say what a worker does with a job."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from lossgate import NewEvent, NewFact
from lossgate.api.ingest import ingest_lines
from lossgate.errors import InvalidInput, StoreBusy, StoreError
from lossgate.gate.fence.text import read_source
from lossgate.lineage import queue
from lossgate.model.derived_records import Attempt, ExpectedAlias
from lossgate.model.registry import RegistryCache

T, U = "acme", "user-17"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
SECRET = "My passport number is X1234567, keep it on file."


def ev(event_id: str, text: str) -> NewEvent:
    return NewEvent(tenant_id=T, subject_id=U, event_id=event_id, text=text, occurred_at=AT)


def fact(fact_id: str, predicate: str, value: object, source: str) -> NewFact:
    return NewFact(
        tenant_id=T, subject_id=U, fact_id=fact_id, predicate=predicate, value=value, source_event_ids=(source,)
    )


class CountingRegistries(RegistryCache):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def current(self, tx):  # type: ignore[no-untyped-def]
        self.reads += 1
        return super().current(tx)


def test_the_registry_is_read_only_by_a_transaction_that_needs_it(memory):
    memory.registries = spy = CountingRegistries()
    memory.append([ev("e-1", "hello"), ev("e-2", "Please show every time in UTC-05:00.")])
    assert spy.reads == 0  # an append checks no fact against a predicate
    with memory.transaction() as led:
        led.append([ev("e-3", "more")])
        led.assert_fact(fact("f-tz", "timezone", "UTC-05:00", "e-2"))
        led.assert_fact(fact("f-tz2", "timezone", "UTC-05:00", "e-2"))
    assert spy.reads == 1  # once for the transaction, however many facts it asserts
    memory.consolidate(T, U)
    assert spy.reads == 2


DELETIONS = {
    "memory.delete_event": lambda memory: memory.delete_event(T, U, "e-secret", reason="asked"),
    "memory.transaction": lambda memory: _in_transaction(memory),
    "lossgate ingest": lambda memory: ingest_lines(
        memory,
        [
            json.dumps(
                {"type": "delete_event", "tenant_id": T, "subject_id": U, "event_id": "e-secret", "reason": "asked"}
            )
        ],
    ),
    "memory.delete_fact": lambda memory: memory.delete_fact(T, U, "f-tz", reason="asked"),
}


def _in_transaction(memory) -> None:  # type: ignore[no-untyped-def]
    with memory.transaction() as led:
        led.append([ev("e-later", "another line")])
        led.delete_event(T, U, "e-secret", reason="asked")


@pytest.mark.parametrize("path", sorted(DELETIONS))
def test_a_deletion_empties_the_caches_of_text_wherever_it_commits(memory, path):
    """The gate's caches hold what they read from event texts; a deletion through any path
    (a Memory method, Memory.transaction(), lossgate ingest) empties them once it commits."""
    memory.append([ev("e-secret", SECRET), ev("e-tz", "Please show every time in UTC-05:00.")])
    memory.assert_fact(fact("f-tz", "timezone", "UTC-05:00", "e-secret"))
    read_source(SECRET)
    memory.append([ev("e-chat", "the garden looks lovely")])
    memory.assert_fact(fact("f-tz-2", "timezone", "UTC-05:00", "e-tz"))
    assert read_source.cache_info().currsize > 0  # no deletion yet: nothing was forgotten
    DELETIONS[path](memory)
    assert read_source.cache_info().currsize == 0


def test_every_cache_of_text_is_registered():
    from lossgate.gate.fence import clear_sentence_cache
    from lossgate.gate.sources import clear_atom_cache
    from lossgate.recall import read as recall
    from lossgate.runtime import caches
    from lossgate.semantic.ranking import clear_vector_caches

    wanted = {clear_atom_cache, clear_sentence_cache, clear_vector_caches, recall._forget_counted_text}
    assert wanted <= set(caches._clears)


def test_a_deletion_that_rolls_back_forgets_nothing_and_an_error_still_propagates(memory):
    memory.append([ev("e-secret", SECRET)])
    read_source(SECRET)
    with pytest.raises(InvalidInput, match="rolled back on purpose"), memory.transaction() as led:
        led.delete_event(T, U, "e-secret", reason="asked")
        raise InvalidInput("rolled back on purpose")
    assert read_source.cache_info().currsize > 0
    assert memory.events(T, U)[0].text == SECRET


def test_the_must_preserve_set_is_built_once_per_consolidation(memory, monkeypatch):
    from lossgate.consolidate import pipeline
    from lossgate.gate import engine

    built = []

    def counting(snapshot, registry):  # type: ignore[no-untyped-def]
        built.append(snapshot.subject_id)
        return real(snapshot, registry)

    real = pipeline.build_must_preserve
    monkeypatch.setattr(pipeline, "build_must_preserve", counting)
    monkeypatch.setattr(engine, "build_must_preserve", counting)
    memory.append([ev("e-a", "I am allergic to peanuts, not merely avoiding them.")])
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=U,
            fact_id="f-a",
            predicate="food.peanuts_allowed",
            value=False,
            qualifiers={"basis": "allergy"},
            source_event_ids=("e-a",),
        )
    )
    assert memory.consolidate(T, U).status == "published"
    assert built == [U]


# -- the queue's rules, without a store --------------------------------------------------------


def _attempt(number: int, status: str, **kw: object) -> Attempt:
    return Attempt(
        attempt_id=f"att-{number}",
        tenant_id=T,
        subject_id=U,
        number=number,
        status=status,  # type: ignore[arg-type]
        started_at=AT,
        high_water=1,
        input_epoch=0,
        expected_alias=ExpectedAlias(parent_artifact_id=None, source_epoch=0, covers_through=0),
        selected_ids=(),
        input_root="sha256:0",
        compressor="deterministic@1",
        **kw,
    )


def test_how_a_worker_releases_a_job():
    assert queue.job_status(_attempt(1, "published")) == "done"
    assert queue.job_status(_attempt(1, "rejected")) == "done"  # its retry is queued on its own
    assert queue.job_status(_attempt(1, "error", needs_review=True)) == "review"
    assert queue.job_status(StoreBusy("locked")) == "pending"  # the infrastructure failed
    assert queue.job_status(StoreError("gone")) == "pending"
    assert queue.job_status(InvalidInput("no predicate registry is loaded")) == "review"


def test_retries_back_off_per_failure_in_a_row_since_the_last_publication():
    history = [
        _attempt(1, "rejected", violations=("f-1:missing",)),
        _attempt(2, "published"),
        _attempt(3, "rejected", violations=("f-2:value_changed",)),
        _attempt(4, "conflict"),
        _attempt(5, "error"),
    ]
    assert queue.consecutive_failures(history) == (2, ("f-2:value_changed",))
    assert queue.consecutive_failures(history[:2]) == (0, ())
    delays = [queue.retry_delay(n, base_s=30, max_s=100) for n in (1, 2, 3, 4)]
    assert delays == [30, 60, 100, 100]
    assert timedelta(seconds=queue.retry_delay(0, base_s=30, max_s=3600)) == timedelta(seconds=30)


def test_a_ledger_over_a_bare_transaction_forgets_what_it_erases(memory):
    from lossgate.ledger.lifecycle import Ledger

    memory.append([ev("e-secret", SECRET)])
    read_source(SECRET)
    with memory.store.write() as tx:
        Ledger(tx).delete_event(T, U, "e-secret", reason="asked")
    assert read_source.cache_info().currsize == 0


def test_text_read_while_a_deletion_commits_is_forgotten_when_the_consolidation_ends(memory):
    """A deletion commits while a consolidation of the subject compresses: the gate then reads
    (and caches) the text the deletion purged; the consolidation sees the subject's epoch move
    and forgets it."""
    from lossgate.consolidate.pipeline import Hooks
    from lossgate.runtime import caches

    memory.append([ev("e-secret", SECRET)])

    def delete_now(_selection) -> None:  # type: ignore[no-untyped-def]
        memory.delete_event(T, U, "e-secret", reason="asked")

    memory.admin.consolidator(hooks=Hooks(before_compress=delete_now)).run(T, U)
    assert not any(SECRET in text for text in _cached_atom_texts())  # the prose diff read it
    assert read_source.cache_info().currsize == 0 and (T, U) in caches._epochs


def _cached_atom_texts() -> list[str]:
    from lossgate.gate import sources

    return [key[0] for key in sources._cache]
