"""Properties of the gate over generated ledgers (hypothesis).

* An artifact equal to the expected ledger passes, under any reordering of claims,
  qualifiers and derived_from, and any respelling of equal typed values.
* Removing or altering a critical fact always fails, naming that fact.
* No claim value, however malformed, makes the gate raise.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossgate.gate import build_must_preserve, check
from lossgate.model.records import ArtifactBody, Claim, Clock, Event, Fact, Snapshot
from lossgate.model.registry import load_registry
from lossgate.model.values import coerce_value, encode_value
from tests.support.gate import FIXTURES

REGISTRY = load_registry(FIXTURES / "predicates.toml")
PREDICATES = sorted(REGISTRY.predicates.values(), key=lambda p: p.name)
T0 = datetime(2026, 3, 1, tzinfo=UTC)
T, S = "acme", "user-17"
SETTINGS = settings(max_examples=150)

TEXT = st.text(st.characters(codec="utf-8", categories=("L", "N", "Zs", "P")), min_size=1, max_size=20).filter(
    lambda s: s.strip() == s and s
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "bool": st.booleans(),
    "int": st.integers(-(10**9), 10**9),
    "decimal": st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False, allow_infinity=False),
    "money": st.builds(
        lambda a, c: {"amount": str(a), "currency": c},
        st.decimals(min_value=0, max_value=10**7, places=2, allow_nan=False, allow_infinity=False),
        st.sampled_from(["USD", "EUR", "GBP"]),
    ),
    "date": st.dates(),
    "datetime": st.builds(
        lambda d, h: d.replace(tzinfo=timezone(timedelta(hours=h))),
        st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1)),
        st.integers(-11, 12),
    ),
    # Below a year: see test_a_year_long_duration_round_trips for what happens above.
    "duration": st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=364)),
    "string": TEXT,
    "entity_id": st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,10}", fullmatch=True),
}


@st.composite
def ledgers(draw: st.DrawFn) -> tuple[Snapshot, list[Claim]]:
    """A snapshot of 1-10 facts (some retired) over a few valid events, and its correct claims."""
    events = [
        Event(
            tenant_id=T,
            subject_id=S,
            event_id=f"e-{i}",
            seq=i + 1,
            kind="message",
            actor="user",
            trust="authenticated_user",
            text="",
            payload={},
            occurred_at=T0,
            recorded_at=T0,
            content_hash=f"sha256:{i:064x}",
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    facts, claims = [], []
    for i in range(draw(st.integers(1, 10))):
        pred = draw(st.sampled_from(PREDICATES))
        raw = draw(st.sampled_from(pred.enum_values) if pred.value_type == "enum" else VALUES[pred.value_type])
        value = coerce_value(pred.value_type, raw, enum_values=pred.enum_values)
        quals = tuple(sorted((k, draw(TEXT)) for k in pred.qualifiers if draw(st.booleans())))
        sources = tuple(sorted(draw(st.sets(st.sampled_from([e.event_id for e in events]), min_size=1, max_size=2))))
        status = draw(st.sampled_from(["active"] * 4 + ["superseded", "deleted", "revoked"]))
        polarity = draw(st.sampled_from(["positive", "negative"]))
        fid = f"f-{i}"
        facts.append(
            Fact(
                tenant_id=T,
                subject_id=S,
                fact_id=fid,
                seq=100 + i,
                predicate=pred.name,
                registry_version=1,
                value_type=pred.value_type,
                value=None if status == "deleted" else value,
                qualifiers=quals,
                polarity=polarity,
                source_event_ids=sources,
                status=status,
                recorded_at=T0,
                content_hash=f"sha256:{i:064x}",
            )
        )
        if status == "active":
            claims.append(
                Claim(
                    fact_id=fid,
                    tenant_id=T,
                    subject_id=S,
                    predicate=pred.name,
                    value_type=pred.value_type,
                    value=encode_value(pred.value_type, value),
                    qualifiers=quals,
                    polarity=polarity,
                    derived_from=sources,
                )
            )
    snapshot = Snapshot(
        tenant_id=T,
        subject_id=S,
        clock=Clock(tenant_id=T, subject_id=S, high_water=200),
        registry_version=1,
        events=tuple(events),
        facts=tuple(facts),
    )
    return snapshot, claims


def artifact(snapshot: Snapshot, claims: list[Claim]) -> ArtifactBody:
    obligations = {
        f.fact_id for f in snapshot.facts if f.status == "active" and REGISTRY.get(f.predicate).category == "obligation"
    }
    return ArtifactBody(
        tenant_id=T,
        subject_id=S,
        claims=tuple(claims),
        open_items=tuple(c.fact_id for c in claims if c.fact_id in obligations),
    )


def respell(c: Claim) -> Any:
    """An equal typed value, spelled differently."""
    v = c.value
    if c.value_type == "money":
        return {"currency": v["currency"], "amount": v["amount"] + ("0" if "." in v["amount"] else ".00")}
    if c.value_type == "decimal":
        return v + ("0" if "." in v else ".0")
    if c.value_type == "duration":
        return coerce_value("duration", v)  # the timedelta itself
    return v


@pytest.mark.slow
@SETTINGS
@given(ledgers(), st.randoms(use_true_random=False), st.booleans())
def test_the_expected_ledger_passes_in_any_order(ledger: tuple[Snapshot, list[Claim]], rnd, spell: bool) -> None:
    snapshot, claims = ledger
    baseline = check(snapshot, artifact(snapshot, claims), REGISTRY)
    assert baseline.outcome == "clean", baseline.lines()
    shuffled = []
    for c in claims:
        quals = list(c.qualifiers)
        rnd.shuffle(quals)
        cited = [*c.derived_from, c.fact_id]
        rnd.shuffle(cited)
        shuffled.append(
            Claim(
                **{
                    **c.model_dump(),
                    "qualifiers": dict(quals),
                    "derived_from": tuple(cited),
                    "value": respell(c) if spell else c.value,
                }
            )
        )
    rnd.shuffle(shuffled)
    facts = list(snapshot.facts)
    rnd.shuffle(facts)
    moved = snapshot.model_copy(update={"facts": tuple(facts)})
    again = check(moved, artifact(moved, shuffled), REGISTRY)
    assert again == baseline


def alter(c: Claim, how: int) -> dict[str, Any]:
    """One meaning change of a claim (an update for ``model_copy``)."""
    v, vt = c.value, c.value_type
    if how == 0:
        return {"polarity": "negative" if c.polarity == "positive" else "positive"}
    if how == 1:
        return {"subject_id": S + "-2"}
    if how == 2 and c.qualifiers:
        return {"qualifiers": c.qualifiers[1:]}
    changed: Any
    if vt == "bool":
        changed = not v
    elif vt == "int":
        changed = v + 1
    elif vt == "decimal":
        changed = str(Decimal(v) + Decimal("0.01"))
    elif vt == "money":
        changed = {**v, "amount": str(Decimal(v["amount"]) + Decimal("0.01"))}
    elif vt == "date":
        changed = (datetime.fromisoformat(v) + timedelta(days=1)).date().isoformat()
    elif vt == "datetime":
        changed = (datetime.fromisoformat(v) + timedelta(minutes=1)).isoformat()
    elif vt == "duration":
        changed = coerce_value("duration", v) + timedelta(seconds=1)
    elif vt == "enum":
        choices = REGISTRY.get(c.predicate).enum_values
        changed = choices[(choices.index(v) + 1) % len(choices)]
    else:
        changed = v + "x"
    return {"value": changed}


@pytest.mark.slow
@SETTINGS
@given(ledgers(), st.data())
def test_a_critical_fact_removed_or_altered_always_fails(ledger: tuple[Snapshot, list[Claim]], data) -> None:
    snapshot, claims = ledger
    must = build_must_preserve(snapshot, REGISTRY)
    critical = [i for i, c in enumerate(claims) if must.loss_severity(c.fact_id) == "critical"]
    if not critical:
        return
    i = data.draw(st.sampled_from(critical))
    target = claims[i].fact_id
    how = data.draw(st.integers(-1, 3))
    mutated = list(claims)
    if how < 0:
        del mutated[i]
    else:
        mutated[i] = claims[i].model_copy(update=alter(claims[i], how))
    result = check(snapshot, artifact(snapshot, claims).model_copy(update={"claims": tuple(mutated)}), REGISTRY)
    assert result.outcome == "failed"
    assert target in {v.subject for v in result.violations}


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.decimals(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@pytest.mark.slow
@SETTINGS
@given(
    ledgers(),
    JSON,
    st.sampled_from(["bool", "int", "decimal", "money", "date", "datetime", "duration", "string", "enum", "entity_id"]),
)
def test_no_claim_value_makes_the_gate_raise(ledger: tuple[Snapshot, list[Claim]], junk: Any, vt: str) -> None:
    snapshot, claims = ledger
    if not claims:
        return
    claims[0] = claims[0].model_copy(update={"value": junk, "value_type": vt})
    result = check(snapshot, artifact(snapshot, claims), REGISTRY)
    assert result.outcome in ("clean", "acceptable", "failed")


def test_a_year_long_duration_round_trips() -> None:
    """A claim carrying a fact's duration in its stored JSON form must equal the fact.

    Found by the ordering property: ``encode_value("duration", timedelta(days=365))`` is
    ``"P1Y"`` (pydantic's serialiser), and ``coerce_value("duration", "P1Y")`` refuses it,
    so a compressor that copies such a value faithfully gets ``value_changed``.
    """
    value = timedelta(days=400, seconds=5)
    fact = Fact(
        tenant_id=T,
        subject_id=S,
        fact_id="f",
        seq=1,
        predicate="response.max_wait",
        registry_version=1,
        value_type="duration",
        value=value,
        source_event_ids=("e-0",),
        recorded_at=T0,
        content_hash="h",
    )
    claim = Claim(
        fact_id="f",
        tenant_id=T,
        subject_id=S,
        predicate="response.max_wait",
        value_type="duration",
        value=encode_value("duration", value),
        derived_from=("e-0",),
    )
    event = Event(
        tenant_id=T,
        subject_id=S,
        event_id="e-0",
        seq=1,
        kind="message",
        actor="user",
        trust="authenticated_user",
        text="",
        payload={},
        occurred_at=T0,
        recorded_at=T0,
        content_hash="h",
    )
    snapshot = Snapshot(
        tenant_id=T,
        subject_id=S,
        clock=Clock(tenant_id=T, subject_id=S),
        registry_version=1,
        events=(event,),
        facts=(fact,),
    )
    assert check(snapshot, artifact(snapshot, [claim]), REGISTRY).outcome == "clean"
