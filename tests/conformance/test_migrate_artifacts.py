"""Migration of the stored artifact format, rehearsed before it is applied, on both stores.

The acceptance test: a rehearsal over 1,000 stored artifacts of format 1 (as every artifact
was stored before formats existed) is clean and writes nothing, the migration is idempotent,
and one planted artifact that the migration would corrupt makes the rehearsal refuse and
``--apply`` write nothing.

The shipped step from format 1 to 2 corrupts nothing these tests could find: a value the
gate's strict reader does not read as its type (a float amount, ``"true"`` for a bool) it
keeps as stored. So the planted corruption is rehearsed against :func:`unguarded_v1_to_v2`,
the step as a first draft wrote it (every value through the store's decoder,
:func:`~lossgate.model.values.decode_value`), which turns the float amount 19.99 into
19.989999999999998436805981327779591083526611328125: exactly what the rehearsal is for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.consolidate.compressor import claim_of
from lossgate.errors import InvalidInput
from lossgate.gate.typed import typed_value
from lossgate.model.derived_records import Artifact, ExpectedAlias, InputRef, Manifest
from lossgate.model.records import ArtifactBody, Fact
from lossgate.model.values import decode_value, encode_value
from lossgate.ops import migrate
from lossgate.ops.migrate import FORMATS, Document, Format, Formats, read_v1, read_v2

T = "acme"
NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
SUBJECTS, PER_SUBJECT = 40, 25  # 1,000 artifacts
TIMES: dict[str, float] = {}  # seconds, per store: printed with -s

# -- planting format-1 artifacts -------------------------------------------------------------


def _facts(s: str) -> list[NewFact]:
    def new(name: str, predicate: str, value: Any, **qualifiers: str) -> NewFact:
        return NewFact(
            tenant_id=T,
            subject_id=s,
            fact_id=f"f-{s}-{name}",
            predicate=predicate,
            value=value,
            qualifiers=qualifiers,
            source_event_ids=[f"e-{s}-1"],
        )

    return [
        new("peanuts", "food.peanuts_allowed", False, basis="allergy", severity="critical"),
        new("seats", "subscription.seats", 12),
        new("total", "invoice.total", {"amount": "14250.00", "currency": "USD"}, invoice_id="INV-9182"),
        new("uptime", "sla.uptime_percent", Decimal("99.950")),
        new("deadline", "payment.deadline", "2026-03-25", invoice_id="INV-9182"),
        new("meeting", "meeting.starts_at", "2026-03-14T12:00:00+00:00"),
        new("wait", "response.max_wait", "P7D"),
        new("seat", "travel.seat_preference", "aisle"),
        new("customer", "customer.id", "cust_482"),
        new("tz", "timezone", "UTC+01:00"),
    ]


# How a format-1 body may spell a value the gate reads as the same typed value (a compressor's
# JSON parsed as it came): format 2 writes each in its exact stored form.
V1_SPELLINGS: dict[str, Callable[[Any], Any]] = {
    "invoice.total": lambda v: {"currency": v["currency"], "amount": int(Decimal(v["amount"]))},
    "meeting.starts_at": lambda v: v.replace("+00:00", "Z"),
    "response.max_wait": lambda v: "PT168H",
}


def _manifest(s: str, artifact_id: str, facts: list[Fact]) -> Manifest:
    return Manifest(
        artifact_id=artifact_id,
        tenant_id=T,
        subject_id=s,
        new_covers_through=1,
        input_epoch=0,
        expected_alias=ExpectedAlias(parent_artifact_id=None, source_epoch=0, covers_through=0),
        inputs=tuple(InputRef(kind="fact", id=f.fact_id, content_hash=f.content_hash, seq=f.seq) for f in facts),
        input_root="sha256:root",
        path="direct",
        selector_version="1",
        prompt_version="1",
        compressor="det",
        compressor_version="1",
        extractor_version="1",
        schema_version=2,
        registry_version=1,
        attempt=1,
    )


def _v1_body(s: str, facts: list[Fact], j: int) -> dict[str, Any]:
    """A format-1 body: what the writer stored before formats existed (no ``format`` key)."""
    claims = [claim_of(f) for f in facts]
    if j % 2:  # every other one spells some values as a compressor's JSON may have
        for c in claims:
            c["value"] = V1_SPELLINGS.get(c["predicate"], lambda v: v)(c["value"])
    return orjson.loads(
        ArtifactBody.model_validate(
            {"tenant_id": T, "subject_id": s, "claims": claims, "summary": f"Summary {j} of {s}."}
        ).model_dump_json()
    )


def plant(
    memory: lossgate.Memory,
    *,
    subjects: int = SUBJECTS,
    per_subject: int = PER_SUBJECT,
    extra: Callable[[str, list[Fact]], list[tuple[str, str, dict[str, Any]]]] | None = None,
) -> list[str]:
    """``subjects`` x ``per_subject`` format-1 artifacts of tenant ``T`` (and ``extra``'s: id,
    state, body), written through the store's write transaction in batches; their ids. In
    every fourth subject (s003, s007, ...) the timezone was superseded after the artifacts
    were built, so they claim a superseded fact (a difference from the ledger they have before
    migrating)."""
    names = [f"s{i:03d}" for i in range(subjects)]
    with memory.transaction() as led:
        led.append(
            [
                NewEvent(
                    tenant_id=T,
                    subject_id=s,
                    event_id=f"e-{s}-1",
                    occurred_at=NOW,
                    text="Peanuts are not allowed; invoice INV-9182 is 14250.00 USD.",
                )
                for s in names
            ]
        )
        led.assert_facts([f for s in names for f in _facts(s)])
    planted: list[str] = []
    states = ("published", "retired", "stale", "candidate", "failed")
    for s in names:
        facts = memory.facts(T, s)
        rows = [(f"art-{s}-{j:03d}", states[j % len(states)], _v1_body(s, facts, j)) for j in range(per_subject)]
        rows += extra(s, facts) if extra is not None else []
        with memory.store.write() as tx:
            for aid, state, body in rows:
                tx.insert_artifact(
                    Artifact(
                        artifact_id=aid,
                        tenant_id=T,
                        subject_id=s,
                        state=state,  # type: ignore[arg-type]
                        body=ArtifactBody.model_validate(body),
                        manifest=_manifest(s, aid, facts),
                        gate={"outcome": "clean"},
                        created_at=NOW,
                    ),
                    [],
                )
            stored = {d.artifact_id: d for d in tx.artifact_documents(T, [aid for aid, _, _ in rows])}
            assert tx.replace_artifact_documents(
                [(stored[aid], orjson.dumps(body).decode(), stored[aid].manifest) for aid, _, body in rows]
            ) == sorted(aid for aid, _, _ in rows)
        planted += [aid for aid, _, _ in rows]
        if int(s[1:]) % 4 == 3:
            memory.supersede(
                T,
                s,
                f"f-{s}-tz",
                NewFact(
                    tenant_id=T,
                    subject_id=s,
                    fact_id=f"f-{s}-tz2",
                    predicate="timezone",
                    value="UTC+02:00",
                    source_event_ids=[f"e-{s}-1"],
                ),
            )
    return planted


def documents(memory: lossgate.Memory) -> dict[str, tuple[str, str]]:
    """Every stored document of the tenant, as stored: (body, manifest) by artifact id."""
    out: dict[str, tuple[str, str]] = {}
    with memory.store.read() as tx:
        ids = [a for a, _ in tx.artifact_ids(T, limit=100_000)]
        for d in tx.artifact_documents(T, ids):
            out[d.artifact_id] = (d.body, d.manifest)
    return out


def _claims(body_text: str) -> dict[str, Any]:
    return {c["predicate"]: c["value"] for c in orjson.loads(body_text)["claims"]}


# -- the planted corruption ---------------------------------------------------------------


def unguarded_v1_to_v2(doc: Document) -> Document:
    """The step from format 1 to 2 as a first draft wrote it: every claim value read with the
    store's decoder and written with its encoder. A float amount becomes its binary expansion."""
    body = {k: v for k, v in doc["body"].items() if k != "format"}
    body["claims"] = [
        {**c, "value": encode_value(c["value_type"], decode_value(c["value_type"], c["value"]))} for c in body["claims"]
    ]
    return {"body": {"format": 2, **body}, "manifest": doc["manifest"]}


