"""A subject's whole life through the client, every method, on both stores and in both
flavours; the async client's transcript is the blocking one's."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from lossgate import Money
from lossgate.client import Client, EventIn, FactIn
from lossgate.service.models import AppendOut, FactOut, RecallOut
from tests.support.client import OCCURRED, Connect, Served, work_off_the_queue

ORDER = {"items": [{"dish": "salad", "ingredients": ["peanut dressing"]}]}


def first_events() -> list[EventIn]:
    return [
        EventIn(event_id="e1", text="I am allergic to peanuts, not merely avoiding them.", occurred_at=OCCURRED),
        EventIn(event_id="e2", text="I'm in New York. Please show every time in UTC-05:00.", occurred_at=OCCURRED),
        EventIn(event_id="e3", text="Send the tickets to 221 Elm Street.", occurred_at=OCCURRED),
        EventIn(
            event_id="e4",
            text="Refunds up to 50.10 USD after review; uptime 99.950.",
            actor="supervisor",
            trust="system",
            occurred_at=OCCURRED,
            payload={"ratio": 0.1, "n": 3},
        ),
    ]


def first_facts() -> list[FactIn]:
    return [
        FactIn(
            fact_id="allergy",
            predicate="food.peanuts_allowed",
            value=False,
            qualifiers={"basis": "allergy", "severity": "critical"},
            source_event_ids=["e1"],
        ),
        FactIn(fact_id="tz-1", predicate="timezone", value="UTC-05:00", source_event_ids=["e2"]),
        FactIn(fact_id="address", predicate="contact.home_address", value="221 Elm Street", source_event_ids=["e3"]),
        FactIn(
            fact_id="refund",
            predicate="refund.limit",
            value=Money(amount=Decimal("50.10"), currency="USD"),
            authority="system",
            qualifiers={"condition": "after review"},
            source_event_ids=["e4"],
        ),
        FactIn(
            fact_id="sla",
            predicate="sla.uptime_percent",
            value=Decimal("99.950"),
            authority="system",
            source_event_ids=["e4"],
        ),
    ]


def life(served: Served, connect: Connect) -> list[Any]:
    """Every method of the client on one subject of a fresh tenant; what came back, without
    what differs from run to run (recall and guard ids, times)."""
    tenant = served.tenant()
    memory = connect(served.url, served.key(tenant, "read", "write"))
    admin = connect(served.url, served.key(tenant, "admin"))
    anonymous = connect(served.url)
    s = "traveller"
    seen: list[Any] = []

    assert anonymous.health().status == "ok"
    assert 'route="/healthz",status="200"' in anonymous.metrics()
    me = memory.key()
    assert (me.tenant_id, me.scopes) == (tenant, ["read", "write"])

    appended = memory.append(s, first_events(), first_facts(), idempotency_key="first-1")
    assert isinstance(appended, AppendOut)
    assert [(e.event_id, e.seq) for e in appended.appended] == [("e1", 1), ("e2", 2), ("e3", 3), ("e4", 4)]
    assert (appended.clock.high_water, appended.duplicates) == (9, [])
    # (content hashes differ: a tenant is part of what each record hashes)
    seen.append(
        appended.model_dump(
            mode="json", exclude={"appended": {"__all__": {"content_hash"}}, "facts": {"__all__": {"content_hash"}}}
        )
    )
    # the same key and request: the first answer, nothing written; without a key, the ids dedupe
    assert memory.append(s, first_events(), first_facts(), idempotency_key="first-1") == appended
    assert memory.append(s, first_events()[:1]).duplicates == ["e1"]

    assert [e.event_id for e in memory.events(s, after_seq=1, limit=1)] == ["e2"]
    (e4,) = memory.events(s, state="valid", after_seq=3)
    assert e4.payload == {"ratio": 0.1, "n": 3} and e4.occurred_at == datetime(2026, 1, 5, 14, 12, 2, tzinfo=UTC)
    facts = {f.fact_id: f for f in memory.facts(s)}
    assert all(isinstance(f, FactOut) for f in facts.values())
    assert facts["allergy"].value is False and facts["allergy"].criticality == "critical"
    assert facts["refund"].value == {"amount": "50.10", "currency": "USD"}
    assert (facts["sla"].value, facts["sla"].value_type) == ("99.950", "decimal")  # exact, as sent
    assert served.memory.facts(tenant, s, predicate="sla.uptime_percent")[0].value == Decimal("99.950")
    assert [f.fact_id for f in memory.facts(s, status="all", predicate="timezone")] == ["tz-1"]
    assert memory.conflicts(s) == [] and memory.conflicts(s, resolved=True) == []

    raw = memory.recall(s, "peanuts", budget=2000)
    assert isinstance(raw, RecallOut) and raw.mode == "raw_fallback"
    assert "food.peanuts_allowed: false" in raw.rendered and "allergic to peanuts" in raw.rendered
    seen.append(raw.rendered)

    queued = memory.consolidate(s)
    assert queued.queued and queued.job.status == "pending"
    again = memory.consolidate(s)
    assert not again.queued and again.job.job_id == queued.job.job_id
    assert work_off_the_queue(served) >= 1
    assert memory.job(s, queued.job.job_id).status == "done"
    assert [j.job_id for j in memory.jobs(s)] == [queued.job.job_id]
    (attempt,) = memory.attempts(s)
    assert (attempt.status, attempt.gate_outcome) == ("published", "clean")
    seen.append((attempt.status, attempt.gate_outcome, attempt.violations, attempt.selected_ids))

    clock = memory.clock(s)
    assert clock.alias.artifact_id == attempt.artifact_id and clock.clock.high_water == 9
    summary = memory.recall(s)
    assert summary.mode == "summary" and summary.rendered.startswith(f"Memory of {s} (summary)")
    seen.append(summary.rendered)
    records = memory.recalls(s, limit=2)
    assert [(r.recall_id, r.mode) for r in records] == [(summary.recall_id, "summary"), (raw.recall_id, "raw_fallback")]
    assert records[1].query == "peanuts"

    guarded = memory.guard(s, ORDER, recall_id=summary.recall_id)
    assert not guarded.allowed and guarded.refusals[0].fact_id == "allergy" and guarded.recall_id == summary.recall_id
    seen.append([(r.rule, r.field, r.fact_id) for r in guarded.refusals])
    answered = memory.respond(s, summary.recall_id, answer="no peanut dressing for you")
    assert answered.recall_id == summary.recall_id and answered.answer == "no peanut dressing for you"
    assert [r.response_id for r in memory.responses(s)] == [answered.response_id]
    verdict = memory.verify_recall(s, summary.recall_id)
    assert (verdict.state, verdict.rendered_matches) == ("unchanged", True)

    (artifact,) = memory.artifacts(s, state="published")
    assert memory.artifacts(s, state="stale") == [] and artifact.artifact_id == attempt.artifact_id
    assert {c.fact_id for c in artifact.claims} >= {"allergy", "tz-1", "refund"}
    superseded = memory.supersede(
        s, "tz-1", FactIn(fact_id="tz-2", predicate="timezone", value="UTC+01:00", source_event_ids=["e2"])
    )
    assert (superseded.fact_id, superseded.supersedes) == ("tz-2", "tz-1")
    lineage = memory.lineage(s, artifact.artifact_id)
    assert lineage.artifact.state == "stale"  # in the transaction that superseded its input
    assert ("fact", "tz-1") in {(e.input_kind, e.input_id) for e in lineage.edges}
    assert memory.verify_recall(s, summary.recall_id).state == "changed"

    deleted = memory.delete_fact(s, "address", reason="user request")
    assert (deleted.status, deleted.value) == ("deleted", None)
    assert memory.revoke_event(s, "e2", reason="wrong").state == "revoked"
    gone = memory.delete_event(s, "e1")
    assert (gone.state, gone.actor, gone.text) == ("deleted", None, None)
    statuses = {f.fact_id: f.status for f in memory.facts(s, status="all")}
    assert statuses == {
        "allergy": "deleted",
        "tz-1": "revoked",
        "tz-2": "revoked",
        "address": "deleted",
        "refund": "active",
        "sla": "active",
    }
    seen.append(sorted(statuses.items()))
    assert memory.extract(s).subject_id == s

    assert admin.subjects().subjects == [s]
    assert [j.subject_id for j in admin.tenant_jobs()] == [s, s]  # the second: the rebuild the changes queued
    assert admin.tenant_jobs(status="review") == []
    assert memory.request("GET", "/v1/key").json()["tenant_id"] == tenant  # a request written by hand
    return seen


def test_a_subject_lives_its_whole_life_through_both_clients_alike(
    served: Served, connect: Connect, flavour: str
) -> None:
    transcript = life(served, connect)
    if flavour == "sync":
        return
    made: list[Client] = []

    def blocking(url: str, api_key: str | None = None) -> Client:
        made.append(Client(url, api_key))
        return made[-1]

    try:  # the same life through the blocking client, on a tenant of its own
        assert life(served, blocking) == transcript
    finally:
        for client in made:
            client.close()


def _answered(metrics: str) -> dict[tuple[str, str], float]:
    found = re.findall(r'lossgate_http_requests_total\{method="(\w+)",route="([^"]+)",status="2\d\d"\} (\S+)', metrics)
    counts: dict[tuple[str, str], float] = {}
    for method, route, n in found:
        counts[(method, route)] = counts.get((method, route), 0) + float(n)
    return counts


def test_every_route_of_the_served_document_is_answered_through_the_client(served: Served, connect: Connect) -> None:
    """The server's own metrics, before and after one life through the client: every
    operation of the OpenAPI document it serves was answered with a 2xx meanwhile."""
    probe = connect(served.url)
    document = probe.request("GET", "/openapi.json").json()
    operations = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    before = _answered(probe.metrics())
    life(served, connect)
    after = _answered(probe.metrics())
    answered = {op for op, n in after.items() if n > before.get(op, 0)}
    assert operations - answered == set(), "operations the client never had answered"
