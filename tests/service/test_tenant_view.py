"""The service's tenant binding is the short path's: a key's ``TenantMemory`` adds and searches
as ``memory.tenant(t)`` does, and what it adds is what the HTTP API serves that key."""

from __future__ import annotations

from lossgate.api.tenancy import TenantView
from lossgate.service import TenantMemory


def test_a_keys_tenant_memory_adds_and_searches_as_the_http_api_sees_it(service):
    tenant = service.tenant()
    secret = service.key(tenant)
    key = service.memory.admin.authenticate(secret)
    assert key is not None
    view = TenantMemory.of_key(service.memory, key)
    assert isinstance(view, TenantView) and view.tenant_id == tenant
    added = view.add("user-1", ["I am allergic to peanuts.", {"role": "assistant", "content": "Noted: no peanuts."}])
    client = service.client(secret)
    listed = client.get("/v1/subjects/user-1/events").json()
    assert [(e["event_id"], e["actor"], e["trust"]) for e in listed] == [
        (added.events[0].event_id, "user", "authenticated_user"),
        (added.events[1].event_id, "assistant", "tool"),
    ]
    found = view.search("user-1", "peanuts")
    over_http = client.post("/v1/subjects/user-1/recall", json={"query": "peanuts"}).json()
    assert over_http["rendered"] == found.rendered == service.memory.tenant(tenant).search("user-1", "peanuts").rendered
    stranger = TenantMemory.of_key(service.memory, service.memory.admin.authenticate(service.key(service.tenant())))
    assert stranger.search("user-1", "peanuts").events == ()  # another key's tenant sees none of it