UNGUARDED = Formats((Format(1, read_v1, unguarded_v1_to_v2, "draft"), Format(2, read_v2, None, "newest")))


def float_amount(s: str, facts: list[Fact]) -> list[tuple[str, str, dict[str, Any]]]:
    """In the first subject, a failed artifact whose invoice total a compressor's JSON gave as
    the float 19.99 (the gate refused it; failed artifacts are kept, invariant 11)."""
    if s != "s000":
        return []
    claims = [claim_of(f) for f in facts]
    for c in claims:
        if c["predicate"] == "invoice.total":
            c["value"] = {"amount": 19.99, "currency": "USD"}
        if c["predicate"] == "food.peanuts_allowed":
            c["value"] = "false"  # a bool as a string: no reader reads it as a bool
    return [("art-planted", "failed", {"tenant_id": T, "subject_id": s, "claims": claims, "summary": "19.99 USD"})]


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_rehearsal_over_1000_format_1_artifacts_is_clean_writes_nothing_and_apply_is_idempotent(
    memory: lossgate.Memory, store_url: str
) -> None:
    t0 = time.perf_counter()
    ids = plant(memory)
    planted_s = time.perf_counter() - t0
    assert len(ids) == 1000
    before = documents(memory)
    assert all("format" not in orjson.loads(body) for body, _ in before.values())

    t0 = time.perf_counter()
    report = migrate.rehearse(memory.store, [T], sample=1000)
    rehearse_s = time.perf_counter() - t0
    assert report.clean, [c.to_json() for c in report.refused[:3]]
    assert (report.stored, report.checked, dict(report.by_format), report.changed) == (1000, 1000, {"1": 1000}, 1000)
    # the stale ones claim a superseded timezone: kept as they were, not the migration's doing
    assert report.preexisting == 10 * PER_SUBJECT and report.kept == 0
    assert documents(memory) == before  # a rehearsal writes nothing
    with memory.store.read() as tx:  # the reader serves format 1 as it is
        (live,) = [a for a in tx.artifacts(T, "s001") if a.artifact_id == "art-s001-001"]
        assert {c.predicate: c.value for c in live.body.claims}["response.max_wait"] == "PT168H"

    t0 = time.perf_counter()
    applied = migrate.apply(memory.store, [T], batch=250)
    apply_s = time.perf_counter() - t0
    assert not applied.refused and (applied.written, applied.skipped, applied.batches) == (1000, 0, 4)
    after = documents(memory)
    assert all(
        orjson.loads(body)["format"] == 2 and manifest == before[aid][1] for aid, (body, manifest) in after.items()
    )
    odd, even = _claims(after["art-s001-001"][0]), _claims(after["art-s001-002"][0])
    assert odd["invoice.total"] == {"currency": "USD", "amount": "14250"}  # was the number 14250
    assert odd["meeting.starts_at"] == "2026-03-14T12:00:00+00:00" and odd["response.max_wait"] == "P7D"
    assert odd["food.peanuts_allowed"] is False and odd["subscription.seats"] == 12  # bool stays bool, int int
    assert even["invoice.total"] == {"amount": "14250.00", "currency": "USD"} and even["sla.uptime_percent"] == "99.950"
    assert orjson.loads(after["art-s001-002"][0]) == {"format": 2, **orjson.loads(before["art-s001-002"][0])}
    with memory.store.read() as tx:
        live = tx.artifact(T, "s001", "art-s001-001")
        assert live is not None and live.state == "retired"  # state and gate untouched

    again = migrate.rehearse(memory.store, [T], sample=1000)
    assert again.clean and dict(again.by_format) == {"2": 1000} and again.changed == 0  # idempotent
    assert migrate.apply(memory.store, [T]).written == 0 and documents(memory) == after
    TIMES[store_url.split(":")[0]] = rehearse_s
    print(
        f"\n{store_url.split(':')[0]}: planted 1,000 in {planted_s:.2f} s, rehearsed in {rehearse_s:.2f} s, "
        f"applied (a rehearsal of all, then the writes) in {apply_s:.2f} s"
    )


