"""The memory service over real HTTP, on both stores: every route, every authentication
failure, cross-tenant attempts, idempotent retries, oversized and malformed bodies.

Each test works in tenants of its own on the session's server (``conftest.py``)."""

from __future__ import annotations

import json
import re
import threading
from decimal import Decimal
from typing import Any

import httpx
import pytest

from lossgate.ops.worker import drain, open_worker_memory
from tests.support.service import OCCURRED, Service, allergy, error, events


def timezone(value: str, source: str, fact_id: str) -> dict[str, Any]:
    return {"fact_id": fact_id, "predicate": "timezone", "value": value, "source_event_ids": [source]}


def work_off_the_queue(service: Service) -> int:
    worker = open_worker_memory(service.db_url, migrate=False)
    try:
        return drain(worker)
    finally:
        worker.close()


def seed(client: httpx.Client, subject: str) -> dict[str, Any]:
    r = client.post(
        f"/v1/subjects/{subject}/append",
        json={
            "events": events(
                ("e1", "I am allergic to peanuts, not merely avoiding them."),
                ("e2", "I'm in New York. Please show every time in UTC-05:00."),
                ("e3", "Send the tickets to 221 Elm Street."),
            ),
            "facts": [
                allergy(),
                timezone("UTC-05:00", "e2", "tz-1"),
                {
                    "fact_id": "address",
                    "predicate": "contact.home_address",
                    "value": "221 Elm Street",
                    "source_event_ids": ["e3"],
                },
            ],
        },
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


# -- every route ---------------------------------------------------------------------------


def test_a_subject_lives_its_whole_life_over_http(service: Service) -> None:
    tenant = service.tenant()
    rw = service.client(service.key(tenant, "read", "write"))
    admin = service.client(service.key(tenant, "admin"))
    s = "traveller"

    appended = seed(rw, s)
    assert [(e["event_id"], e["seq"]) for e in appended["appended"]] == [("e1", 1), ("e2", 2), ("e3", 3)]
    assert [(f["fact_id"], f["status"]) for f in appended["facts"]] == [
        ("allergy", "active"),
        ("tz-1", "active"),
        ("address", "active"),
    ]
    assert appended["clock"] == {"high_water": 6, "input_epoch": 0} and appended["duplicates"] == []

    listed = rw.get(f"/v1/subjects/{s}/events", params={"after_seq": 1, "limit": 1}).json()
    assert [e["event_id"] for e in listed] == ["e2"] and listed[0]["occurred_at"].startswith("2026-01-05T09:12:02")
    facts = {f["fact_id"]: f for f in rw.get(f"/v1/subjects/{s}/facts").json()}
    assert facts["allergy"]["value"] is False and facts["allergy"]["criticality"] == "critical"
    assert rw.get(f"/v1/subjects/{s}/conflicts").json() == []

    recalled = rw.post(f"/v1/subjects/{s}/recall", json={"query": "peanuts", "budget": 2000}).json()
    assert recalled["mode"] == "raw_fallback" and recalled["recall_id"]
    assert "food.peanuts_allowed: false" in recalled["rendered"] and "allergic to peanuts" in recalled["rendered"]

    queued = rw.post(f"/v1/subjects/{s}/consolidate")
    assert queued.status_code == 202, queued.text
    job = queued.json()["job"]
    assert job["status"] == "pending" and queued.json()["queued"] is True
    again = rw.post(f"/v1/subjects/{s}/consolidate").json()
    assert again["queued"] is False and again["job"]["job_id"] == job["job_id"]  # the pending one
    assert work_off_the_queue(service) >= 1
    assert rw.get(f"/v1/subjects/{s}/jobs/{job['job_id']}").json()["status"] == "done"
    assert [j["job_id"] for j in rw.get(f"/v1/subjects/{s}/jobs").json()] == [job["job_id"]]
    (attempt,) = rw.get(f"/v1/subjects/{s}/attempts").json()
    assert (attempt["status"], attempt["gate_outcome"]) == ("published", "clean")

    clock = rw.get(f"/v1/subjects/{s}/clock").json()
    assert clock["alias"]["artifact_id"] == attempt["artifact_id"] and clock["clock"]["high_water"] == 6
    recalled = rw.post(f"/v1/subjects/{s}/recall", json={}).json()
    assert recalled["mode"] == "summary" and recalled["artifact_id"] == attempt["artifact_id"]
    assert recalled["rendered"].startswith(f"Memory of {s} (summary)")
    records = rw.get(f"/v1/subjects/{s}/recalls").json()  # the evidence each recall left, newest first
    assert [(r["recall_id"], r["mode"]) for r in records[:2]] == [
        (recalled["recall_id"], "summary"),
        (records[1]["recall_id"], "raw_fallback"),
    ]
    assert records[1]["query"] == "peanuts" and records[0]["alias"]["artifact_id"] == attempt["artifact_id"]
    # the response boundary: the planned order guarded, the response recorded, the recall verified
    order = {"items": [{"dish": "salad", "ingredients": ["peanut dressing"]}]}
    guarded = rw.post(f"/v1/subjects/{s}/guard", json={"action": order, "recall_id": recalled["recall_id"]}).json()
    assert guarded["allowed"] is False and guarded["refusals"][0]["fact_id"] == "allergy"
    answered = rw.post(
        f"/v1/subjects/{s}/responses", json={"recall_id": recalled["recall_id"], "answer": "no peanut dressing for you"}
    )
    assert answered.status_code == 201, answered.text
    assert [r["response_id"] for r in rw.get(f"/v1/subjects/{s}/responses").json()] == [answered.json()["response_id"]]
    verdict = rw.get(f"/v1/subjects/{s}/recalls/{recalled['recall_id']}/verify").json()
    assert (verdict["state"], verdict["rendered_matches"]) == ("unchanged", True)
    (artifact,) = rw.get(f"/v1/subjects/{s}/artifacts", params={"state": "published"}).json()
    assert rw.get(f"/v1/subjects/{s}/artifacts", params={"state": "stale"}).json() == []
    assert artifact["state"] == "published" and {c["fact_id"] for c in artifact["claims"]} >= {"allergy", "tz-1"}

    superseded = rw.post(f"/v1/subjects/{s}/facts/tz-1/supersede", json={"fact": timezone("UTC+01:00", "e2", "tz-2")})
    assert superseded.status_code == 200 and superseded.json()["supersedes"] == "tz-1"
    lineage = rw.get(f"/v1/subjects/{s}/artifacts/{attempt['artifact_id']}/lineage").json()
    assert lineage["artifact"]["state"] == "stale"  # in the transaction that superseded its input
    assert {"input_kind": "fact", "input_id": "tz-1"} in lineage["edges"]
    assert rw.post(f"/v1/subjects/{s}/recall", json={}).json()["mode"] == "raw_fallback"

    deleted = rw.delete(f"/v1/subjects/{s}/facts/address", params={"reason": "user request"}).json()
    assert (deleted["status"], deleted["value"]) == ("deleted", None)
    assert rw.post(f"/v1/subjects/{s}/events/e2/revoke", params={"reason": "wrong"}).json()["state"] == "revoked"
    gone = rw.delete(f"/v1/subjects/{s}/events/e1").json()
    assert (gone["state"], gone["actor"], gone["text"]) == ("deleted", None, None)
    assert {f["fact_id"]: f["status"] for f in rw.get(f"/v1/subjects/{s}/facts", params={"status": "all"}).json()} == {
        "allergy": "deleted",
        "tz-1": "revoked",
        "tz-2": "revoked",
        "address": "deleted",
    }  # e2 left the view
    assert rw.post(f"/v1/subjects/{s}/extract").json() == {"subject_id": s, "proposals": []}

    assert admin.get("/v1/subjects").json() == {"subjects": [s]}
    assert [j["subject_id"] for j in admin.get("/v1/jobs").json()] == [s, s]  # the second: the rebuild queued
    assert admin.get("/v1/jobs", params={"status": "review"}).json() == []
    me = admin.get("/v1/key").json()
    assert (me["tenant_id"], me["scopes"]) == (tenant, ["admin"])


def test_health_metrics_and_the_openapi_document_need_no_key(service: Service) -> None:
    anonymous = service.client()
    assert anonymous.get("/healthz").json()["status"] == "ok"
    assert anonymous.get("/openapi.json").json()["info"]["title"] == "lossgate"
    metrics = anonymous.get("/metrics")
    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
    assert 'lossgate_http_requests_total{method="GET",route="/healthz",status="200"}' in metrics.text


def test_every_route_of_the_openapi_document_was_answered(service: Service) -> None:
    """The server's own metrics list each route template it answered with a 2xx; after the
    two tests above, every operation of its OpenAPI document must be among them."""
    test_a_subject_lives_its_whole_life_over_http(service)
    test_health_metrics_and_the_openapi_document_need_no_key(service)
    client = service.client()
    paths = client.get("/openapi.json").json()["paths"]
    operations = {(method.upper(), path) for path, ops in paths.items() for method in ops}
    answered = set(
        re.findall(
            r'lossgate_http_requests_total\{method="(\w+)",route="([^"]+)",status="2\d\d"\}',
            client.get("/metrics").text,
        )
    )
    assert operations - answered == set(), "routes never answered with a 2xx over HTTP"


# -- authentication --------------------------------------------------------------------------


def test_every_authentication_failure_is_the_same_401(service: Service) -> None:
    tenant = service.tenant()
    secret = service.key(tenant)
    key_id = secret.split("_")[1]
    revoked = service.key(tenant)
    service.memory.admin.revoke_api_key(tenant, revoked.split("_")[1])
    url = "/v1/subjects/u1/events"
    client = service.client()
    attempts = {
        "no header": {},
        "another scheme": {"Authorization": f"Basic {secret}"},
        "no secret": {"Authorization": "Bearer"},
        "malformed": {"Authorization": "Bearer not-a-key"},
        "unknown": {"Authorization": f"Bearer lg_{'0' * 12}_{'A' * 43}"},
        "right id, wrong secret": {"Authorization": f"Bearer lg_{key_id}_{'B' * 43}"},
        "revoked": {"Authorization": f"Bearer {revoked}"},
        "as a header of another name": {"X-API-Key": secret},
    }
    messages = set()
    for why, headers in attempts.items():
        r = client.get(url, headers=headers)
        body = error(r, 401, "unauthorized")
        assert r.headers["WWW-Authenticate"].startswith("Bearer"), why
        messages.add(body["message"])
    assert len(messages) == 2  # "a key is required" or "invalid or revoked": never which key exists
    assert client.get(url, headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    write = client.post("/v1/subjects/u1/append", json={"events": events(("e1", "hello"))})
    error(write, 401, "unauthorized")
    assert service.memory.admin.clock(tenant, "u1").high_water == 0


def test_a_key_without_the_scope_gets_403_and_writes_nothing(service: Service) -> None:
    tenant = service.tenant()
    reader = service.client(service.key(tenant, "read"))
    writer = service.client(service.key(tenant, "write"))
    admin = service.client(service.key(tenant, "admin"))
    body = {"events": events(("e1", "hello"))}
    error(reader.post("/v1/subjects/u1/append", json=body), 403, "forbidden")
    error(admin.post("/v1/subjects/u1/append", json=body), 403, "forbidden")  # admin does not include write
    assert service.memory.admin.clock(tenant, "u1").high_water == 0
    assert writer.post("/v1/subjects/u1/append", json=body).status_code == 200
    error(writer.post("/v1/subjects/u1/recall", json={}), 403, "forbidden")
    error(writer.get("/v1/subjects/u1/events"), 403, "forbidden")
    error(reader.delete("/v1/subjects/u1/events/e1"), 403, "forbidden")
    error(reader.post("/v1/subjects/u1/consolidate"), 403, "forbidden")
    error(reader.get("/v1/subjects"), 403, "forbidden")
    assert service.memory.events(tenant, "u1")[0].state == "valid" and service.memory.admin.jobs(tenant, "u1") == []
    assert reader.get("/v1/key").json()["scopes"] == ["read"]


def test_a_revoked_key_is_refused_from_the_next_request(service: Service) -> None:
    tenant = service.tenant()
    secret = service.key(tenant)
    client = service.client(secret)
    assert client.get("/v1/subjects/u1/clock").status_code == 200
    service.memory.admin.revoke_api_key(tenant, secret.split("_")[1])
    error(client.get("/v1/subjects/u1/clock"), 401, "unauthorized")


# -- tenants ---------------------------------------------------------------------------------


def test_a_key_of_one_tenant_never_reaches_another_tenants_data(service: Service) -> None:
    a, b = service.tenant("a"), service.tenant("b")
    alice = service.client(service.key(a, "read", "write"))
    bob = service.client(service.key(b, "read", "write"))
    bob_admin = service.client(service.key(b, "admin"))
    seed(alice, "shared-name")
    alice.post("/v1/subjects/shared-name/consolidate")
    work_off_the_queue(service)
    (artifact,) = alice.get("/v1/subjects/shared-name/artifacts").json()
    job_id = alice.get("/v1/subjects/shared-name/jobs").json()[0]["job_id"]
    s = "shared-name"

    # Reads of the same subject name see bob's (empty) subject, whatever the query says.
    assert bob.get(f"/v1/subjects/{s}/events", params={"tenant_id": a}).json() == []
    assert bob.get(f"/v1/subjects/{s}/facts", params={"status": "all"}).json() == []
    assert bob.get(f"/v1/subjects/{s}/attempts").json() == [] and bob.get(f"/v1/subjects/{s}/artifacts").json() == []
    assert bob.get(f"/v1/subjects/{s}/clock").json()["clock"] == {"high_water": 0, "input_epoch": 0}
    recalled = bob.post(f"/v1/subjects/{s}/recall", json={"query": "peanuts"}).json()
    assert recalled["facts"] == [] and recalled["events"] == [] and "peanut" not in recalled["rendered"]
    # bob sees his own recall record, none of alice's
    assert [r["recall_id"] for r in bob.get(f"/v1/subjects/{s}/recalls").json()] == [recalled["recall_id"]]
    assert bob_admin.get("/v1/subjects").json() == {"subjects": []}

    # Alice's ids, named by bob: exactly what a missing id answers.
    real = {"jobs": str(job_id), "artifacts": artifact["artifact_id"], "events": "e1", "facts": "tz-1"}
    for method, path, kw in (
        ("GET", f"/v1/subjects/{s}/artifacts/{{id}}/lineage", {}),
        ("GET", f"/v1/subjects/{s}/jobs/{{id}}", {}),
        ("DELETE", f"/v1/subjects/{s}/events/{{id}}", {}),
        ("POST", f"/v1/subjects/{s}/events/{{id}}/revoke", {}),
        ("DELETE", f"/v1/subjects/{s}/facts/{{id}}", {}),
        ("POST", f"/v1/subjects/{s}/facts/{{id}}/supersede", {"json": {"fact": timezone("UTC", "e1", "tz-9")}}),
    ):
        target = real[path.split("/")[4]]
        fake = "999999999" if "/jobs/" in path else "no-such-id"
        theirs = error(bob.request(method, path.format(id=target), **kw), 404, "not_found")
        missing = error(bob.request(method, path.format(id=fake), **kw), 404, "not_found")
        assert theirs["message"].replace(target, fake, 1) == missing["message"], (theirs, missing)
        assert theirs["details"] == missing["details"] == []

    # A tenant in the body is refused, never followed.
    r = bob.post(f"/v1/subjects/{s}/append", json={"tenant_id": a, "events": events(("e9", "x"))})
    assert error(r, 422, "validation_error")["details"][0]["loc"] == "body.tenant_id"
    r = bob.post(f"/v1/subjects/{s}/append", json={"events": [{**events(("e9", "x"))[0], "tenant_id": a}]})
    error(r, 422, "validation_error")
    # Bob may use alice's ids for his own records: ids are per tenant.
    mine = bob.post(f"/v1/subjects/{s}/append", json={"events": events(("e1", "bob's own e1"))}).json()
    assert [e["event_id"] for e in mine["appended"]] == ["e1"] and mine["duplicates"] == []

    # Alice's memory is as she left it.
    assert [e.state for e in service.memory.events(a, s)] == ["valid", "valid", "valid"]
    assert service.memory.facts(a, s)[0].fact_id == "allergy"
    assert [e.text for e in service.memory.events(b, s)] == ["bob's own e1"]


@pytest.mark.postgres
@pytest.mark.parametrize("service", ["postgres"], indirect=True)  # row-level security is PostgreSQL's
def test_on_postgres_the_keys_tenant_is_what_row_level_security_sees(service: Service) -> None:
    a, b = service.tenant("a"), service.tenant("b")
    alice = service.client(service.key(a))
    service.key(b)
    seed(alice, "u1")
    store = service.memory.store
    with store.tenant_connection(a) as conn:  # as lossgate_app, tenant a set, no WHERE clause
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (3,)
        assert {r[0] for r in conn.execute("SELECT tenant_id FROM api_keys")} == {a}
    with store.tenant_connection(b) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
        assert {r[0] for r in conn.execute("SELECT tenant_id FROM api_keys")} == {b}
        # knowing a hash shows that key's row and no other; a tenant's update cannot touch another's key
        (alice_hash,) = [k.key_hash for k in service.memory.admin.api_keys(a)]
        conn.execute("SELECT set_config('lossgate.key_hash', %s, true)", (alice_hash,))
        assert [r[0] for r in conn.execute("SELECT tenant_id FROM api_keys WHERE tenant_id <> %s", (b,))] == [a]
        assert conn.execute("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = %s", (a,)).rowcount == 0
    with store.tenant_connection("") as conn:  # no tenant, no hash: nothing
        assert conn.execute("SELECT count(*) FROM api_keys").fetchone() == (0,)
    assert all(k.active for k in service.memory.admin.api_keys(a))


# -- idempotency -----------------------------------------------------------------------------


def test_a_retry_with_the_same_idempotency_key_gets_the_first_answer_and_writes_nothing(service: Service) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    body = {
        "events": [{"text": "no event id: the service makes one"}, {"text": "another"}],
        "facts": [{"predicate": "subscription.seats", "value": 12, "source_event_ids": ["e1"]}],
    }
    body["events"].insert(0, {"event_id": "e1", "text": "We have 12 seats.", "occurred_at": OCCURRED})
    first = client.post("/v1/subjects/u1/append", json=body, headers={"Idempotency-Key": "retry-1"})
    assert first.status_code == 200 and "Idempotent-Replayed" not in first.headers
    # The same request again (keys in another order, other whitespace): the same answer, nothing written.
    again = client.post(
        "/v1/subjects/u1/append",
        content=json.dumps(body, indent=3, sort_keys=True),
        headers={"Idempotency-Key": "retry-1", "Content-Type": "application/json"},
    )
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert service.memory.admin.clock(tenant, "u1").high_water == 4 and len(service.memory.events(tenant, "u1")) == 3
    # The same key for another request: refused, nothing written.
    other = client.post(
        "/v1/subjects/u1/append", json={"events": [{"text": "else"}]}, headers={"Idempotency-Key": "retry-1"}
    )
    error(other, 422, "idempotency_key_reused")
    error(
        client.post("/v1/subjects/u2/append", json=body, headers={"Idempotency-Key": "retry-1"}),
        422,
        "idempotency_key_reused",
    )  # another subject is another request
    assert (
        service.memory.admin.clock(tenant, "u1").high_water == 4
        and service.memory.admin.clock(tenant, "u2").high_water == 0
    )
    # Keys are per tenant: another tenant's retry-1 is its own.
    other_tenant = service.client(service.key(service.tenant()))
    assert (
        other_tenant.post("/v1/subjects/u1/append", json=body, headers={"Idempotency-Key": "retry-1"}).headers.get(
            "Idempotent-Replayed"
        )
        is None
    )
    # Without a key, event ids still make a retry a no-op.
    plain = client.post("/v1/subjects/u1/append", json={"events": [body["events"][0]]})
    assert plain.json()["appended"] == [] and plain.json()["duplicates"] == ["e1"]


def test_concurrent_retries_with_one_key_write_once(service: Service) -> None:
    tenant = service.tenant()
    secret = service.key(tenant)
    body = {"events": [{"text": f"line {i}"} for i in range(5)]}  # fresh ids on every run: only the key dedupes
    answers: list[httpx.Response] = []
    start = threading.Barrier(6)

    def send() -> None:
        with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as c:
            start.wait()
            answers.append(c.post("/v1/subjects/u1/append", json=body, headers={"Idempotency-Key": "burst"}))

    threads = [threading.Thread(target=send) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r.status_code for r in answers] == [200] * 6, [r.text for r in answers]
    assert len({r.text for r in answers}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in answers) == 5
    assert len(service.memory.events(tenant, "u1")) == 5


# -- bad input and limits --------------------------------------------------------------------


def test_oversized_bodies_get_413_and_write_nothing(service: Service) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    huge = {"events": [{"event_id": f"e{i}", "text": "x" * 60_000} for i in range(20)]}  # about 1.2 MB
    error(client.post("/v1/subjects/u1/append", json=huge), 413, "body_too_large")

    def chunks() -> Any:  # no Content-Length: chunked, refused once it passes the limit
        yield b'{"events": ['
        for i in range(20):
            yield json.dumps({"event_id": f"c{i}", "text": "y" * 60_000}).encode() + b","
        yield b'{"event_id": "last"}]}'

    error(
        client.post("/v1/subjects/u1/append", content=chunks(), headers={"Content-Type": "application/json"}),
        413,
        "body_too_large",
    )
    assert service.memory.admin.clock(tenant, "u1").high_water == 0


@pytest.mark.parametrize(
    "content, content_type, status, code",
    [
        (b'{"events": [', "application/json", 400, "malformed_json"),
        (b'{"events": [{"text": "\xff\xfe"}]}', "application/json", 400, "malformed_json"),
        (b'{"events": [{"text": "x", "payload": {"n": NaN}}]}', "application/json", 400, "malformed_json"),
        (b'{"events": []}', "text/plain", 415, "unsupported_media_type"),
        (b"events=1", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
        (b"[1, 2]", "application/json", 422, "validation_error"),
        (b'"just a string"', "application/json", 422, "validation_error"),
    ],
)
def test_malformed_bodies_get_a_typed_4xx(
    service: Service, content: bytes, content_type: str, status: int, code: str
) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    error(client.post("/v1/subjects/u1/append", content=content, headers={"Content-Type": content_type}), status, code)
    assert service.memory.admin.clock(tenant, "u1").high_water == 0


@pytest.mark.parametrize(
    "body, status, code, where",
    [
        ({"events": [{"event_id": "e1", "text": "x" * 65_537}]}, 422, "validation_error", "body.events.0.text"),
        ({"events": [{"event_id": "e1", "text": "nul \u0000 inside"}]}, 422, "validation_error", "body.events.0.text"),
        ({"events": [{"event_id": "e1", "actor": "a" * 201}]}, 422, "validation_error", "body.events.0.actor"),
        (
            {"events": [{"event_id": "e1", "occurred_at": "2026-01-05T09:00:00"}]},
            422,
            "validation_error",
            "body.events.0.occurred_at",
        ),
        ({"events": [{"event_id": "e1", "colour": "blue"}]}, 422, "validation_error", "body.events.0.colour"),
        ({"events": [{"event_id": "e1", "kind": "gossip"}]}, 422, "validation_error", "body.events.0.kind"),
        ({"events": [{"event_id": "e" * 201}]}, 422, "validation_error", "body.events.0.event_id"),
        ({"events": [{"event_id": "e1"}] * 1001}, 422, "validation_error", "body.events"),
        (
            {"events": [{"event_id": "e1", "payload": {"deep": json.loads("[" * 70 + "]" * 70)}}]},
            422,
            "invalid_input",
            None,
        ),
        (
            {
                "events": [{"event_id": "e1"}],
                "facts": [{"predicate": "subscription.seats", "value": 50.0, "source_event_ids": ["e1"]}],
            },
            422,
            "value_type_mismatch",
            None,
        ),
        (
            {
                "events": [{"event_id": "e1"}],
                "facts": [{"predicate": "no.such", "value": 1, "source_event_ids": ["e1"]}],
            },
            422,
            "unknown_predicate",
            None,
        ),
        (
            {
                "events": [{"event_id": "e1"}],
                "facts": [{"predicate": "subscription.seats", "value": 5, "source_event_ids": ["e404"]}],
            },
            404,
            "not_found",
            None,
        ),
        (
            {
                "events": [{"event_id": "e1", "trust": "untrusted"}],
                "facts": [{"predicate": "subscription.seats", "value": 5, "source_event_ids": ["e1"]}],
            },
            422,
            "invalid_input",
            None,
        ),
        ({"events": [{"event_id": "e1", "text": "a"}, {"event_id": "e1", "text": "b"}]}, 409, "id_conflict", None),
        (
            {"facts": [{"predicate": "subscription.seats", "value": 5, "source_event_ids": []}]},
            422,
            "validation_error",
            "body.facts.0.source_event_ids",
        ),
    ],
)
def test_a_bad_field_anywhere_in_a_batch_writes_nothing_of_it(
    service: Service, body: dict[str, Any], status: int, code: str, where: str | None
) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    good = {"event_id": "good", "text": "this one alone is fine"}
    sent = {**body, "events": [good, *body.get("events", [])]}
    found = error(client.post("/v1/subjects/u1/append", json=sent), status, code)
    if where is not None:  # the good event comes first: the bad one is events.1
        assert found["details"][0]["loc"] == where.replace("body.events.0", "body.events.1"), found
    assert service.memory.admin.clock(tenant, "u1").high_water == 0 and service.memory.events(tenant, "u1") == []


def test_values_keep_their_type_over_http(service: Service) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    # Written out: JSON's numbers as the client typed them (99.950 is not 99.95 to a decimal).
    r = client.post(
        "/v1/subjects/u1/append",
        headers={"Content-Type": "application/json"},
        content=b"""{
        "events": [{"event_id": "e1", "text": "uptime and refund", "payload": {"ratio": 0.1, "n": 3}}],
        "facts": [{"fact_id": "sla", "predicate": "sla.uptime_percent", "value": 99.950, "source_event_ids": ["e1"]},
                  {"fact_id": "refund", "predicate": "refund.limit", "value": {"amount": 50.10, "currency": "USD"},
                   "qualifiers": {"condition": "after supervisor review"}, "source_event_ids": ["e1"]},
                  {"fact_id": "wait", "predicate": "response.max_wait", "value": "PT2H", "source_event_ids": ["e1"]}]
    }""",
    )
    assert r.status_code == 200, r.text
    facts = {f["fact_id"]: f for f in client.get("/v1/subjects/u1/facts").json()}
    assert facts["sla"]["value"] == "99.950" and facts["sla"]["value_type"] == "decimal"
    assert facts["refund"]["value"] == {"amount": "50.10", "currency": "USD"}
    assert facts["wait"]["value"] == "PT2H"
    (event,) = client.get("/v1/subjects/u1/events").json()
    assert event["payload"] == {"ratio": 0.1, "n": 3}
    assert service.memory.facts(tenant, "u1", predicate="sla.uptime_percent")[0].value == Decimal("99.950")


def test_bad_paths_queries_and_methods_get_typed_errors(service: Service) -> None:
    tenant = service.tenant()
    client = service.client(service.key(tenant, "read", "write", "admin"))
    error(client.get("/v1/nowhere"), 404, "not_found")
    error(client.put("/v1/subjects/u1/recall", json={}), 405, "method_not_allowed")
    error(client.get("/v1/subjects/has%20space/events"), 422, "validation_error")
    error(client.get("/v1/subjects/nul%00/events"), 422, "validation_error")
    error(client.get(f"/v1/subjects/{'s' * 201}/events"), 422, "validation_error")
    error(client.get("/v1/subjects/u1/events", params={"limit": 0}), 422, "validation_error")
    error(client.get("/v1/subjects/u1/events", params={"state": "lost"}), 422, "validation_error")
    error(client.get("/v1/subjects/u1/jobs/0"), 422, "validation_error")
    error(client.get("/v1/subjects/u1/jobs/x"), 422, "validation_error")
    error(client.delete("/v1/subjects/u1/events/e1", params={"reason": "r" * 4097}), 422, "validation_error")
    error(client.post("/v1/subjects/u1/recall", json={"k": -1}), 422, "validation_error")
    error(client.post("/v1/subjects/u1/recall", json={"query": "q" * 4097}), 422, "validation_error")
    error(
        client.post("/v1/subjects/u1/append", json={}, headers={"Idempotency-Key": "has space"}),
        422,
        "validation_error",
    )
    error(client.delete("/v1/subjects/u1/facts/none"), 404, "not_found")
    seed(client, "u1")
    error(
        client.post("/v1/subjects/u1/facts/allergy/supersede", json={"fact": {**timezone("UTC", "e2", "tz-x")}}),
        409,
        "lifecycle_conflict",
    )  # another predicate
    client.delete("/v1/subjects/u1/facts/address")
    error(
        client.post(
            "/v1/subjects/u1/facts/address/supersede",
            json={"fact": {"predicate": "contact.home_address", "value": "1 Main St", "source_event_ids": ["e2"]}},
        ),
        409,
        "lifecycle_conflict",
    )


def test_a_retry_without_idempotency_key_or_time_is_a_no_op_not_a_conflict(service: Service) -> None:
    """Found by a hostile review: an event that named its id but not its time got the
    service's "now" each try, so the retry hashed differently and was refused with 409."""
    tenant = service.tenant()
    api = service.client(service.key(tenant))
    body = {"events": [{"event_id": "rt1", "text": "same"}]}
    first = api.post("/v1/subjects/rt/append", json=body)
    again = api.post("/v1/subjects/rt/append", json=body)
    assert first.status_code == again.status_code == 200, again.text
    assert again.json()["duplicates"] == ["rt1"]
    changed = api.post("/v1/subjects/rt/append", json={"events": [{"event_id": "rt1", "text": "other"}]})
    assert changed.status_code == 409  # the same id with other content is still refused
    assert [e.event_id for e in service.memory.events(tenant, "rt")] == ["rt1"]


def test_a_payload_number_that_is_not_finite_is_refused(service: Service) -> None:
    tenant = service.tenant()
    api = service.client(service.key(tenant))
    answer = api.post(
        "/v1/subjects/nan/append",
        content=b'{"events": [{"text": "a", "payload": {"a": 1e309}}]}',
        headers={"Content-Type": "application/json"},
    )
    assert 400 <= answer.status_code < 500
    assert service.memory.events(tenant, "nan") == []
