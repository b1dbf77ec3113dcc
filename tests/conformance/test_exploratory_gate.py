"""The shadow lane's exploratory gate and the shadow alias (lossgate.policy.rollout,
lossgate.publication.switch.shadow_switch), on both stores.

A tenant tries a new compressor or registry in shadow. Under the exploratory gate, every
shadow summary is published to the subject's shadow alias whatever the gate found, with
each violation recorded on its attempt; recall never reads that alias. The alias is
fenced like the live one: an older or outdated shadow job never replaces a newer
shadow summary, and revoking or deleting an input makes it stale (deleted text purged).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from lossgate import ConfigError, InvalidInput, NewEvent
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.records import utcnow
from lossgate.ops.daily import run_daily
from lossgate.publication.switch import shadow_switch
from lossgate.testing.compressors import FlipBool, NothingToDamage
from tests.support.world import AT, T, U, chatter, move_timezone, seed_world

FLIP = "lossgate.testing.compressors:FlipBool"
TERSE = "lossgate.testing.compressors:TerseCompressor"


class FlipWhereItCan(FlipBool):
    """Flips a boolean claim where a summary has one; faithful elsewhere (a tree's other parts)."""

    def damage(self, out, request) -> str:
        try:
            return super().damage(out, request)
        except NothingToDamage:
            return ""


FLIP_WHERE_IT_CAN = f"{__name__}:FlipWhereItCan"


def _shadows(memory, tenant=T, subject=U):
    return [a for a in memory.admin.attempts(tenant, subject) if a.lane == "shadow"]


def test_an_exploratory_shadow_publishes_what_the_gate_refused_to_the_shadow_alias_only(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="exploratory")

    live = memory.consolidate(T, U)

    assert live.status == "published"
    (shadow,) = _shadows(memory)
    assert shadow.status == "rejected" and shadow.gate_outcome == "failed"
    assert any(v.startswith("f-allergy:") for v in shadow.violations)  # the flipped allergy, recorded
    assert (
        shadow.reason == f"published to the shadow alias with {len(shadow.violations)} violation(s) (exploratory gate)"
    )
    art = memory.admin.artifact(T, U, shadow.artifact_id)
    assert art.state == "shadow" and art.gate["outcome"] == "failed"
    assert memory.admin.alias(T, U, lane="shadow").artifact_id == art.artifact_id
    assert memory.admin.alias(T, U).artifact_id == live.artifact_id
    # recall serves live memory only, with and without a query
    for query in (None, "peanuts allergy"):
        got = memory.recall(T, U, query=query)
        assert got.mode == "summary" and got.artifact_id == live.artifact_id
        assert got.record.alias.artifact_id == live.artifact_id
        assert "food.peanuts_allowed: false" in got.render()
    assert [j for j in memory.admin.jobs(T, U) if j.status == "pending"] == []  # a shadow queues no retry


def test_the_release_gate_keeps_a_refused_shadow_summary_off_the_shadow_alias(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP)  # release: the default
    memory.consolidate(T, U)
    (shadow,) = _shadows(memory)
    assert shadow.status == "rejected" and shadow.reason == "gate failed"
    assert memory.admin.artifact(T, U, shadow.artifact_id).state == "failed"
    assert memory.admin.alias(T, U, lane="shadow").artifact_id is None


def test_a_newer_shadow_summary_replaces_the_older_on_the_shadow_alias(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="exploratory")
    memory.consolidate(T, U)
    first = memory.admin.alias(T, U, lane="shadow").artifact_id
    chatter(memory, "more", 2)
    memory.consolidate(T, U)
    second = memory.admin.alias(T, U, lane="shadow")
    assert second.artifact_id != first and second.covers_through == memory.admin.clock(T, U).high_water
    assert memory.admin.artifact(T, U, first).state == "abandoned"


def test_a_slow_shadow_job_never_replaces_a_newer_shadow_summary(memory):
    seed_world(memory)
    slow = memory.admin.consolidator(compressor=FlipBool(), shadow=True, exploratory=True)
    prepared = slow.prepare(T, U)  # built and stored, not yet offered to the shadow alias
    chatter(memory, "more", 2)
    newer = memory.admin.consolidator(compressor=FlipBool(), shadow=True, exploratory=True).run(T, U)
    assert memory.admin.alias(T, U, lane="shadow").artifact_id == newer.artifact_id

    with memory.store.write() as tx:
        result = shadow_switch(tx, prepared.artifact, now=utcnow())
    assert not result.published and "coverage would regress" in result.reason
    assert memory.admin.alias(T, U, lane="shadow").artifact_id == newer.artifact_id


def test_a_shadow_job_built_before_a_supersession_never_reaches_the_shadow_alias(memory):
    seed_world(memory)
    slow = memory.admin.consolidator(compressor=FlipBool(), shadow=True, exploratory=True)
    prepared = slow.prepare(T, U)
    move_timezone(memory)  # the epoch moves: what it was built from is no longer what holds

    with memory.store.write() as tx:
        result = shadow_switch(tx, prepared.artifact, now=utcnow())
    assert not result.published and "input_epoch moved" in result.reason
    assert memory.admin.alias(T, U, lane="shadow").artifact_id is None


def test_a_superseded_input_makes_the_shadow_summary_stale(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="exploratory")
    memory.consolidate(T, U)
    on_alias = memory.admin.alias(T, U, lane="shadow").artifact_id
    move_timezone(memory)
    assert memory.admin.artifact(T, U, on_alias).state == "stale"
    (row,) = memory.admin.shadow_report(T)
    assert (row.shadow_alias, row.shadow_alias_state) == (on_alias, "stale")


def test_deleting_an_input_purges_the_shadow_summary(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="exploratory")
    memory.consolidate(T, U)
    on_alias = memory.admin.alias(T, U, lane="shadow").artifact_id
    assert "peanut" in memory.admin.artifact(T, U, on_alias).body.summary
    memory.delete_event(T, U, "e-allergy")
    art = memory.admin.artifact(T, U, on_alias)
    assert art.state == "stale" and "peanut" not in json.dumps(art.body.model_dump(mode="json"))
    # and the next shadow job publishes a summary without it (nothing left to flip: another compressor)
    memory.admin.set_rollout(T, shadow=TERSE)
    memory.consolidate(T, U)
    rebuilt = memory.admin.artifact(T, U, memory.admin.alias(T, U, lane="shadow").artifact_id)
    assert rebuilt.artifact_id != on_alias and "peanut" not in rebuilt.body.summary


def _days(memory, n: int) -> None:
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=U,
                event_id=f"day-{i}",
                text=f"on day {i} we talked about jazz",
                occurred_at=AT + timedelta(days=i + 1),
            )
            for i in range(n)
        ]
    )