@pytest.mark.slow
def test_one_planted_artifact_the_migration_would_corrupt_refuses_apply_and_nothing_is_written(
    memory: lossgate.Memory,
) -> None:
    plant(memory, extra=float_amount)
    before = documents(memory)
    assert len(before) == 1001

    report = migrate.rehearse(memory.store, [T], sample=None, formats=UNGUARDED)
    assert not report.clean and report.checked == 1001
    (refused,) = report.refused
    assert (refused.artifact_id, refused.state, refused.from_format) == ("art-planted", "failed", 1)
    codes = {(f.code, f.subject, f.against) for f in refused.findings}
    assert ("value_changed", "f-s000-total", "document") in codes
    (detail,) = [f.detail for f in refused.findings if f.code == "value_changed" and f.against == "document"]
    assert detail == 'value.amount: float 19.99 -> string "19.989999999999998436805981327779591083526611328125"'

    applied = migrate.apply(memory.store, [T], formats=UNGUARDED)
    assert applied.refused and applied.written == 0 and applied.stopped_at is None
    assert documents(memory) == before

    # a small sample may miss it; apply rehearses every document, not the sample
    sampled = migrate.rehearse(memory.store, [T], sample=20, seed=3, formats=UNGUARDED)
    assert sampled.clean and sampled.checked == 20
    assert migrate.apply(memory.store, [T], formats=UNGUARDED).refused and documents(memory) == before

    # the shipped step keeps what does not read as its type exactly as stored
    shipped = migrate.rehearse(memory.store, [T], sample=None)
    assert shipped.clean and shipped.kept == 2
    assert migrate.apply(memory.store, [T]).written == 1001
    planted = _claims(documents(memory)["art-planted"][0])
    assert (
        planted["invoice.total"] == {"amount": 19.99, "currency": "USD"} and planted["food.peanuts_allowed"] == "false"
    )


