"""Operator tools at their edges, each case a bug once and fixed since, on both stores.

Daily metrics on a hierarchy, under an older registry and with a bad tenant id; claims
stored in their exact form and what diagnosis makes of them; the HTML report; a review
flood on a hierarchy; erasure of an artifact in a newer format; a call past its deadline."""

from __future__ import annotations

import json
import threading
import time
from decimal import Decimal

import pytest

from lossgate import InvalidInput, NewEvent, NewFact, UnknownFormat
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.values import stored_form
from lossgate.ops.daily import run_daily
from lossgate.runtime.deadline import Overdue, call_with_deadline
from tests.support.world import AT, T, U, chatter, fact, published, seed_world

TREE = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day"))


def test_daily_is_quiet_on_a_clean_hierarchy_whose_parts_read_a_retired_value(memory):
    memory.append([NewEvent(tenant_id=T, subject_id=U, event_id="e1", text="Seats: we have 17.", occurred_at=AT)])
    memory.assert_fact(fact("f1", "subscription.seats", 17, ["e1"]))
    published(memory, hierarchy=TREE.hierarchy)
    memory.supersede(T, U, "f1", fact("f2", "subscription.seats", 20, ["e1"]))
    published(memory, hierarchy=TREE.hierarchy)
    report = run_daily(memory.store, [T], store_results=False)
    assert not report.blocked, report.blocking


class Quirky(DeterministicCompressor):
    """Writes a money amount as a JSON number, as a model's JSON may, and its fact line as
    that claim reads (``50 USD``); with ``line_as_before``, the line keeps ``50.00 USD``."""

    name = "quirky"

    def __init__(self, *, line_as_before: bool = False) -> None:
        super().__init__()
        self.line_as_before = line_as_before

    def compress(self, request):
        out = super().compress(request)
        for claim in out["claims"]:
            if claim["value_type"] == "money":
                currency = claim["value"]["currency"]
                line = f"- {claim['predicate']}: {claim['value']['amount']} {currency}"
                assert line in out["summary"]
                claim["value"] = {"amount": 50, "currency": currency}
                if not self.line_as_before:
                    out["summary"] = out["summary"].replace(line, f"- {claim['predicate']}: 50 {currency}")
        return out


def test_claims_are_stored_in_their_exact_form_so_format_2_holds_and_diagnose_sees_no_storage_loss(memory):
    from lossgate.ops.diagnose import diagnose

    seed_world(memory)
    attempt = memory.consolidate(T, U, compressor=Quirky())
    assert attempt.status == "published" and attempt.details == ()  # its line renders the claim: nothing left out
    body = memory.admin.artifact(T, U, attempt.artifact_id).body
    (refund,) = [c for c in body.claims if c.fact_id == "f-refund"]
    assert refund.value == {"amount": "50", "currency": "USD"}  # as written, not normalised to 50.00
    assert "- refund.limit: 50 USD (condition=after supervisor review)" in body.summary
    bundle = diagnose(memory, T, U, attempt.attempt_id)
    assert bundle.summary()["first_divergent"] is None, [c for c in bundle.checks if c.status == "diverged"]


def test_a_fact_line_that_does_not_render_its_claim_is_narrative_and_left_out(memory):
    """``50.00 USD`` beside a claim of ``50``: the line is no rendering of the claim, so it is
    a line in the ledger's form that no claim renders, which the ledger says instead."""
    seed_world(memory)
    attempt = memory.consolidate(T, U, compressor=Quirky(line_as_before=True))
    line = "refund.limit: 50.00 USD (condition=after supervisor review)"
    assert attempt.status == "published", attempt.violations
    assert attempt.details == (
        f"narrative_omitted: a line in the ledger's form that the summary does not claim: {'- ' + line!r}",
    )
    body = memory.admin.artifact(T, U, attempt.artifact_id).body
    assert line not in body.summary and [c.value for c in body.claims if c.fact_id == "f-refund"] == [
        {"amount": "50", "currency": "USD"}
    ]
    assert (
        f"Facts:\n- food.peanuts_allowed: false (basis=allergy, severity=critical)\n- {line}\n"
        in memory.recall(T, U).render()
    )  # the ledger's own line, which recall prints first


def test_diagnose_does_not_blame_storage_for_a_sentence_the_pipeline_left_out(memory):
    from lossgate.ops.diagnose import diagnose

    seed_world(memory)
    attempt = memory.consolidate(T, U, compressor=Quirky(line_as_before=True))
    assert attempt.status == "published" and attempt.details
    storage = next(c for c in diagnose(memory, T, U, attempt.attempt_id).checks if c.boundary == "storage")
    assert storage.status == "ok", storage.findings


