"""A consolidation holds the garbage collector off while it runs, and leaves it as it found it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import lossgate
from bench.scale_data import fill
from lossgate.runtime.collection import collection_held
from tests.support import REGISTRY_PATH


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_a_consolidation_runs_with_collection_off_and_turns_it_back_on(tmp_path: Path, monkeypatch) -> None:
    memory = lossgate.open(f"sqlite:///{tmp_path / 'gc.db'}")
    memory.admin.load_predicates(str(REGISTRY_PATH))
    fill(memory, "t", "s", 0, 200)
    seen: list[bool] = []
    from lossgate.consolidate import pipeline

    prepare = pipeline.Consolidator.prepare

    def watched(self, tenant_id, subject_id):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return prepare(self, tenant_id, subject_id)

    monkeypatch.setattr(pipeline.Consolidator, "prepare", watched)
    assert memory.consolidate("t", "s").status == "published"
    assert seen == [False] and gc.isenabled()
    memory.close()


def test_collection_comes_back_only_when_the_last_job_ends_and_only_if_it_was_on() -> None:
    entered, leave = threading.Event(), threading.Event()

    def job() -> None:
        with collection_held():
            entered.set()
            leave.wait(5)

    other = threading.Thread(target=job)
    other.start()
    entered.wait(5)
    with collection_held():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other job still runs
    leave.set()
    other.join()
    assert gc.isenabled()

    gc.disable()  # a process that turned it off keeps it off
    with collection_held():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_job_turns_collection_back_on() -> None:
    with pytest.raises(RuntimeError), collection_held():
        raise RuntimeError("boom")
    assert gc.isenabled()
