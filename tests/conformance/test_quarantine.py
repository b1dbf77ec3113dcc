"""Quarantine and forward recovery (lossgate.policy.quarantine), on both stores.

A quarantined summary leaves recall at once (raw fallback) without moving coverage back;
recovery publishes, through the compare-and-swap, a summary built from the valid inputs
with a chosen configuration, covering at least what the alias covered; lineage and
attempts keep every earlier artifact, and a quarantined artifact never feeds a compressor.
"""

from __future__ import annotations

import pytest

from lossgate import InvalidInput, NotFound
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.testing.compressors import RecordingCompressor
from tests.support.world import T, U, chatter, published, seed_world


def test_a_quarantined_summary_leaves_recall_at_once_and_coverage_stays(memory):
    seed_world(memory)
    bad = published(memory)
    covers = memory.admin.alias(T, U).covers_through

    done = memory.admin.quarantine(T, U, bad.artifact_id, reason="the narrative misreports the refund")

    assert done.artifact_id == bad.artifact_id and not done.already
    assert memory.recall(T, U).mode == "raw_fallback"  # at once
    alias = memory.admin.alias(T, U)
    assert (alias.artifact_id, alias.covers_through) == (bad.artifact_id, covers)  # nothing moved backwards
    art = memory.admin.artifact(T, U, bad.artifact_id)
    assert art.state == "quarantined" and "misreports" in art.state_reason
    (line,) = [e for e in memory.admin.log(T, U) if e.op == "quarantine"]
    assert line.target_id == bad.artifact_id
    assert memory.admin.quarantine(T, U, bad.artifact_id).already  # again: nothing changes


def test_recovery_publishes_forward_and_keeps_every_earlier_artifact(memory):
    seed_world(memory)
    bad = published(memory)
    chatter(memory, "more", 3)
    memory.admin.quarantine(T, U, bad.artifact_id)
    before = {a.artifact_id for a in memory.admin.artifacts(T, U)}
    attempts = len(memory.admin.attempts(T, U))
    recorder = RecordingCompressor()

    recovered = memory.admin.recover(T, U, compressor=recorder)

    assert recovered.status == "published"
    alias = memory.admin.alias(T, U)
    assert alias.artifact_id == recovered.artifact_id and alias.covers_through >= memory.admin.clock(T, U).high_water
    assert memory.recall(T, U).mode == "summary"
    new = memory.admin.artifact(T, U, recovered.artifact_id)
    assert new.manifest.path == "direct" and bad.artifact_id not in {r.id for r in new.manifest.inputs}
    (request,) = recorder.requests
    assert request.parent is None  # the quarantined summary never feeds a compressor
    assert before <= {a.artifact_id for a in memory.admin.artifacts(T, U)}  # every earlier artifact kept
    assert memory.admin.artifact(T, U, bad.artifact_id).state == "quarantined"
    assert len(memory.admin.attempts(T, U)) == attempts + 1


def test_a_quarantined_summary_is_never_the_parent_of_a_later_consolidation(memory):
    seed_world(memory)
    bad = published(memory)
    memory.admin.quarantine(T, U, bad.artifact_id)
    chatter(memory, "tail", 2)
    recorder = RecordingCompressor()
    assert memory.consolidate(T, U, compressor=recorder).status == "published"
    assert recorder.requests[-1].parent is None


def test_quarantining_a_part_makes_its_root_stale_and_recovery_builds_every_part_again(memory):
    seed_world(memory)
    tree = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day"))
    published(memory, hierarchy=tree.hierarchy)
    root = memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)
    part = root.manifest.children[0]

    done = memory.admin.quarantine(T, U, part, reason="bad digest")

    assert done.stale_roots == (root.artifact_id,) and memory.recall(T, U).mode == "raw_fallback"
    recovered = memory.admin.recover(T, U, config=tree)
    assert recovered.status == "published"
    new_root = memory.admin.artifact(T, U, recovered.artifact_id)
    assert not set(new_root.manifest.children) & set(root.manifest.children)  # from scratch
    assert memory.admin.artifact(T, U, part).state == "quarantined"


def test_only_a_published_artifact_can_be_quarantined(memory):
    seed_world(memory)
    with pytest.raises(NotFound):
        memory.admin.quarantine(T, U, "art-nope")
    first = published(memory)
    chatter(memory, "tail", 1)
    published(memory)
    with pytest.raises(InvalidInput, match="retired"):
        memory.admin.quarantine(T, U, first.artifact_id)
    with pytest.raises(NotFound):
        memory.admin.quarantine("globex", U, memory.admin.alias(T, U).artifact_id)  # another tenant's id is not found


def test_the_cli_quarantines_and_recovers(memory, store_url):
    from typer.testing import CliRunner

    from lossgate.cli import app

    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1", "LOSSGATE_DB": None})

    def run(*args: str):
        return runner.invoke(app, ["--db", store_url, *args])

    seed_world(memory)
    bad = published(memory)
    assert run("quarantine", "nope", "-t", T, "-s", U).exit_code == 2
    done = run("quarantine", bad.artifact_id, "-t", T, "-s", U, "--reason", "wrong")
    assert done.exit_code == 0 and "falls back to raw memory" in done.output
    assert memory.recall(T, U).mode == "raw_fallback"
    again = run("recover", "-t", T, "-s", U, "--json")
    assert again.exit_code == 0, again.output
    assert memory.recall(T, U).mode == "summary"


def test_quarantining_a_root_takes_its_parts_with_it_so_no_later_job_reuses_them(memory):
    seed_world(memory)
    tree = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day"))
    published(memory, hierarchy=tree.hierarchy)
    root = memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id)
    done = memory.admin.quarantine(T, U, root.artifact_id, reason="bad digests")
    assert set(done.parts) == set(root.manifest.children)
    chatter(memory, "tail", 1)
    again = published(memory)  # an ordinary job, not a recovery
    new_root = memory.admin.artifact(T, U, again.artifact_id)
    assert not set(new_root.manifest.children) & set(root.manifest.children)
