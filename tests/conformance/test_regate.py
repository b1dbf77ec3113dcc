"""Schema upgrades re-gate: loading a registry version that makes the gate
stricter re-checks the summaries gated under the older version, in the same transaction.

Every test runs against every store (the ``memory`` fixture)."""

from __future__ import annotations

from typing import Any

import pytest

from lossgate.consolidate.compressor import CompressionRequest
from lossgate.consolidate.pipeline import Hooks
from lossgate.publication.upgrades import upgrade_changes
from lossgate.testing.compressors import LossyCompressor
from tests.support.world import T, U, V, log_ops, pending_jobs, published, seed_world


class DropTimezone(LossyCompressor):
    """Leaves the (important, under v1) timezone claim and its summary line out: an
    acceptable loss under v1, a missing critical fact once timezone is critical."""

    name = "drop-timezone"

    def damage(self, out: dict[str, Any], request: CompressionRequest) -> str:
        claim = self._pick(out, lambda c: c["predicate"] == "timezone")
        out["claims"].remove(claim)
        out["summary"] = "\n".join(ln for ln in out["summary"].splitlines() if "UTC-05:00" not in ln)
        return claim["fact_id"]


def upgraded(memory, *, version: int = 2, criticality: str = "critical", **changes: Any) -> dict:
    """The loaded registry's document with timezone at ``criticality`` (and other changes) as ``version``."""
    doc = memory.admin.registry.document()
    doc["version"] = version
    doc["predicates"]["timezone"] = {**doc["predicates"]["timezone"], "criticality": criticality, **changes}
    return doc


def test_raising_timezone_to_critical_regates_published_summaries(memory):
    seed_world(memory, subject=U)
    seed_world(memory, subject=V, p="v-")
    lacking = memory.consolidate(T, U, compressor=DropTimezone())
    assert lacking.status == "published", (lacking.violations, lacking.error)
    assert any("timezone" in loss or "f-tz" in loss for loss in lacking.losses)
    carrying = published(memory, subject=V)
    before_u = memory.recall(T, U)
    assert before_u.mode == "summary" and before_u.artifact_id == lacking.artifact_id
    assert not pending_jobs(memory, subject=U)

    memory.admin.load_predicates(upgraded(memory), tenants=[T])

    assert memory.admin.registry.version == 2
    # The summary that lacks the timezone failed its re-gate: stale, out of recall, rebuild queued.
    art = memory.admin.artifact(T, U, lacking.artifact_id)
    assert art.state == "stale"
    assert "registry v2" in art.state_reason and "f-tz" in art.state_reason
    recalled = memory.recall(T, U)
    assert recalled.mode == "raw_fallback" and recalled.artifact_id is None
    assert any("UTC-05:00" in e.text for e in recalled.events)  # the raw layer still has it
    jobs = pending_jobs(memory, subject=U)
    assert len(jobs) == 1 and "registry v2" in jobs[0].reason
    [line] = log_ops(memory, "regate", subject=U)
    assert line.target_id == lacking.artifact_id
    assert line.detail["outcome"] == "failed" and line.detail["stale"] and line.detail["queued"]
    assert line.detail["gated_under"] == 1 and line.detail["registry_version"] == 2
    assert line.detail["changes"] == ["timezone: important -> critical"]

    # The one that carries it passes the re-gate and stays published and fresh.
    assert memory.admin.artifact(T, V, carrying.artifact_id).state == "published"
    fresh = memory.recall(T, V)
    assert fresh.mode == "summary" and fresh.artifact_id == carrying.artifact_id
    assert not pending_jobs(memory, subject=V)
    [line_v] = log_ops(memory, "regate", subject=V)
    assert line_v.detail["outcome"] in ("clean", "acceptable") and not line_v.detail["stale"]

    # The queued rebuild publishes a summary gated under v2, which carries the timezone.
    rebuilt = published(memory, subject=U)
    assert memory.admin.artifact(T, U, rebuilt.artifact_id).manifest.registry_version == 2
    assert any(c.predicate == "timezone" for c in memory.admin.artifact(T, U, rebuilt.artifact_id).body.claims)
    assert memory.recall(T, U).mode == "summary"
    assert memory.admin.artifact(T, U, lacking.artifact_id).state == "stale"  # audit keeps it stale


