"""Per-subject serialisation through the public API, on every store: writers of one
subject queue behind each other (PostgreSQL: the clock row's lock, taken on first touch;
SQLite: the file's writer lock), whether they are threads or processes.

The store-level rules (first touch, ``lock_alias``) are in the shipped contract,
:mod:`lossgate.testing.store_contract`."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from lossgate import IdempotencyConflict, LifecycleError
from tests.support.threads import ev, fact, in_threads


def test_concurrent_appends_to_one_subject_get_gap_free_sequence_numbers(memory):
    writers, batches, size = 4, 10, 25

    def work(w: int) -> None:
        for b in range(batches):
            memory.append([ev(f"w{w}-b{b}-{i}") for i in range(size)])

    assert in_threads(writers, work) == []
    events = memory.events("acme", "u1")
    total = writers * batches * size
    assert [e.seq for e in events] == list(range(1, total + 1))
    assert len({e.event_id for e in events}) == total
    assert memory.admin.clock("acme", "u1").high_water == total


def test_a_writer_waits_for_the_subject_and_then_sees_the_committed_state(memory):
    """Per-subject serialisation: a fact asserted while its source is being revoked
    waits for the revocation to commit, then refuses the revoked source."""
    memory.append([ev("e1")])
    outcome: list[object] = []

    def assert_concurrently() -> None:
        try:
            outcome.append(memory.assert_fact(fact("f1", "e1")))
        except LifecycleError as exc:
            outcome.append(exc)

    with memory.transaction() as led:
        led.revoke_event("acme", "u1", "e1")
        t = threading.Thread(target=assert_concurrently)
        t.start()
        time.sleep(0.5)
        assert t.is_alive(), "the second writer should be waiting for the subject"
    t.join(timeout=30)
    assert len(outcome) == 1 and isinstance(outcome[0], LifecycleError)
    assert memory.facts("acme", "u1", statuses=None) == []


def test_a_retry_racing_the_original_append_is_a_duplicate(memory):
    """The ledger locks the clock before checking ids, so the retry waits and then finds the id."""
    memory.append([ev("e0")])  # the subject's clock exists
    outcome: list[Any] = []

    def retry() -> None:
        try:
            outcome.append(memory.append([ev("e1")]))
        except IdempotencyConflict as exc:
            outcome.append(exc)

    with memory.transaction() as led:
        led.append([ev("e1")])
        t = threading.Thread(target=retry)
        t.start()
        time.sleep(0.5)  # the retry waits for the subject (its clock, or SQLite's writer lock)
    t.join(timeout=30)
    (result,) = outcome
    if isinstance(result, BaseException):
        raise result
    assert result.duplicates == ("e1",) and result.appended == ()


@pytest.mark.slow
def test_concurrent_appends_from_processes_get_gap_free_sequence_numbers(store_url, memory):
    script = (
        "import sys, lossgate; from datetime import datetime, timezone; from lossgate import NewEvent\n"
        "m = lossgate.open(sys.argv[1], migrate=False)\n"
        "for b in range(10):\n"
        "    m.append([NewEvent(tenant_id='acme', subject_id='u1', event_id=f'p{sys.argv[2]}-{b}-{i}',\n"
        "              occurred_at=datetime.now(timezone.utc)) for i in range(20)])\n"
        "m.close()\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, store_url, str(p)], stderr=subprocess.PIPE, text=True)
        for p in range(4)
    ]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errs
    assert [e.seq for e in memory.events("acme", "u1")] == list(range(1, 801))
