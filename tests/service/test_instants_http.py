"""Over HTTP, a time without a UTC form is a 422 naming the field, and nothing is written."""

from __future__ import annotations

import pytest

from tests.support.service import Service


@pytest.mark.parametrize(
    "at",
    [
        "9999-12-31T23:59:59-05:00",
        "0001-01-01T00:00:00+05:00",
        "2026-03-14T10:00:00",
        1700000000,
        0,
        "1700000000",
        "9999-12-31T23:59:59.999999-00:00:00.000001",
        "2024-01-01T00:00:00.1234567891Z",
    ],
)
def test_append_refuses_an_instant_outside_the_range_and_writes_nothing(service: Service, at: str | int) -> None:
    tenant = service.tenant()
    rw = service.client(service.key(tenant, "read", "write"))

    r = rw.post("/v1/subjects/u1/append", json={"events": [{"event_id": "e1", "text": "hi", "occurred_at": at}]})
    fact = rw.post(
        "/v1/subjects/u1/append",
        json={
            "events": [{"event_id": "e2", "text": "hi"}],
            "facts": [{"predicate": "timezone", "value": "UTC", "source_event_ids": ["e2"], "valid_from": at}],
        },
    )

    for answer, field in ((r, "occurred_at"), (fact, "valid_from")):
        assert answer.status_code == 422, answer.text
        body = answer.json()
        assert body["code"] == "validation_error" and body["details"][0]["loc"].endswith(field), body
    assert rw.get("/v1/subjects/u1/events").json() == []


def test_append_keeps_both_ends_of_the_range(service: Service) -> None:
    tenant = service.tenant()
    rw = service.client(service.key(tenant, "read", "write"))
    ends = ["9999-12-31T23:59:59.999999+00:00", "0001-01-01T00:00:00+00:00"]

    r = rw.post(
        "/v1/subjects/u1/append",
        json={
            "events": [
                {"event_id": f"e{i}", "text": "see you tomorrow", "occurred_at": at} for i, at in enumerate(ends)
            ]
        },
    )

    assert r.status_code == 200, r.text
    stored = [e["occurred_at"] for e in rw.get("/v1/subjects/u1/events").json()]
    assert [s[:10] for s in stored] == ["9999-12-31", "0001-01-01"]