def _step(change: Callable[[dict[str, Any]], None]) -> Formats:
    """The shipped step, then ``change`` to the body it wrote (a migration with a fault)."""

    def step(doc: Document) -> Document:
        out = FORMATS.formats[0].step(doc)  # type: ignore[misc]
        change(out["body"])
        return out

    return Formats((Format(1, read_v1, step, "faulty"), Format(2, read_v2, None, "newest")))


def _claim(body: dict[str, Any], predicate: str) -> dict[str, Any]:
    return next(c for c in body["claims"] if c["predicate"] == predicate)


FAULTS: dict[str, tuple[Callable[[dict[str, Any]], None], set[tuple[str, str, str]]]] = {
    "flips a bool": (
        lambda b: _claim(b, "food.peanuts_allowed").update(value=True),
        {("value_changed", "f-s000-peanuts", "document"), ("value_changed", "f-s000-peanuts", "ledger")},
    ),
    "turns an int into a string": (
        lambda b: _claim(b, "subscription.seats").update(value="12"),
        {("value_changed", "f-s000-seats", "document"), ("value_changed", "f-s000-seats", "ledger")},
    ),
    "drops a claim": (
        lambda b: b["claims"].pop(),  # again on its own output: drops another
        {
            ("missing", "f-s000-tz", "document"),
            ("missing", "f-s000-tz", "ledger"),
            ("not_idempotent", "document", "document"),
        },
    ),
    "flips a polarity": (
        lambda b: _claim(b, "customer.id").update(polarity="negative"),
        {("polarity_flipped", "f-s000-customer", "document"), ("polarity_flipped", "f-s000-customer", "ledger")},
    ),
    # the gate's canonical decimal keeps 28 significant digits: this change passes the gate
    "changes a decimal past its 28th digit": (
        lambda b: _claim(b, "sla.uptime_percent").update(value="99.95000000000000000000000000001"),
        {("claim_changed", "f-s000-uptime", "document")},
    ),
    "drops a qualifier": (
        lambda b: _claim(b, "invoice.total").update(qualifiers=[]),
        {("qualifiers_changed", "f-s000-total", "document"), ("qualifiers_changed", "f-s000-total", "ledger")},
    ),
    "loses provenance": (
        lambda b: _claim(b, "timezone").update(derived_from=["f-s000-tz"]),
        {("provenance_missing", "f-s000-tz", "document"), ("provenance_missing", "f-s000-tz", "ledger")},
    ),
    "invents provenance": (
        lambda b: _claim(b, "timezone")["derived_from"].append("e-s000-9"),
        {("claim_changed", "f-s000-tz", "document"), ("not_idempotent", "document", "document")},
    ),
    "moves a claim to another subject": (
        lambda b: _claim(b, "timezone").update(subject_id="s001"),
        {("subject_changed", "f-s000-tz", "document"), ("subject_changed", "f-s000-tz", "ledger")},
    ),
    "rewrites the prose": (
        lambda b: b.update(summary=b["summary"] + "!"),
        {("summary_changed", "body", "document"), ("not_idempotent", "document", "document")},
    ),
    "raises": (lambda b: b["claims"][99], {("migration_error", "document", "document")}),
    "forgets the format": (lambda b: b.pop("format"), {("migration_error", "document", "document")}),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_rehearsal_names_what_a_faulty_migration_changes(memory: lossgate.Memory, fault: str) -> None:
    plant(memory, subjects=1, per_subject=2)
    change, expected = FAULTS[fault]
    report = migrate.rehearse(memory.store, [T], sample=None, formats=_step(change))
    assert {c.artifact_id for c in report.refused} == {"art-s000-000", "art-s000-001"}
    for check in report.refused:
        assert {(f.code, f.subject, f.against) for f in check.findings} == expected, check.to_json()
    assert migrate.apply(memory.store, [T], formats=_step(change)).refused


def test_documents_no_reader_reads_are_refused(memory: lossgate.Memory) -> None:
    """A newer format, and a document its own format's reader refuses: neither is migrated."""
    plant(memory, subjects=1, per_subject=3)
    with memory.store.write() as tx:
        docs = tx.artifact_documents(T, ["art-s000-000", "art-s000-001"])
        newer = {**orjson.loads(docs[0].body), "format": 9}
        broken = orjson.loads(docs[1].body)
        del broken["claims"][0]["predicate"]
        tx.replace_artifact_documents(
            [
                (docs[0], orjson.dumps(newer).decode(), docs[0].manifest),
                (docs[1], orjson.dumps(broken).decode(), docs[1].manifest),
            ]
        )
    before = documents(memory)
    report = migrate.rehearse(memory.store, [T], sample=None)
    assert {c.artifact_id: [f.code for f in c.findings] for c in report.refused} == {
        "art-s000-000": ["unknown_format"],
        "art-s000-001": ["unreadable"],
    }
    assert dict(report.by_format) == {"1": 2, "9": 1}
    assert "missing field at claims.0.predicate" in report.refused[1].findings[0].detail
    assert migrate.apply(memory.store, [T]).refused and documents(memory) == before


def test_tenants_are_migrated_apart_and_must_be_named(memory: lossgate.Memory) -> None:
    plant(memory, subjects=2, per_subject=2)
    assert migrate.rehearse(memory.store, ["globex"]).stored == 0
    assert migrate.apply(memory.store, ["globex"]).written == 0 and all(
        "format" not in orjson.loads(b) for b, _ in documents(memory).values()
    )
    with pytest.raises(InvalidInput):
        migrate.rehearse(memory.store, [])
    with pytest.raises(InvalidInput):
        migrate.rehearse(memory.store, [T], sample=0)
    assert migrate.apply(memory.store, [T, "globex"]).written == 4


# -- the command line ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_cli_refuses_to_apply_after_a_dirty_rehearsal_and_changes_nothing(
    memory: lossgate.Memory, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lossgate.cli import app

    plant(memory, subjects=3, per_subject=10, extra=float_amount)
    before = documents(memory)
    runner = CliRunner(env={"FORCE_COLOR": None, "COLUMNS": None, "LOSSGATE_DB": None, "NO_COLOR": "1"})

    def run(*args: str) -> Any:
        return runner.invoke(app, ["--db", store_url, "migrate", *args])

    monkeypatch.setattr(migrate, "FORMATS", UNGUARDED)
    dirty = run("--tenant", T, "--rehearse", "--sample", "100")
    assert dirty.exit_code == 1, dirty.output
    assert "art-planted" in dirty.output and "value_changed" in dirty.output and "refused" in dirty.output
    refused = run("--tenant", T, "--apply", "--json")
    assert refused.exit_code == 1, refused.output
    report = orjson.loads(refused.stdout)
    assert report["refused"] and report["written"] == 0 and not report["rehearsal"]["clean"]
    assert [c["artifact_id"] for c in report["rehearsal"]["refused"]] == ["art-planted"]
    assert documents(memory) == before

    monkeypatch.setattr(migrate, "FORMATS", FORMATS)
    clean = run("--tenant", T, "--rehearse", "--json")
    assert clean.exit_code == 0, clean.output
    assert orjson.loads(clean.stdout)["by_format"] == {"1": 31} and documents(memory) == before
    applied = run("--tenant", T, "--apply", "--batch", "7")
    assert applied.exit_code == 0, applied.output
    assert "applied: 31 written in 5 batches" in applied.output
    after = run("--tenant", T, "--rehearse", "--json")
    assert after.exit_code == 0 and orjson.loads(after.stdout)["by_format"] == {"2": 31}
    assert orjson.loads(after.stdout)["changed"] == 0

    for bad in (
        ("--rehearse",),
        ("--tenant", T),
        ("--tenant", T, "--rehearse", "--apply"),
        ("--tenant", T, "--rehearse", "--sample", "0"),
        ("--tenant", T, "--apply", "--sample", "5"),
        ("--tenant", "a b", "--rehearse"),
        ("--tenant", T, "--rehearse", "--batch", "0"),
    ):
        result = run(*bad)
        assert result.exit_code == 2, (bad, result.output)


def test_a_store_part_way_through_serves_both_formats(memory: lossgate.Memory) -> None:
    """Apply stops at a batch it refuses: what it wrote before is format 2, the rest format 1,
    and the reader serves both (what recall reads is unchanged)."""
    plant(memory, subjects=2, per_subject=4)
    before = _read_back(memory)

    calls = {"n": 0}

    def fails_late(doc: Document) -> Document:  # fine in the rehearsal, then faulty for s001
        out = FORMATS.formats[0].step(doc)  # type: ignore[misc]
        calls["n"] += 1
        if calls["n"] > 4 * 8 and out["body"]["subject_id"] == "s001":  # after the rehearsal's runs
            out["body"]["summary"] += " (changed)"
        return out

    late = Formats((Format(1, read_v1, fails_late, "late"), Format(2, read_v2, None, "newest")))
    applied = migrate.apply(memory.store, [T], batch=4, formats=late)
    assert applied.refused and applied.written == 4 and applied.stopped_at == "art-s001-000"
    assert {c.artifact_id for c in applied.batch_refused} == {f"art-s001-{j:03d}" for j in range(4)}
    formats = {aid: orjson.loads(body).get("format", 1) for aid, (body, _) in documents(memory).items()}
    assert formats == {**{f"art-s000-{j:03d}": 2 for j in range(4)}, **{f"art-s001-{j:03d}": 1 for j in range(4)}}
    assert _read_back(memory) == before  # the same typed claims, whichever format holds them


def _read_back(memory: lossgate.Memory) -> dict[str, Any]:
    """Each artifact as the reader serves it, claim values as the gate compares them."""
    with memory.store.read() as tx:
        return {
            a.artifact_id: (
                a.state,
                a.body.summary,
                a.manifest,
                [
                    (c.fact_id, typed_value(c.value_type, c.value).key, c.qualifiers, c.polarity, c.derived_from)
                    for c in a.body.claims
                ],
            )
            for s in ("s000", "s001")
            for a in tx.artifacts(T, s)
        }