def test_an_exploratory_tree_builds_every_part_and_records_each_ones_violations(memory):
    seed_world(memory)
    _days(memory, 3)
    memory.admin.set_rollout(T, shadow=FLIP_WHERE_IT_CAN, shadow_gate="exploratory")
    tree = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day"))

    memory.consolidate(T, U, config=tree)

    (shadow,) = _shadows(memory)
    root = memory.admin.artifact(T, U, memory.admin.alias(T, U, lane="shadow").artifact_id)
    assert root.manifest.path == "hierarchical" and len(root.manifest.children) == 4  # every part was built
    parts = [memory.admin.artifact(T, U, c) for c in root.manifest.children]
    assert all(p.state == "shadow" for p in parts)
    failed = [p for p in parts if p.gate["outcome"] == "failed"]
    assert failed, "the flipped allergy fails the part that holds it"
    assert shadow.status == "rejected" and any(v.startswith("part ") and "f-allergy:" in v for v in shadow.violations)
    assert root.gate["outcome"] == "failed" and root.gate["violations"] == list(shadow.violations)

    # a part the exploratory gate let through is built and gated again: its violations recorded again
    chatter(memory, "more", 1)
    memory.consolidate(T, U, config=tree)
    latest = _shadows(memory)[-1]
    assert any("f-allergy:" in v for v in latest.violations)
    again = memory.admin.artifact(T, U, memory.admin.alias(T, U, lane="shadow").artifact_id)
    assert not {p.artifact_id for p in failed} & set(again.manifest.children)


def test_a_shadow_registry_is_built_and_gated_with_but_never_loaded(memory):
    seed_world(memory)
    loaded = memory.admin.registry
    doc = loaded.document()
    tried = {
        **doc,
        "version": loaded.version + 5,
        "predicates": {
            **doc["predicates"],
            "chat.topic": {**doc["predicates"]["chat.topic"], "criticality": "critical"},
        },
    }
    memory.admin.set_rollout(T, shadow=TERSE, shadow_registry=tried)

    live = memory.consolidate(T, U)

    (shadow,) = _shadows(memory)
    assert memory.admin.artifact(T, U, shadow.artifact_id).manifest.registry_version == loaded.version + 5
    assert memory.admin.artifact(T, U, live.artifact_id).manifest.registry_version == loaded.version
    assert memory.admin.registry.version == loaded.version  # tried, never loaded
    plan = memory.admin.rollout(T)
    assert plan.shadow_registry["version"] == loaded.version + 5
    plan = memory.admin.set_rollout(T, clear_shadow_registry=True)
    assert plan.shadow_registry is None and plan.shadow == TERSE


