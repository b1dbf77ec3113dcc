"""``POST /v1/subjects/{id}/guard`` over real HTTP, on both stores: a planned action checked
against the ledger, the refusal an answer (200) naming the fact and its source, bad input a
4xx, another tenant's recall not found."""

from __future__ import annotations

from tests.support.service import Service, allergy, error, events

ORDER = {"items": [{"dish": "salad", "ingredients": ["lettuce", "peanut dressing"]}]}
FIXED = {"items": [{"dish": "salad", "ingredients": ["lettuce", "lemon dressing"]}]}


def test_a_planned_order_is_guarded_over_http(service: Service) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    r = client.post(
        "/v1/subjects/u1/append", json={"events": events(("e1", "I am allergic to peanuts.")), "facts": [allergy()]}
    )
    assert r.status_code == 200, r.text
    rid = client.post("/v1/subjects/u1/recall", json={}).json()["recall_id"]

    refused = client.post("/v1/subjects/u1/guard", json={"action": ORDER, "recall_id": rid})
    assert refused.status_code == 200, refused.text
    body = refused.json()
    assert body["allowed"] is False and body["recall_id"] == rid and body["action"] == ORDER
    (why,) = body["refusals"]
    assert (why["rule"], why["field"], why["fact_id"], why["source_event_ids"]) == (
        "meal-ingredients",
        "items[0].ingredients[1]",
        "allergy",
        ["e1"],
    )
    allowed = client.post("/v1/subjects/u1/guard", json={"action": FIXED})
    assert allowed.status_code == 200 and allowed.json()["allowed"] is True

    # a read key may guard; a guard needs a key
    reader = service.client(service.key(tenant, "read"))
    assert reader.post("/v1/subjects/u1/guard", json={"action": FIXED}).status_code == 200
    error(service.client().post("/v1/subjects/u1/guard", json={"action": FIXED}), 401, "unauthorized")


def test_bad_actions_get_a_4xx_and_another_tenants_recall_is_not_found(service: Service) -> None:
    tenant, other = service.tenant(), service.tenant()
    client, theirs = service.client(service.key(tenant)), service.client(service.key(other))
    theirs.post("/v1/subjects/u1/append", json={"events": events(("e1", "hello"))})
    their_recall = theirs.post("/v1/subjects/u1/recall", json={}).json()["recall_id"]
    error(client.post("/v1/subjects/u1/guard", json={"action": FIXED, "recall_id": their_recall}), 404, "not_found")
    assert client.post("/v1/subjects/u1/guard", json={"action": [1, 2]}).status_code == 422
    assert client.post("/v1/subjects/u1/guard", json={}).status_code == 422
    assert client.post("/v1/subjects/u1/guard", json={"action": FIXED, "colour": "red"}).status_code == 422
    bad = client.post("/v1/subjects/u1/guard", json={"action": {"refund": {"amount": "forty", "currency": "USD"}}})
    assert bad.status_code == 422 and "refund.amount" in bad.json()["message"]