def test_a_value_finer_than_a_microsecond_is_kept_as_written():
    assert stored_form("duration", "PT1.9999999S") == "PT1.9999999S"
    assert stored_form("datetime", "2026-03-14T12:00:00.1234567Z") == "2026-03-14T12:00:00.1234567Z"
    assert stored_form("duration", "PT168H") == "P7D"
    assert stored_form("money", {"amount": 250, "currency": "USD"}) == {"amount": "250", "currency": "USD"}


def test_daily_under_an_older_registry_skips_what_that_version_does_not_define(memory):
    seed_world(memory)
    doc = memory.admin.registry.document()
    doc["version"] = 2
    doc["predicates"]["x.new"] = {"value_type": "string", "criticality": "contextual"}
    memory.admin.load_predicates(doc)
    memory.assert_fact(
        NewFact(tenant_id=T, subject_id=U, fact_id="f-x", predicate="x.new", value="y", source_event_ids=["e-topic"])
    )
    report = run_daily(memory.store, [T], registry_versions=[1, 2], store_results=False)
    assert any("does not define x.new" in f.detail for f in report.findings) and not report.blocked


@pytest.mark.parametrize("bad", ["", "a b", "x" * 300, "\ud800"])
def test_daily_refuses_a_tenant_that_is_not_an_id(memory, bad):
    with pytest.raises(InvalidInput):
        run_daily(memory.store, [bad], store_results=False)
    with pytest.raises(InvalidInput):
        run_daily(memory.store, [T], timeout_s=float("nan"), store_results=False)


def test_the_report_draws_names_as_written_and_refuses_bad_input(memory, tmp_path):
    from lossgate.ops.report import write_report

    seed_world(memory, tenant="a$x^$", p="m-")
    seed_world(memory, tenant="_hidden", p="h-")
    published(memory, tenant="a$x^$")
    run_daily(memory.store, ["a$x^$", "_hidden"])
    out = tmp_path / "r.html"
    write_report(memory.store, ["a$x^$", "_hidden"], out)
    assert out.exists() and "a$x^$" in out.read_text()
    with pytest.raises(InvalidInput):
        write_report(memory.store, [T], tmp_path)  # a directory
    with pytest.raises(InvalidInput):
        write_report(memory.store, [T], out, days=10**6)
    bad = tmp_path / "locomo.json"
    bad.write_text(json.dumps({"sides": {"x": 1}}))
    with pytest.raises(InvalidInput):
        write_report(memory.store, [T], out, locomo=bad)


def test_a_review_flood_on_a_hierarchy_leaves_no_parts_behind(memory):
    seed_world(memory)
    memory.admin.set_rollout(T, review=True)
    for i in range(4):
        chatter(memory, f"r{i}", 1)
        memory.consolidate(T, U, config=TREE)
    waiting = memory.admin.artifacts(T, U, states=["review"])
    candidates = memory.admin.artifacts(T, U, states=["candidate"])
    assert len(waiting) == 1 and {c.artifact_id for c in candidates} <= set(waiting[0].manifest.children)


def test_an_artifact_in_a_newer_format_never_blocks_erasure(memory):
    seed_world(memory)
    memory.append([NewEvent(tenant_id=T, subject_id=U, event_id="e-x", text="my code is 4471", occurred_at=AT)])
    old = published(memory)
    _set_format(memory, old.artifact_id, 3)  # as a newer lossgate would have stored it
    with pytest.raises(UnknownFormat):
        memory.admin.artifact(T, U, old.artifact_id)
    memory.delete_event(T, U, "e-x")  # erasure goes through
    _set_format(memory, old.artifact_id, 2)
    assert "4471" not in memory.admin.artifact(T, U, old.artifact_id).body.summary


def _set_format(memory, artifact_id: str, fmt: int) -> None:
    with memory.store.write() as tx:
        (doc,) = tx.artifact_documents(T, [artifact_id])
        body = json.loads(doc.body)
        body["format"] = fmt
        tx.replace_artifact_documents([(doc, json.dumps(body), doc.manifest)])


def test_a_call_past_its_deadline_is_abandoned_and_never_holds_the_process():
    started = time.monotonic()
    with pytest.raises(Overdue):
        call_with_deadline(time.sleep, 30, timeout_s=0.2)
    assert time.monotonic() - started < 5
    assert all(t.daemon for t in threading.enumerate() if t.name == "lossgate-call")
    assert call_with_deadline(lambda: Decimal("1.5"), timeout_s=5) == Decimal("1.5")