def test_a_bad_exploratory_rollout_is_refused_before_anything_changes(memory):
    seed_world(memory)
    with pytest.raises(InvalidInput, match="needs a shadow compressor"):
        memory.admin.set_rollout(T, shadow_gate="exploratory")
    with pytest.raises(InvalidInput):
        memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="permissive")
    with pytest.raises(ConfigError):
        memory.admin.set_rollout(T, shadow=FLIP, shadow_registry={"version": 2})
    with pytest.raises(InvalidInput, match="shadow lane"):
        memory.admin.consolidator(exploratory=True)
    assert memory.admin.rollout(T).shadow is None
    memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="exploratory")
    plan = memory.admin.set_rollout(T, clear_shadow=True)  # the gate goes with the shadow
    assert (plan.shadow, plan.shadow_gate, plan.shadow_registry) == (None, "release", None)


def test_daily_metrics_count_what_the_shadow_alias_holds_and_never_block_on_it(memory, store_url):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="exploratory")
    memory.consolidate(T, U)
    report = run_daily(memory.store, [T], store_results=False)
    tally = report.tenants[T]
    assert (tally.shadow_summaries, tally.shadow_refused) == (1, 1) and tally.shadow_violations >= 1
    assert tally.rates()["shadow_refusal_rate"] == 1.0
    assert not any("shadow" in why for why in report.blocking)


def test_the_cli_sets_the_exploratory_gate_and_reports_the_shadow_alias(memory, store_url, tmp_path):
    from typer.testing import CliRunner

    from lossgate.cli import app

    runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1", "LOSSGATE_DB": None})

    def run(*args: str):
        return runner.invoke(app, ["--db", store_url, *args])

    seed_world(memory)
    assert run("rollout", "set", "-t", T, "--shadow-gate", "exploratory").exit_code == 2  # no shadow compressor
    assert run("rollout", "set", "-t", T, "--shadow", FLIP, "--shadow-gate", "loose").exit_code == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("version = 2\n")
    assert run("rollout", "set", "-t", T, "--shadow", FLIP, "--shadow-registry", str(bad)).exit_code == 2
    assert memory.admin.rollout(T).shadow is None  # nothing changed
    shown = run("rollout", "set", "-t", T, "--shadow", FLIP, "--shadow-gate", "exploratory")
    assert shown.exit_code == 0 and "exploratory gate" in shown.stdout
    assert run("consolidate", "-t", T, "-s", U).exit_code == 0  # live published
    report = run("shadow", "report", "-t", T, "--json")
    (row,) = [json.loads(line) for line in report.stdout.splitlines() if line.startswith("{")]
    assert row["shadow_alias"] == memory.admin.alias(T, U, lane="shadow").artifact_id
    assert row["shadow_alias_state"] == "shadow" and row["shadow_violations"] >= 1
    table = run("shadow", "report", "-t", T)
    assert table.exit_code == 0 and row["shadow_alias"] in table.stdout


def test_the_shadow_report_names_a_fact_the_shadow_states_otherwise(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="exploratory")
    memory.consolidate(T, U)
    (row,) = memory.admin.shadow_report(T)
    assert row.changed == ("f-allergy",) and row.only_live == row.only_shadow == ()


def test_a_rollout_that_contradicts_itself_or_drops_a_predicate_is_refused(memory):
    seed_world(memory)
    for contradiction in (
        {"clear_shadow": True, "shadow": FLIP},
        {"clear_shadow": True, "shadow_gate": "release"},
        {"clear_live": True, "live": "deterministic"},
        {"clear_shadow_registry": True, "shadow": FLIP, "shadow_registry": memory.admin.registry.document()},
    ):
        with pytest.raises(InvalidInput, match="contradicts"):
            memory.admin.set_rollout(T, **contradiction)
    with pytest.raises(InvalidInput):
        memory.admin.set_rollout(T, shadow=FLIP, shadow_gate="")
    doc = memory.admin.registry.document()
    smaller = {
        **doc,
        "version": doc["version"] + 1,
        "predicates": {k: v for k, v in doc["predicates"].items() if k != "chat.topic"},
    }
    with pytest.raises(InvalidInput, match="drops chat.topic"):
        memory.admin.set_rollout(T, shadow=FLIP, shadow_registry=smaller)
    for not_a_path in (0, 3, 2.5):  # an int would be opened as a file descriptor
        with pytest.raises(ConfigError, match="TOML file's path"):
            memory.admin.set_rollout(T, shadow=FLIP, shadow_registry=not_a_path)
    assert memory.admin.rollout(T).shadow is None
    assert memory.consolidate(T, U).status == "published"  # the store is untouched and usable