def test_the_regate_commits_with_the_registry_or_not_at_all(memory, monkeypatch):
    seed_world(memory)
    lacking = memory.consolidate(T, U, compressor=DropTimezone())
    assert lacking.status == "published"
    import lossgate.consolidate.regate as regate_module

    def boom(*args, **kwargs):
        raise RuntimeError("crash in the middle of the re-gate")

    monkeypatch.setattr(regate_module, "queue", type("Q", (), {"registry_upgraded": staticmethod(boom)}))
    try:
        memory.admin.load_predicates(upgraded(memory), tenants=[T])
    except RuntimeError:
        pass
    assert memory.admin.registry.version == 1  # nothing committed: not the registry, not the stale mark
    assert memory.admin.artifact(T, U, lacking.artifact_id).state == "published"
    monkeypatch.undo()
    memory.admin.load_predicates(upgraded(memory), tenants=[T])
    assert memory.admin.artifact(T, U, lacking.artifact_id).state == "stale"


def test_an_upgrade_that_does_not_tighten_the_gate_regates_nothing(memory):
    seed_world(memory)
    lacking = memory.consolidate(T, U, compressor=DropTimezone())
    assert lacking.status == "published"
    doc = upgraded(memory, criticality="important", description="Lowered nothing; words only.")
    doc["predicates"]["chat.topic"] = {**doc["predicates"]["chat.topic"], "criticality": "contextual"}
    memory.admin.load_predicates(doc, tenants=[T])
    assert memory.admin.artifact(T, U, lacking.artifact_id).state == "published"
    assert memory.recall(T, U).mode == "summary"
    assert not log_ops(memory, "regate") and not pending_jobs(memory)


def test_a_regate_later_for_a_tenant_not_named_at_load(memory):
    seed_world(memory)
    lacking = memory.consolidate(T, U, compressor=DropTimezone())
    memory.admin.load_predicates(upgraded(memory))  # no tenant named: the published summary is untouched
    assert memory.admin.artifact(T, U, lacking.artifact_id).state == "published"
    [result] = memory.admin.regate(T)
    assert result.stale and result.queued and result.outcome == "failed"
    assert memory.recall(T, U).mode == "raw_fallback"
    assert memory.admin.regate(T) == []  # nothing left to re-gate: the stale one is audit


def test_a_job_gated_before_the_upgrade_cannot_publish_after_it(memory):
    seed_world(memory)

    def upgrade_now(artifact):
        memory.admin.load_predicates(upgraded(memory), tenants=[T])

    attempt = memory.admin.consolidator(hooks=Hooks(before_switch=upgrade_now)).run(T, U)
    assert attempt.status == "conflict" and "requires a re-gate" in attempt.reason
    assert memory.admin.alias(T, U).artifact_id is None
    assert pending_jobs(memory)
    again = published(memory)
    assert memory.admin.artifact(T, U, again.artifact_id).manifest.registry_version == 2


def test_unpublished_candidates_gated_under_the_old_version_go_stale(memory):
    seed_world(memory)
    prepared = memory.admin.consolidator().prepare(T, U)
    assert prepared.artifact is not None and prepared.attempt.status == "gated"
    memory.admin.load_predicates(upgraded(memory), tenants=[T])
    art = memory.admin.artifact(T, U, prepared.artifact.artifact_id)
    assert art.state == "stale" and "requires a re-gate" in art.state_reason
    [line] = log_ops(memory, "regate")
    assert line.detail["outcome"] == "outdated"


def test_upgrade_changes_names_added_raised_and_retyped_predicates(memory):
    old = memory.admin.registry
    doc = upgraded(memory, type="enum", enum_values=["UTC-05:00", "UTC+01:00"])
    doc["predicates"]["badge.id"] = {"type": "string", "criticality": "critical"}
    doc["predicates"]["note.misc"] = {"type": "string", "criticality": "contextual"}
    from lossgate.model.registry import parse_registry

    assert upgrade_changes(old, parse_registry(doc)) == [
        "badge.id: added as critical",
        "timezone: important -> critical",
        "timezone: type string -> enum",
    ]
    assert upgrade_changes(parse_registry(doc), old) == []  # an older version re-gates nothing


def test_a_registry_version_that_drops_a_predicate_is_refused(memory):
    from lossgate import InvalidInput

    doc = upgraded(memory)
    del doc["predicates"]["chat.topic"]
    with pytest.raises(InvalidInput, match="drops chat.topic"):
        memory.admin.load_predicates(doc)
    assert memory.admin.registry.version == 1
