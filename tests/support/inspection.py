"""The inspection page's demo subject, built with real operations: a lossy compressor's
attempt refused by the gate (a flipped boolean: which fact changed), a good publication,
then a revoked event that makes it stale. :class:`Page` is the page's server with it, as
the ui tests' ``page`` fixture serves it."""

from __future__ import annotations

from dataclasses import dataclass

from lossgate.api.memory import Memory
from lossgate.model.records import NewEvent, NewFact
from lossgate.testing.compressors import FlipBool

SUBJECT = "user-17"
# what a hostile writer might put in any text: the page must show it as text
MARKUP = "<script>alert('x')</script><b onmouseover=\"x\">"


@dataclass(frozen=True)
class Demo:
    tenant: str
    subject: str
    rejected_attempt: str
    violation: str  # as the gate names it: "<fact>:<code>"
    stale_artifact: str


def build_demo(memory: Memory, tenant: str, subject: str = SUBJECT, *, marker: str = "") -> Demo:
    """Consolidate ``subject`` of ``tenant`` three ways (see the module). ``marker`` is put
    into an event's text and the recall query (a test puts markup there to check escaping)."""
    events = [
        NewEvent(
            tenant_id=tenant,
            subject_id=subject,
            event_id="e1",
            text="I am allergic to peanuts, not merely avoiding them.",
        ),
        NewEvent(
            tenant_id=tenant,
            subject_id=subject,
            event_id="e2",
            text=f"I'm in New York. Please show every time in UTC-05:00. {marker}".strip(),
        ),
        NewEvent(tenant_id=tenant, subject_id=subject, event_id="e3", text="Send the tickets to 221 Elm Street."),
    ]
    facts = [
        NewFact(
            tenant_id=tenant,
            subject_id=subject,
            fact_id="allergy",
            predicate="food.peanuts_allowed",
            value=False,
            qualifiers=(("basis", "allergy"), ("severity", "critical")),
            source_event_ids=("e1",),
        ),
        NewFact(
            tenant_id=tenant,
            subject_id=subject,
            fact_id="tz-1",
            predicate="timezone",
            value="UTC-05:00",
            source_event_ids=("e2",),
        ),
        NewFact(
            tenant_id=tenant,
            subject_id=subject,
            fact_id="address",
            predicate="contact.home_address",
            value="221 Elm Street",
            source_event_ids=("e3",),
        ),
    ]
    with memory.transaction() as led:
        led.append(events)
        led.assert_facts(facts)
    rejected = memory.consolidate(tenant, subject, compressor=FlipBool())
    assert rejected.status == "rejected" and rejected.violations, rejected
    memory.recall(tenant, subject, query=f"Can I order the satay? {marker}".strip())
    good = memory.consolidate(tenant, subject)
    assert good.status == "published" and good.artifact_id, good
    memory.recall(tenant, subject)
    memory.revoke_event(tenant, subject, "e3", reason="the user withdrew the address")
    (stale,) = memory.admin.artifacts(tenant, subject, states=["stale"])
    assert stale.artifact_id == good.artifact_id
    return Demo(
        tenant=tenant,
        subject=subject,
        rejected_attempt=rejected.attempt_id,
        violation=rejected.violations[0],
        stale_artifact=good.artifact_id,
    )


@dataclass
class Page:
    """A served memory with the demo subject: the base URL, the memory behind it, the demo."""

    url: str
    store: str
    memory: Memory
    demo: Demo

    def key(self, tenant: str | None = None, *scopes: str) -> str:
        _, secret = self.memory.admin.create_api_key(tenant or self.demo.tenant, scopes=list(scopes or ("read",)))
        return secret
