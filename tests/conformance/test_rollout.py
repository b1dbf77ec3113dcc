"""Shadow rollout and review (lossgate.policy.rollout), on both stores.

A shadow configuration publishes only to the shadow alias, which recall never reads; switching one tenant's live configuration
publishes with it through the compare-and-swap and leaves other tenants untouched; with
review, a gated summary waits for a person, who approves it (the same switch) or refuses
it (kept, never compressor input).
"""

from __future__ import annotations

import pytest

from lossgate import ConfigError, InvalidInput
from lossgate.testing.compressors import RecordingCompressor
from tests.support.world import T, U, chatter, seed_world

TERSE = "lossgate.testing.compressors:TerseCompressor"
FLIP = "lossgate.testing.compressors:FlipBool"
OTHER = "globex"


def test_a_shadow_configuration_publishes_only_to_the_shadow_alias(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=TERSE)

    live = memory.consolidate(T, U)

    assert live.status == "published" and live.lane == "live"
    alias = memory.admin.alias(T, U)
    assert alias.artifact_id == live.artifact_id
    (shadow,) = [a for a in memory.admin.attempts(T, U) if a.lane == "shadow"]
    assert (
        shadow.status == "gated" and shadow.compressor == "terse@1" and shadow.reason == "published to the shadow alias"
    )
    art = memory.admin.artifact(T, U, shadow.artifact_id)
    assert art.state == "shadow" and art.manifest.compressor == "terse"
    with memory.store.read() as tx:
        assert tx.alias(T, U, lane="shadow").artifact_id == art.artifact_id
    chatter(memory, "tail", 2)
    recorder = RecordingCompressor()
    assert memory.consolidate(T, U, compressor=recorder).status == "published"
    assert recorder.requests[-1].parent is not None
    assert recorder.requests[-1].parent == memory.admin.artifact(T, U, live.artifact_id).body  # live, never the shadow
    shadows = [a for a in memory.admin.artifacts(T, U) if a.manifest.compressor == "terse"]
    assert len(shadows) == 2 and sorted(a.state for a in shadows) == ["abandoned", "shadow"]  # the newest is kept
    assert all(a.manifest.path == "direct" for a in shadows)  # from the valid inputs, never from the live summary

    (row,) = memory.admin.shadow_report(T)
    assert (row.subject_id, row.live_compressor, row.shadow_compressor) == (U, "deterministic@1", "terse@1")
    assert row.live_tokens and row.shadow_tokens and row.shadow_tokens <= row.live_tokens


def test_a_failing_shadow_queues_nothing_and_the_live_result_stands(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP)
    live = memory.consolidate(T, U)
    assert live.status == "published"
    (shadow,) = [a for a in memory.admin.attempts(T, U) if a.lane == "shadow"]
    assert shadow.status == "rejected" and not shadow.needs_review
    assert [j for j in memory.admin.jobs(T, U) if j.status == "pending"] == []  # no retry for a shadow
    assert memory.recall(T, U).mode == "summary"


def test_switching_one_tenant_live_publishes_with_it_and_leaves_the_others(memory):
    seed_world(memory)
    seed_world(memory, tenant=OTHER, p="g-")
    memory.admin.set_rollout(T, live=TERSE)

    mine, theirs = memory.consolidate(T, U), memory.consolidate(OTHER, U)

    assert mine.status == theirs.status == "published"
    assert memory.admin.artifact(T, U, mine.artifact_id).manifest.compressor == "terse"
    assert memory.admin.artifact(OTHER, U, theirs.artifact_id).manifest.compressor == "deterministic"
    assert memory.admin.rollout(OTHER).live is None
    fallback = memory.admin.consolidator(compressor=RecordingCompressor())
    chatter(memory, "tail", 1)
    memory.admin.run_job(T, U, fallback=fallback)  # a worker: the tenant's live choice wins over its own
    assert fallback.compressor.requests == []  # type: ignore[attr-defined]
    assert memory.admin.artifact(T, U, memory.admin.alias(T, U).artifact_id).manifest.compressor == "terse"


def test_review_holds_a_gated_summary_until_a_person_approves_it(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, review=True)

    waiting = memory.consolidate(T, U)

    assert waiting.status == "gated" and waiting.reason == "awaiting review"
    assert memory.admin.alias(T, U).artifact_id is None and memory.recall(T, U).mode == "raw_fallback"
    assert memory.admin.artifact(T, U, waiting.artifact_id).state == "review"

    approved = memory.admin.approve(T, U, waiting.artifact_id)

    assert approved.status == "published" and memory.admin.alias(T, U).artifact_id == waiting.artifact_id
    assert memory.recall(T, U).mode == "summary"
    with pytest.raises(InvalidInput, match="not waiting for review"):
        memory.admin.approve(T, U, waiting.artifact_id)


def test_an_approval_the_switch_refuses_publishes_nothing(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, review=True)
    waiting = memory.consolidate(T, U)
    memory.revoke_event(T, U, "e-topic")  # the epoch moved since it was built
    approved = memory.admin.approve(T, U, waiting.artifact_id)
    assert approved.status == "conflict" and "input_epoch moved" in approved.reason
    assert memory.admin.alias(T, U).artifact_id is None
    assert memory.admin.artifact(T, U, waiting.artifact_id).state == "abandoned"


