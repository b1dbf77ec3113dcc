"""Read-back verification (lossgate.publication.readback), on both stores.

A storage layer that turns ``food.peanuts_allowed: false`` into ``"false"`` on write used
to produce an attempt published ``clean`` whose recall served the string. Now every
stored artifact is read back through the store's read path before it may be published:
a difference is a ``representation_loss`` violation naming the first divergent field with
both type names, the artifact is failed and nothing is published.
"""

from __future__ import annotations

import lossgate
from lossgate.testing.faults import FaultyCodec
from tests.support.world import T, U, published, seed_world


def test_a_codec_that_turns_a_boolean_into_a_string_is_caught_on_read_back_and_nothing_is_published(memory):
    seed_world(memory)
    faulty = lossgate.Memory(FaultyCodec(memory.store))

    attempt = faulty.consolidate(T, U)

    assert attempt.status == "rejected" and attempt.gate_outcome == "failed" and attempt.reason == "read-back differs"
    (loss,) = [d for d in attempt.details if ":representation_loss:" in d]
    assert "body.claims[" in loss and ".value" in loss
    assert "written as bool False, read back as str 'false'" in loss and "from bool to str" in loss
    assert memory.admin.alias(T, U).artifact_id is None  # nothing published
    art = memory.admin.artifact(T, U, attempt.artifact_id)
    assert art.state == "failed" and "from bool to str" in art.state_reason
    assert "False" not in art.state_reason and "false" not in art.state_reason  # field and types, never values
    assert memory.recall(T, U).mode == "raw_fallback"
    assert memory.admin.jobs(T, U)  # a retry is queued

    good = published(memory)  # the same store without the fault publishes
    claims = {c.fact_id: c.value for c in memory.admin.artifact(T, U, good.artifact_id).body.claims}
    assert claims["f-allergy"] is False


def test_a_part_of_a_hierarchy_is_read_back_too(memory):
    from lossgate.consolidate.hierarchy import HierarchyConfig
    from lossgate.consolidate.pipeline import ConsolidationConfig

    seed_world(memory)
    faulty = lossgate.Memory(FaultyCodec(memory.store))
    attempt = faulty.consolidate(T, U, config=ConsolidationConfig(hierarchy=HierarchyConfig(mode="always")))
    assert attempt.status == "rejected" and any(
        v.startswith("part ") and v.endswith(":representation_loss") for v in attempt.violations
    )
    assert memory.admin.alias(T, U).artifact_id is None
