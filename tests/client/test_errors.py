"""Every error code the service answers, provoked through the client against a real
``lossgate serve`` and raised as lossgate's exception for it, on both stores and in both
flavours. The codes a correct service answers only under load or outage (``store_busy``,
``store_unavailable``) are provoked in ``test_retries.py``; ``internal_error``, a bug's, only
by a stand-in there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lossgate import errors as lg
from lossgate.client import NO_RETRY, EventIn, FactIn
from lossgate.client.calls import MAX_BODY_BYTES
from lossgate.client.errors import EXCEPTIONS
from lossgate.service.bodies import DEFAULT_MAX_BODY_BYTES
from lossgate.service.errors import CODES, LOSSGATE_CODES, from_lossgate
from tests.support.client import BARE_MAX_BODY_BYTES, OCCURRED, Connect, Served, answered

S = "u1"
APPEND = "/v1/subjects/{subject_id}/append"
ALLERGY = FactIn(
    fact_id="allergy",
    predicate="food.peanuts_allowed",
    value=False,
    qualifiers={"basis": "allergy", "severity": "critical"},
    source_event_ids=["e1"],
)


def with_allergy(served: Served, connect: Connect) -> tuple[Any, str]:
    """A read-write client of a fresh tenant whose subject ``u1`` has an event and a fact."""
    tenant = served.tenant()
    memory = connect(served.url, served.key(tenant))
    memory.append(S, [EventIn(event_id="e1", text="I am allergic to peanuts.", occurred_at=OCCURRED)], [ALLERGY])
    return memory, tenant


def _json(memory: Any, content: bytes, content_type: str = "application/json") -> Any:
    return memory.request("POST", f"/v1/subjects/{S}/append", content=content, headers={"Content-Type": content_type})


# code -> (the exception raised, how to provoke it with such a client)
PROVOKED: dict[str, tuple[type[lg.LossgateError], Callable[[Served, Connect, Any, str], Any]]] = {
    "malformed_json": (lg.InvalidInput, lambda sv, c, m, t: _json(m, b'{"events": [{"text": "x", "text": "y"}]}')),
    "unauthorized": (lg.Unauthorized, lambda sv, c, m, t: c(sv.url, f"lg_{'0' * 12}_{'A' * 43}").events(S)),
    "forbidden": (lg.Forbidden, lambda sv, c, m, t: c(sv.url, sv.key(t, "read")).append(S, [EventIn(text="x")])),
    "not_found": (lg.NotFound, lambda sv, c, m, t: m.delete_fact(S, "no-such-fact")),
    "method_not_allowed": (lg.InvalidInput, lambda sv, c, m, t: m.request("PUT", f"/v1/subjects/{S}/recall", json={})),
    "id_conflict": (
        lg.IdempotencyConflict,
        lambda sv, c, m, t: m.append(S, [EventIn(event_id="e1", text="other", occurred_at=OCCURRED)]),
    ),
    "lifecycle_conflict": (
        lg.LifecycleError,
        lambda sv, c, m, t: m.supersede(
            S, "allergy", FactIn(predicate="timezone", value="UTC", source_event_ids=["e1"])
        ),
    ),
    "unsupported_media_type": (lg.InvalidInput, lambda sv, c, m, t: _json(m, b'{"events": []}', "text/plain")),
    "validation_error": (lg.InvalidInput, lambda sv, c, m, t: m.events("has space")),
    "invalid_input": (
        lg.InvalidInput,
        lambda sv, c, m, t: m.append(
            S,
            [EventIn(event_id="u-1", trust="untrusted", occurred_at=OCCURRED)],
            [FactIn(predicate="subscription.seats", value=5, source_event_ids=["u-1"])],
        ),
    ),
    "unknown_predicate": (
        lg.UnknownPredicate,
        lambda sv, c, m, t: m.append(S, [], [FactIn(predicate="no.such", value=1, source_event_ids=["e1"])]),
    ),
    "value_type_mismatch": (
        lg.ValueTypeError,
        lambda sv, c, m, t: m.append(
            S, [], [FactIn(predicate="subscription.seats", value="twelve", source_event_ids=["e1"])]
        ),
    ),
    "idempotency_key_reused": (
        lg.IdempotencyConflict,
        lambda sv, c, m, t: [m.append(S, [EventIn(text=text)], idempotency_key="once") for text in ("first", "second")],
    ),
}
# provoked elsewhere: a server without a registry and with a small body limit (below), busy and
# unavailable databases and a stand-in for a bug's answer (test_retries.py)
ELSEWHERE = {"not_configured", "body_too_large", "store_busy", "store_unavailable", "internal_error"}


def test_each_code_of_the_service_raises_one_lossgate_exception_the_one_it_was_answered_for() -> None:
    assert set(EXCEPTIONS) == set(CODES)
    assert set(PROVOKED) | ELSEWHERE == set(CODES), "a code no test provokes"
    for kind, code in LOSSGATE_CODES:
        assert EXCEPTIONS[code] is kind
    # every lossgate error the service answers comes back as itself, or as the class it is one of
    raised = [
        lg.InvalidInput,
        lg.UnknownPredicate,
        lg.ValueTypeError,
        lg.NotFound,
        lg.IdempotencyConflict,
        lg.LifecycleError,
        lg.StoreError,
        lg.UnknownFormat,
        lg.StoreBusy,
        lg.ConfigError,
        lg.EmbeddingError,
        lg.LossgateError,
    ]
    for kind in raised:
        back = EXCEPTIONS[from_lossgate(kind("x")).code]
        assert issubclass(kind, back), (kind, back)
        assert back is kind or kind in (lg.UnknownFormat, lg.EmbeddingError)


@pytest.mark.parametrize("code", sorted(PROVOKED))
def test_every_error_code_is_raised_as_its_lossgate_exception(served: Served, connect: Connect, code: str) -> None:
    memory, tenant = with_allergy(served, connect)
    kind, provoke = PROVOKED[code]
    with pytest.raises(lg.LossgateError) as caught:
        provoke(served, connect, memory, tenant)
    exc = caught.value
    assert type(exc) is kind and exc.code == code, (type(exc), exc.code, str(exc))
    assert str(exc) and "\n" not in str(exc)
    assert any(f"answered {CODES[code]} {code}" in note for note in exc.__notes__)  # type: ignore[attr-defined]
    assert [e.event_id for e in served.memory.events(tenant, S)] == ["e1"] or code == "idempotency_key_reused"


def test_a_validation_error_names_each_field_and_writes_nothing(served: Served, connect: Connect) -> None:
    memory, tenant = with_allergy(served, connect)
    with pytest.raises(lg.InvalidInput) as caught:
        memory.events(S, limit=0)
    assert caught.value.code == "validation_error"
    assert [d["loc"] for d in caught.value.details] == ["query.limit"]
    # what the service's request models refuse is refused before it is sent, the same way
    with pytest.raises(lg.InvalidInput) as local:
        memory.append(S, [EventIn(event_id=f"e-{i}") for i in range(1001)])
    assert local.value.code == "validation_error" and local.value.details[0]["loc"] == "body.events"
    with pytest.raises(lg.InvalidInput, match="^body.k: ") as local:
        memory.recall(S, "peanuts", k=-1)
    assert local.value.code == "validation_error" and local.value.details[0]["type"] == "greater_than_equal"
    assert memory.recalls(S) == []  # never sent: a recall would have left its record
    with pytest.raises(lg.InvalidInput, match="body.events.0.payload.ratio: NaN and infinity"):
        memory.append(S, [EventIn(event_id="nan", payload={"ratio": float("nan")})])  # pydantic would send null
    assert [e.event_id for e in served.memory.events(tenant, S)] == ["e1"]


def test_a_revoked_key_is_unauthorized_from_the_next_call(served: Served, connect: Connect) -> None:
    tenant = served.tenant()
    secret = served.key(tenant)
    memory = connect(served.url, secret, retry=NO_RETRY)
    assert memory.clock(S).clock.high_water == 0
    served.memory.admin.revoke_api_key(tenant, secret.split("_")[1])
    with pytest.raises(lg.Unauthorized) as caught:
        memory.clock(S)
    assert isinstance(caught.value, lg.AccessDenied) and caught.value.code == "unauthorized"
    with pytest.raises(lg.Unauthorized):
        connect(served.url).key()  # no key at all


def test_another_tenants_ids_are_not_found_as_missing_ones_are(served: Served, connect: Connect) -> None:
    alice, _ = with_allergy(served, connect)
    bob = connect(served.url, served.key(served.tenant()))
    with pytest.raises(lg.NotFound) as theirs:
        bob.delete_event(S, "e1")
    with pytest.raises(lg.NotFound) as missing:
        bob.delete_event(S, "e-none")
    assert str(theirs.value).replace("e1", "e-none", 1) == str(missing.value)
    assert [f.fact_id for f in alice.facts(S)] == ["allergy"]


def test_facts_without_a_registry_are_not_configured(bare: Served, connect: Connect) -> None:
    memory = connect(bare.url, bare.key(bare.tenant()))
    with pytest.raises(lg.ConfigError) as caught:
        memory.append(S, [EventIn(event_id="e1", text="x")], [ALLERGY])
    assert caught.value.code == "not_configured"
    with pytest.raises(lg.ConfigError):
        memory.extract(S)
    assert memory.append(S, [EventIn(event_id="e1", text="x")]).appended[0].seq == 1  # events need no registry


def test_a_body_over_the_services_limit_is_body_too_large(bare: Served, connect: Connect) -> None:
    tenant = bare.tenant()
    big = [EventIn(event_id="big", text="x" * (BARE_MAX_BODY_BYTES + 100))]
    unchecked = connect(bare.url, bare.key(tenant), max_body_bytes=None)
    with pytest.raises(lg.InvalidInput) as answered:  # sent: the service refuses it
        unchecked.append(S, big)
    assert answered.value.code == "body_too_large" and "over the limit of 8,192 bytes" in str(answered.value)
    told = connect(bare.url, bare.key(tenant), max_body_bytes=BARE_MAX_BODY_BYTES)
    with pytest.raises(lg.InvalidInput) as refused:  # refused before it is sent
        told.append(S, big)
    assert refused.value.code == "body_too_large" and "over the service's limit of 8,192" in str(refused.value)
    assert bare.memory.events(tenant, S) == []


def test_a_client_refuses_a_body_over_the_services_default_limit_before_sending_it(
    served: Served, connect: Connect
) -> None:
    assert MAX_BODY_BYTES == DEFAULT_MAX_BODY_BYTES
    memory, tenant = with_allergy(served, connect)
    before = answered(memory.metrics(), "POST", APPEND)
    with pytest.raises(lg.InvalidInput) as caught:
        memory.append(S, [EventIn(event_id=f"big-{i}", text="x" * 60_000) for i in range(20)])
    assert caught.value.code == "body_too_large"
    assert answered(memory.metrics(), "POST", APPEND) == before, "nothing reached the service"
    assert [e.event_id for e in served.memory.events(tenant, S)] == ["e1"]
