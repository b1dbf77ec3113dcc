"""The response boundary over real HTTP, on both stores: ``POST /v1/subjects/{id}/responses``
records what an agent answered or did after a recall (201), ``GET`` lists them (redacted
once the content they rest on is deleted), and ``GET /recalls/{id}/verify`` says whether a
recall still holds. Scopes, unknown recalls and bad bodies answer as everywhere else."""

from __future__ import annotations

from tests.support.service import Service, allergy, error, events

ORDER = {"items": [{"dish": "salad", "ingredients": ["lettuce", "peanut dressing"]}]}


def test_a_response_is_recorded_listed_and_redacted_over_http(service: Service) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    r = client.post(
        "/v1/subjects/u1/append",
        json={
            "events": events(("e1", "I am allergic to peanuts."), ("e2", "the garden is lovely")),
            "facts": [allergy()],
        },
    )
    assert r.status_code == 200, r.text
    rid = client.post("/v1/subjects/u1/recall", json={}).json()["recall_id"]
    guard = client.post("/v1/subjects/u1/guard", json={"action": ORDER, "recall_id": rid}).json()

    made = client.post(
        "/v1/subjects/u1/responses",
        json={"recall_id": rid, "answer": "ordered the salad", "action": ORDER, "guard_id": guard["guard_id"]},
    )
    assert made.status_code == 201, made.text
    body = made.json()
    assert (body["recall_id"], body["guard_id"], body["action"], body["redacted"]) == (
        rid,
        guard["guard_id"],
        ORDER,
        False,
    )
    assert body["action_sha256"] == guard["action_sha256"]
    listed = client.get("/v1/subjects/u1/responses")
    assert listed.status_code == 200 and [x["response_id"] for x in listed.json()] == [body["response_id"]]

    verdict = client.get(f"/v1/subjects/u1/recalls/{rid}/verify")
    assert verdict.status_code == 200, verdict.text
    assert verdict.json() == {"recall_id": rid, "state": "unchanged", "changes": [], "rendered_matches": True}

    assert client.delete("/v1/subjects/u1/events/e2").status_code == 200
    (gone,) = client.get("/v1/subjects/u1/responses").json()
    assert (gone["answer"], gone["action"], gone["redacted"]) == (None, None, True)
    assert gone["redaction_cause"] == "delete_event e2" and gone["answer_sha256"] == body["answer_sha256"]
    erased = client.get(f"/v1/subjects/u1/recalls/{rid}/verify").json()
    assert erased["state"] == "erased" and {"id": "e2", "what": "deleted"} in erased["changes"]


def test_scopes_unknown_records_and_bad_bodies(service: Service) -> None:
    tenant, other = service.tenant(), service.tenant()
    client, theirs = service.client(service.key(tenant)), service.client(service.key(other))
    reader = service.client(service.key(tenant, "read"))
    client.post("/v1/subjects/u1/append", json={"events": events(("e1", "hello"))})
    rid = client.post("/v1/subjects/u1/recall", json={}).json()["recall_id"]
    theirs.post("/v1/subjects/u1/append", json={"events": events(("e1", "hello"))})
    their_recall = theirs.post("/v1/subjects/u1/recall", json={}).json()["recall_id"]

    error(reader.post("/v1/subjects/u1/responses", json={"recall_id": rid, "answer": "hi"}), 403, "forbidden")
    assert reader.get("/v1/subjects/u1/responses").status_code == 200
    assert reader.get(f"/v1/subjects/u1/recalls/{rid}/verify").status_code == 200
    error(service.client().get("/v1/subjects/u1/responses"), 401, "unauthorized")

    error(client.post("/v1/subjects/u1/responses", json={"recall_id": their_recall, "answer": "hi"}), 404, "not_found")
    error(client.post("/v1/subjects/u1/responses", json={"recall_id": "rc-nothing", "answer": "hi"}), 404, "not_found")
    error(
        client.post("/v1/subjects/u1/responses", json={"recall_id": rid, "answer": "hi", "guard_id": "gd-no"}),
        404,
        "not_found",
    )
    error(client.get(f"/v1/subjects/u1/recalls/{their_recall}/verify"), 404, "not_found")
    error(client.post("/v1/subjects/u1/responses", json={"recall_id": rid}), 422, "invalid_input")
    error(client.post("/v1/subjects/u1/responses", json={"recall_id": rid, "action": [1]}), 422, "validation_error")
    error(client.post("/v1/subjects/u1/responses", json={"answer": "hi"}), 422, "validation_error")
    error(
        client.post("/v1/subjects/u1/responses", json={"recall_id": rid, "answer": "hi", "colour": "red"}),
        422,
        "validation_error",
    )
    assert client.get("/v1/subjects/u1/responses").json() == []
    assert client.get("/v1/subjects/u1/responses", params={"limit": 0}).status_code == 422
