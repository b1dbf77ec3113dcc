"""The service reads a request one way, over real HTTP on both stores: the id rule in bodies
and paths, JSON that must read back as written, durations, the Authorization header, and
path segments that hold an encoded "/". Every refusal is a typed 4xx that writes nothing.

Each test works in tenants of its own on the session's server (``conftest.py``)."""

from __future__ import annotations

import unicodedata
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lossgate import InvalidInput, NewEvent
from tests.support.service import Service, error

OCCURRED = "2026-01-05T09:12:02-05:00"
CHALLENGE = 'Bearer realm="lossgate"'

# One of each kind of character an id may not hold (Unicode Z, Cc, Cf, and NUL).
BAD_CHARS = {
    "space": " ",
    "tab": "\t",
    "newline": "\n",
    "carriage return": "\r",
    "unit separator": "\x1f",
    "next line": "\x85",
    "nbsp": "\u00a0",
    "ideographic space": "\u3000",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "zero width space": "\u200b",
    "zero width joiner": "\u200d",
    "word joiner": "\u2060",
    "rtl override": "\u202e",
    "rtl mark": "\u200f",
    "bom": "\ufeff",
    "soft hyphen": "\u00ad",
    "nul": "\x00",
}


def shown_escaped(body: dict[str, Any], bad: str) -> None:
    """The message names the character by its code point, never raw (a message has spaces)."""
    assert bad == " " or bad not in body["message"], body["message"]


def nothing_written(service: Service, tenant: str) -> None:
    assert service.memory.admin.subjects(tenant) == []


def post_raw(client: httpx.Client, path: str, text: str) -> httpx.Response:
    return client.post(path, content=text.encode(), headers={"Content-Type": "application/json"})


@pytest.fixture
def api(service: Service) -> tuple[str, httpx.Client]:
    tenant = service.tenant()
    return tenant, service.client(service.key(tenant))


# -- ids in bodies -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_CHARS.values(), ids=BAD_CHARS.keys())
def test_an_id_with_a_bad_character_in_an_append_body_is_refused(service: Service, api, bad: str) -> None:
    tenant, client = api
    good = {"event_id": "good", "text": "fine on its own", "occurred_at": OCCURRED}
    refused = error(
        client.post("/v1/subjects/u1/append", json={"events": [good, {**good, "event_id": f"e{bad}1"}]}),
        422,
        "validation_error",
    )
    assert refused["details"][0]["loc"] == "body.events.1.event_id"
    shown_escaped(refused, bad)
    fact = {"fact_id": f"f{bad}", "predicate": "timezone", "value": "UTC", "source_event_ids": ["good"]}
    refused = error(
        client.post("/v1/subjects/u1/append", json={"events": [good], "facts": [fact]}), 422, "validation_error"
    )
    assert refused["details"][0]["loc"] == "body.facts.0.fact_id"
    nothing_written(service, tenant)