def test_a_refused_summary_is_kept_and_never_compressor_input(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, review=True)
    waiting = memory.consolidate(T, U)
    memory.admin.refuse(T, U, waiting.artifact_id, reason="misreports the refund")
    assert memory.admin.artifact(T, U, waiting.artifact_id).state == "refused"

    memory.admin.set_rollout(T, review=False)
    chatter(memory, "tail", 1)
    recorder = RecordingCompressor()
    assert memory.consolidate(T, U, compressor=recorder).status == "published"
    assert recorder.requests[-1].parent is None  # never summarised again
    assert memory.admin.artifact(T, U, waiting.artifact_id).state == "refused"


def test_a_bad_rollout_is_refused_before_anything_changes(memory):
    with pytest.raises(InvalidInput):
        memory.admin.set_rollout(T, live="not a spec")
    with pytest.raises(ConfigError):
        memory.admin.set_rollout(T, shadow="no.such.module:Thing")
    with pytest.raises(ConfigError):
        memory.admin.set_rollout(T, live="chat")  # no model configured where this memory runs
    assert memory.admin.rollout(T).live is None and memory.admin.rollout(T).shadow is None


def test_the_cli_sets_a_rollout_reports_the_shadow_and_reviews(memory, store_url):
    from typer.testing import CliRunner

    from lossgate.cli import app

    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1", "LOSSGATE_DB": None})

    def run(*args: str):
        return runner.invoke(app, ["--db", store_url, *args])

    seed_world(memory)
    assert run("rollout", "set", "-t", T, "--shadow", TERSE, "--review").exit_code == 0
    assert run("rollout", "set", "-t", T, "--live", "nope").exit_code == 2
    assert run("consolidate", "-t", T, "-s", U).exit_code == 1  # waiting for review: nothing published
    shown = run("review", "list", "-t", T, "-s", U, "--json")
    (waiting,) = [line for line in shown.stdout.splitlines() if line.startswith("{")]
    artifact_id = __import__("json").loads(waiting)["artifact_id"]
    report = run("shadow", "report", "-t", T)
    assert report.exit_code == 0 and "terse@1" in report.stdout
    assert run("review", "approve", artifact_id, "-t", T, "-s", U).exit_code == 0
    assert memory.admin.alias(T, U).artifact_id == artifact_id
    assert run("review", "refuse", artifact_id, "-t", T, "-s", U).exit_code == 2  # no longer waiting


# -- what a hostile review found (each fixed) ---------------------------------------------


def _tree_config():
    from lossgate.consolidate.hierarchy import HierarchyConfig
    from lossgate.consolidate.pipeline import ConsolidationConfig

    return ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day"))


def test_a_newer_waiting_summary_replaces_the_older_and_refusing_spares_what_others_stand_on(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, review=True)
    first = memory.consolidate(T, U, config=_tree_config())
    chatter(memory, "tail", 1)
    second = memory.consolidate(T, U, config=_tree_config())
    assert [a.artifact_id for a in memory.admin.artifacts(T, U, states=["review"])] == [second.artifact_id]
    assert memory.admin.artifact(T, U, first.artifact_id).state == "abandoned"  # one waits, not a pile

    with pytest.raises(InvalidInput):
        memory.admin.refuse(T, U, first.artifact_id)  # no longer waiting
    approved = memory.admin.approve(T, U, second.artifact_id)
    assert approved.status == "published"


def test_an_approval_the_switch_refuses_queues_a_rebuild(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, review=True)
    waiting = memory.consolidate(T, U)
    memory.revoke_event(T, U, "e-topic")
    for job in memory.admin.jobs(T, U):  # the revoke queued one: take it away, the approval must queue its own
        with memory.store.write() as tx:
            tx.cancel_pending_jobs(T, U, at=job.run_after, reason="test")
    assert memory.admin.approve(T, U, waiting.artifact_id).status == "conflict"
    assert [j for j in memory.admin.jobs(T, U) if j.status == "pending"]


def test_recovery_is_the_operators_review(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, review=True)
    assert memory.admin.recover(T, U).status == "published"
    assert memory.recall(T, U).mode == "summary"


def test_a_shadow_tree_reuses_its_own_parts(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=TERSE)
    memory.consolidate(T, U, config=_tree_config())
    before = {a.artifact_id for a in memory.admin.artifacts(T, U)}
    chatter(memory, "tail", 1)
    memory.consolidate(T, U, config=_tree_config())
    built = [a for a in memory.admin.artifacts(T, U) if a.artifact_id not in before]
    shadow_built = [a for a in built if a.manifest.compressor == "terse" or a.state == "shadow"]
    assert len(shadow_built) <= 3  # the changed day and the root, not every period again


def test_a_spec_naming_a_function_is_never_called(memory):
    with pytest.raises(ConfigError, match="not a class"):
        memory.admin.set_rollout(T, live="sys:exit")
    assert memory.admin.rollout(T).live is None