@settings(max_examples=25, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_character_of_the_forbidden_categories_is_refused_in_an_event_id(service: Service, data) -> None:
    bad = data.draw(st.characters(categories=["Zs", "Zl", "Zp", "Cc", "Cf"]), label="bad")
    assert unicodedata.category(bad) in ("Zs", "Zl", "Zp", "Cc", "Cf")
    tenant = service.tenant()
    client = service.client(service.key(tenant))
    refused = error(
        client.post("/v1/subjects/u1/append", json={"events": [{"event_id": f"msg{bad}41"}]}), 422, "validation_error"
    )
    shown_escaped(refused, bad)
    nothing_written(service, tenant)


def test_a_source_event_id_that_was_never_stored_is_not_found(service: Service, api) -> None:
    tenant, client = api
    body = {
        "events": [{"event_id": "e1", "text": "x", "occurred_at": OCCURRED}],
        "facts": [{"predicate": "timezone", "value": "UTC", "source_event_ids": ["e1\u202e"]}],
    }
    refused = error(client.post("/v1/subjects/u1/append", json=body), 404, "not_found")
    shown_escaped(refused, "\u202e")
    nothing_written(service, tenant)


# -- ids in paths ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_CHARS.values(), ids=BAD_CHARS.keys())
def test_a_subject_with_a_bad_character_in_the_path_is_refused(service: Service, api, bad: str) -> None:
    tenant, client = api
    subject = quote(f"user{bad}17", safe="")
    for response in (
        client.post(f"/v1/subjects/{subject}/append", json={"events": [{"event_id": "e1"}]}),
        client.post(f"/v1/subjects/{subject}/recall", json={"query": "peanuts"}),
        client.post(f"/v1/subjects/{subject}/consolidate"),
        client.get(f"/v1/subjects/{subject}/events"),
    ):
        refused = error(response, 422, "validation_error")
        assert refused["details"][0]["loc"] == "path.subject_id"
        shown_escaped(refused, bad)
    nothing_written(service, tenant)


@pytest.mark.parametrize("bad", ["\u200b", "\u202e", "\n", " "], ids=["zero width", "rtl", "newline", "space"])
def test_an_event_or_fact_id_in_the_path_is_looked_up_as_given(service: Service, api, bad: str) -> None:
    tenant, client = api
    assert (
        client.post(
            "/v1/subjects/u1/append",
            json={
                "events": [{"event_id": "e1", "occurred_at": OCCURRED}],
                "facts": [{"fact_id": "f1", "predicate": "timezone", "value": "UTC", "source_event_ids": ["e1"]}],
            },
        ).status_code
        == 200
    )
    before = (service.memory.events(tenant, "u1"), service.memory.facts(tenant, "u1", statuses=None))
    for response in (
        client.delete(f"/v1/subjects/u1/events/{quote('e1' + bad, safe='')}"),
        client.post(f"/v1/subjects/u1/events/{quote('e1' + bad, safe='')}/revoke"),
        client.delete(f"/v1/subjects/u1/facts/{quote('f1' + bad, safe='')}"),
    ):
        shown_escaped(error(response, 404, "not_found"), bad)
    assert (service.memory.events(tenant, "u1"), service.memory.facts(tenant, "u1", statuses=None)) == before


@pytest.mark.parametrize(
    "path",
    [
        "/v1/subjects/a%2Fevents",
        "/v1/subjects/a%2fevents",
        "/v1/subjects/a%2F..%2Fb/events",
        "/v1/subjects/u1/events/e1%2Frevoke",
        "/v1/subjects/u1%2Fevents/e1/revoke",
    ],
)
def test_an_encoded_slash_in_a_path_segment_is_refused(service: Service, api, path: str) -> None:
    tenant, client = api
    assert (
        client.post("/v1/subjects/a/append", json={"events": [{"event_id": "e1", "occurred_at": OCCURRED}]}).status_code
        == 200
    )
    before = service.memory.events(tenant, "a")
    for method in ("GET", "POST", "DELETE"):
        refused = error(client.request(method, path), 422, "validation_error")
        assert refused["details"] == [{"loc": "path", "message": refused["message"], "type": "encoded_slash"}]
    assert service.memory.events(tenant, "a") == before and service.memory.admin.subjects(tenant) == ["a"]


@pytest.mark.parametrize("segment", ["%FF", "%FE", "%C3%28", "a%80b"])
def test_a_path_segment_that_is_not_utf8_is_refused_not_merged_into_one_subject(
    service: Service, api, segment: str
) -> None:
    tenant, client = api
    refused = error(
        client.post(f"/v1/subjects/{segment}/append", json={"events": [{"event_id": "e1"}]}), 422, "validation_error"
    )
    assert refused["details"] == [{"loc": "path", "message": refused["message"], "type": "invalid_utf8"}]
    assert service.memory.admin.subjects(tenant) == []


def test_an_id_holding_a_slash_is_refused_on_every_path(service: Service, api) -> None:
    tenant, client = api
    r = client.post("/v1/subjects/u1/append", json={"events": [{"event_id": "ev/1"}]})
    assert error(r, 422, "validation_error")["details"][0]["loc"].endswith("event_id")
    with pytest.raises(InvalidInput, match="'/'"):
        service.memory.append([NewEvent(tenant_id=tenant, subject_id="sl/ash", event_id="e1")])
    assert service.memory.admin.subjects(tenant) == []


def test_an_encoded_percent_is_an_ordinary_character_of_an_id(service: Service, api) -> None:
    tenant, client = api
    assert client.post("/v1/subjects/a%252Fb/append", json={"events": [{"event_id": "e1"}]}).status_code == 200
    assert service.memory.admin.subjects(tenant) == ["a%2Fb"]


# -- JSON that would not read back as written ----------------------------------------------

UNREADABLE = {
    "duplicate top-level key": (
        '{"events": [], "events": [{"event_id": "e1"}]}',
        "body",
        "duplicate_key",
        "duplicate key 'events'",
    ),
    "duplicate event field": (
        '{"events": [{"event_id": "e1", "event_id": "e2"}]}',
        "body.events.0",
        "duplicate_key",
        "duplicate key 'event_id'",
    ),
    "duplicate payload key": (
        '{"events": [{"event_id": "e1", "payload": {"a": 1, "a": 2}}]}',
        "body.events.0.payload",
        "duplicate_key",
        "duplicate key 'a'",
    ),
    "duplicate qualifier": (
        '{"events": [{"event_id": "e1"}], "facts": [{"predicate": "refund.limit", "value": '
        '{"amount": "5", "currency": "USD"}, "qualifiers": {"condition": "a", "condition": "b"}, '
        '"source_event_ids": ["e1"]}]}',
        "body.facts.0.qualifiers",
        "duplicate_key",
        "duplicate key 'condition'",
    ),
    "duplicate money amount": (
        '{"events": [{"event_id": "e1"}], "facts": [{"predicate": "refund.limit", "value": '
        '{"amount": "5", "amount": "5000", "currency": "USD"}, "source_event_ids": ["e1"]}]}',
        "body.facts.0.value",
        "duplicate_key",
        "duplicate key 'amount'",
    ),
    "1e-400 in a payload": (
        '{"events": [{"event_id": "e1", "payload": {"x": 1e-400}}]}',
        "body.events.0.payload.x",
        "number_out_of_range",
        "1e-400 at events.0.payload.x",
    ),
    "-1e-400 in a payload": (
        '{"events": [{"event_id": "e1", "payload": {"x": [-1e-400]}}]}',
        "body.events.0.payload.x.0",
        "number_out_of_range",
        "would read as 0",
    ),
    "1e999 in a payload": (
        '{"events": [{"event_id": "e1", "payload": {"x": 1e999}}]}',
        "body.events.0.payload.x",
        "number_out_of_range",
        "would read as infinity",
    ),
    "1e-400 as a value": (
        '{"events": [{"event_id": "e1"}], "facts": [{"predicate": "sla.uptime_percent", '
        '"value": 1e-400, "source_event_ids": ["e1"]}]}',
        "body.facts.0.value",
        "number_out_of_range",
        "1e-400",
    ),
}


@pytest.mark.parametrize("text, loc, kind, fragment", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_json_that_would_not_read_back_as_written_is_a_400_naming_where(
    service: Service, api, text: str, loc: str, kind: str, fragment: str
) -> None:
    tenant, client = api
    refused = error(post_raw(client, "/v1/subjects/u1/append", text), 400, "malformed_json")
    assert fragment in refused["message"], refused
    assert [(d["loc"], d["type"]) for d in refused["details"]] == [(loc, kind)]
    nothing_written(service, tenant)


def test_every_body_is_read_the_same_way(service: Service, api) -> None:
    tenant, client = api
    assert (
        client.post(
            "/v1/subjects/u1/append",
            json={
                "events": [{"event_id": "e1", "occurred_at": OCCURRED}],
                "facts": [{"fact_id": "tz", "predicate": "timezone", "value": "UTC", "source_event_ids": ["e1"]}],
            },
        ).status_code
        == 200
    )
    before = (service.memory.admin.recalls(tenant, "u1"), service.memory.facts(tenant, "u1", statuses=None))
    error(post_raw(client, "/v1/subjects/u1/recall", '{"query": "tz", "query": "timezone"}'), 400, "malformed_json")
    error(
        post_raw(
            client,
            "/v1/subjects/u1/facts/tz/supersede",
            '{"fact": {"predicate": "timezone", "value": "UTC+1", "value": "UTC+2", "source_event_ids": ["e1"]}}',
        ),
        400,
        "malformed_json",
    )
    assert (service.memory.admin.recalls(tenant, "u1"), service.memory.facts(tenant, "u1", statuses=None)) == before


def test_a_number_that_is_zero_as_written_is_kept(service: Service, api) -> None:
    tenant, client = api
    answer = post_raw(client, "/v1/subjects/u1/append", '{"events": [{"event_id": "e1", "payload": {"x": 0e-999}}]}')
    assert answer.status_code == 200, answer.text
    assert service.memory.events(tenant, "u1")[0].payload == {"x": 0.0}


# -- durations -------------------------------------------------------------------------------


def wait(value: str, event_id: str = "e1") -> dict[str, Any]:
    return {
        "events": [{"event_id": event_id, "occurred_at": OCCURRED}],
        "facts": [{"predicate": "response.max_wait", "value": value, "source_event_ids": [event_id]}],
    }


@pytest.mark.parametrize("value", ["P-1D", "P1.5D", "PT1.5H", "+P1D", "P1Y", "PT0.0000001S", "P1D\n", "-P"])
def test_a_duration_that_would_be_re_read_is_refused(service: Service, api, value: str) -> None:
    tenant, client = api
    refused = error(client.post("/v1/subjects/u1/append", json=wait(value)), 422, "value_type_mismatch")
    assert "ISO 8601 duration" in refused["message"]
    nothing_written(service, tenant)


def test_a_duration_reads_back_as_written_or_in_its_canonical_form(service: Service, api) -> None:
    _, client = api
    written = {"-P1D": "-P1D", "PT1H30M": "PT1H30M", "PT36H": "P1DT12H", "P1W": "P7D", "PT0.5S": "PT0.5S"}
    for number, (value, stored) in enumerate(written.items()):
        answer = client.post(f"/v1/subjects/u{number}/append", json=wait(value, f"e{number}"))
        assert answer.status_code == 200, answer.text
        (fact,) = client.get(f"/v1/subjects/u{number}/facts").json()
        assert fact["value"] == stored, value


# -- the Authorization header ----------------------------------------------------------------


def test_the_authorization_header_is_read_strictly(service: Service) -> None:
    tenant = service.tenant()
    secret = service.key(tenant)
    client = service.client()
    body = {"events": [{"event_id": "e1"}]}
    for why, headers in {
        "two spaces": [("Authorization", f"Bearer  {secret}")],
        "lower-case scheme": [("Authorization", f"bearer {secret}")],
        "upper-case scheme": [("Authorization", f"BEARER {secret}")],
        "a tab": [("Authorization", f"Bearer\t{secret}")],
        "a colon": [("Authorization", f"Bearer: {secret}")],
        "something after": [("Authorization", f"Bearer {secret} {secret}")],
        "two headers": [("Authorization", f"Bearer {secret}"), ("Authorization", f"Bearer {secret}")],
        "a comma list": [("Authorization", f"Bearer {secret}, Basic x")],
    }.items():
        refused = client.post("/v1/subjects/u1/append", json=body, headers=headers)
        error(refused, 401, "unauthorized")
        assert refused.headers["WWW-Authenticate"] == CHALLENGE, why
        assert client.get("/ui", headers=headers).status_code == 401, why  # the inspection page reads it alike
    nothing_written(service, tenant)
    assert (
        client.post("/v1/subjects/u1/append", json=body, headers={"Authorization": f"Bearer {secret}"}).status_code
        == 200
    )
