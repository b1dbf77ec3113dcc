"""Diagnosis bundles: where one consolidation attempt lost a fact, and whose it is to fix.

Before a loss is blamed on compression, the stages are told apart: every boundary the
data crosses is checked against what should have crossed it, and the owner of the first
that diverges gets the source-event set, the expected ledger, the immediate artifact, the
read-back artifact, the schema and memory versions, the attempt identifier, the first
divergent field and the later retrieval result. :func:`diagnose` gathers exactly that for one
attempt, in one read transaction, and :func:`write_bundle` writes it as a directory of
JSON files (sorted keys) or a ``.tar.gz``. ``lossgate diagnose ATTEMPT_ID`` is the CLI.

**The expected facts** are the must-preserve set (:mod:`lossgate.gate.preserve`) of the
attempt's snapshot, rebuilt by :func:`~lossgate.consolidate.selection.snapshot_at` at the
attempt's high-water under the registry version its manifest names (the newest one when
it has no artifact). For a hierarchy's part, only the facts among the part's own inputs.

**The boundaries**, in the order data crosses them. The first that diverges is
``Bundle.first_divergent``; it names the owner.

``selection``
    compares the expected facts and their source events with the attempt's
    ``selected_ids`` (written before generation; an event carried by a selected artifact,
    an incremental parent or a reused part, recursively, counts as selected).
    ``fact_not_selected``: an expected fact is not among them; ``source_not_selected``: a
    source event valid at the snapshot is neither selected nor carried.
``compression``
    compares the expected facts with the *immediate* artifact, the attempt's raw output
    parsed as the pipeline parses it, through the gate's fact contract
    (:mod:`lossgate.gate.contract`): ``missing``, ``value_changed`` (with both types),
    ``qualifiers_changed`` and the rest; ``error``: the attempt failed with no usable output.
``storage``
    compares the immediate artifact with the *read-back* one (as the store returns it, what
    recall reads), field by field in body order, type included: ``type_changed`` (``bool``
    against ``str``) or ``value_changed``, ``missing`` / ``added`` claims. The first finding
    is the first divergent field. ``store_refused``: the store refused the artifact.
``retrieval``
    compares the read-back artifact's claims with each recall record that served it
    (summary mode, the alias on this artifact). ``not_selected``: a claim the recall owed
    is not among its selected ids: a critical fact (recall returns those always) or a
    candidate it found and then dropped (a budget).
``response``
    compares what the agent did after each recall that served the artifact (its response
    records, :mod:`lossgate.lineage.responses`) with the guard results of its actions
    (:mod:`lossgate.guard`). ``refusal_ignored``: a response names a guard result that
    refused its action, or carried out an action (the same sha256) a guard had refused
    before it; one finding per refusal, naming its fact (or conflict) and whether the recall
    returned it: memory said it, and the agent acted against it.

A boundary that cannot be compared is ``unchecked`` and says why (no raw output kept: an
input was deleted since; a hierarchy's root, whose raw output holds its parts' outputs and
whose body is rendered from them; no artifact; no recall served it; no response rests on
such a recall). ``first_divergent``
is then the first divergence *among the checked boundaries*, and ``Bundle.note`` says
which earlier ones could not be checked.

**Known limits.** The snapshot is read now: while the subject's ``input_epoch`` has not
moved since the attempt, statuses are the ones it saw; when it has, the bundle says so.
Retrieval reads a record's ids, the evidence recall keeps (retrieval owns the
candidate and selected fact ids); a summary-mode recall also handed back the summary's
text, whose lines the record does not itemise. The store has no read of the recall records
that served one artifact: the newest ``recall_limit`` records of the subject are read and
filtered. Carried events are found by reading each selected artifact's manifest, and its
parents' (one read per level of an incremental chain).

**Sanitized by default.** Raw text is replaced by ``{"sha256": hex of its UTF-8 bytes,
"chars": length}`` (the form :class:`~lossgate.model.derived_records.RecallRedaction` keeps of a query):
event text and payload, the summary prose of both artifacts, the attempt's raw output,
error and violation details (which quote sentences), recall queries, and fact and claim
values of the ``string`` type. Ids, predicates, qualifiers, the other typed values (a
bool, an amount, a date: the evidence a storage diagnosis needs) and the gate's violation
lines (a fact id or an atom key, then a code) stay. Of the response boundary's records, an
answer, an action and its string values, and a refusal's detail and conflict sides are
text; their ids, rules, field paths, sha256 and typed fact values stay. A hash of a short or guessable text
identifies it; it does not hide it. ``include_text=True`` (``--include-text``, an admin's
option) adds the text beside each hash.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from pydantic import BaseModel, ConfigDict, ValidationError

from lossgate.consolidate.narrative_policy import narrative_policy
from lossgate.consolidate.selection import snapshot_at
from lossgate.errors import InvalidInput, NotFound
from lossgate.gate.contract import LedgerFact, artifact_facts, compare_facts, ledger_facts
from lossgate.gate.outcome import Violation
from lossgate.gate.preserve import build_must_preserve
from lossgate.gate.publication import as_published
from lossgate.gate.superseded import retired_values
from lossgate.model.canonical import canonical_json
from lossgate.model.derived_records import (
    Alias,
    Artifact,
    Attempt,
    ExpectedAlias,
    GuardResult,
    RecallRecord,
    ResponseRecord,
)
from lossgate.model.records import ArtifactBody, Clock, Event, Fact, Snapshot, utcnow
from lossgate.model.registry import Registry, parse_registry
from lossgate.model.values import stored_claims
from lossgate.store.protocol import ReadTx

if TYPE_CHECKING:
    from lossgate.api.memory import Memory

__all__ = [
    "Boundary",
    "BOUNDARIES",
    "TextRef",
    "EventEvidence",
    "ExpectedFact",
    "Finding",
    "BoundaryCheck",
    "ArtifactEvidence",
    "RecallEvidence",
    "ResponseEvidence",
    "RefusalEvidence",
    "GuardEvidence",
    "Versions",
    "GateEvidence",
    "Bundle",
    "diagnose",
    "write_bundle",
    "bundle_name",
]

Boundary = Literal["selection", "compression", "storage", "retrieval", "response"]
BOUNDARIES: tuple[Boundary, ...] = ("selection", "compression", "storage", "retrieval", "response")
Status = Literal["ok", "diverged", "unchecked"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextRef(_Model):
    """Raw text as a bundle holds it: its sha256 (hex, of the UTF-8 bytes) and length in
    characters, and the text itself only in a bundle made with ``include_text``."""

    sha256: str
    chars: int
    text: str | None = None


@overload
def _text(value: str, include: bool) -> TextRef: ...
@overload
def _text(value: str | None, include: bool) -> TextRef | None: ...


def _text(value: str | None, include: bool) -> TextRef | None:
    if value is None:
        return None
    return TextRef(
        sha256=hashlib.sha256(value.encode("utf-8")).hexdigest(), chars=len(value), text=value if include else None
    )


def _value(value: Any, value_type: str, include: bool) -> Any:
    """A fact's or claim's JSON value: a ``string`` value is text, the others are evidence."""
    if not include and value_type == "string" and isinstance(value, str):
        return _text(value, False).model_dump()
    return value


class EventEvidence(_Model):
    """An event the attempt selected, or an expected fact cites, as it is now."""

    event_id: str
    seq: int
    kind: str
    actor: str | None  # None once the event is deleted, as its text
    trust: str
    state: str
    occurred_at: datetime
    content_hash: str
    text: TextRef | None
    payload: TextRef | None
    selected: bool
    carried_by: str | None = None  # the selected artifact that carried it in, if not selected itself
    required_by: tuple[str, ...] = ()  # the expected facts that cite it


class ExpectedFact(_Model):
    """One fact of the must-preserve set: the typed value and why it must survive."""

    fact_id: str
    predicate: str
    value_type: str
    value: Any
    qualifiers: tuple[tuple[str, str], ...]
    polarity: str
    modality: str
    authority: str
    status: str
    source_event_ids: tuple[str, ...]
    reasons: tuple[str, ...]
    loss_severity: str


class Finding(_Model):
    """One divergence at one boundary. ``subject``: a fact id, an event id or a field path."""

    boundary: Boundary
    code: str
    subject: str
    detail: str = ""
    severity: str | None = None
    expected_type: str | None = None
    observed_type: str | None = None
    expected: Any = None
    observed: Any = None
    recall_id: str | None = None


class BoundaryCheck(_Model):
    boundary: Boundary
    status: Status
    findings: tuple[Finding, ...] = ()
    note: str = ""


class ArtifactEvidence(_Model):
    """The read-back artifact: as the store returns it, the body sanitized."""

    artifact_id: str
    state: str
    state_reason: str | None
    created_at: datetime
    body: dict[str, Any]
    manifest: dict[str, Any]
    gate: dict[str, Any]


class RecallEvidence(_Model):
    """A recall record that served the attempt's artifact (the query sanitized)."""

    recall_id: str
    at: datetime
    mode: str
    query: TextRef | None
    redacted: dict[str, Any] | None
    filters: dict[str, Any]
    candidate_ids: tuple[str, ...]
    selected_ids: tuple[str, ...]
    alias: Alias
    clock: Clock
    tiers: dict[str, str]


class ResponseEvidence(_Model):
    """A response record resting on a recall that served the artifact (answer and action
    sanitized)."""

    response_id: str
    at: datetime
    recall_id: str
    guard_id: str | None
    answer: TextRef | None
    action: TextRef | None
    answer_sha256: str | None
    action_sha256: str | None
    redacted: dict[str, Any] | None


class RefusalEvidence(_Model):
    """One refusal of a guard result: its rule, field and fact, what it quotes sanitized."""

    rule: str
    kind: str
    field: str
    value: Any
    detail: TextRef | None
    fact_id: str | None
    predicate: str | None
    fact_value: Any
    qualifiers: dict[str, str]
    source_event_ids: tuple[str, ...]
    conflict_id: str | None
    sides: tuple[TextRef, ...]


class GuardEvidence(_Model):
    """A guard result tied to a recall that served the artifact, or to a response resting on
    one (the action sanitized)."""

    guard_id: str
    at: datetime
    recall_id: str | None
    allowed: bool
    action: TextRef | None
    action_sha256: str
    rules: tuple[str, ...]
    refusals: tuple[RefusalEvidence, ...]
    registry_version: int | None
    redacted: dict[str, Any] | None


class Versions(_Model):
    """Schema and memory versions: the store's schema now, the registry the expected set was
    built under, the manifest's versions, and the clock and alias then and now."""

    store_schema_version: int
    registry_version: int
    registry_version_latest: int | None
    manifest: dict[str, Any] | None
    attempt_compressor: str
    attempt_high_water: int
    attempt_input_epoch: int
    attempt_expected_alias: ExpectedAlias
    clock: Clock
    alias: Alias


class GateEvidence(_Model):
    """What the gate said: on the attempt, on the stored artifact, and what the fact
    contract says of the read-back artifact against the expected facts now."""

    attempt_status: str
    gate_outcome: str | None
    violations: tuple[str, ...]
    losses: tuple[str, ...]
    details: tuple[TextRef, ...]
    reason: str | None
    error: TextRef | None
    artifact_gate: dict[str, Any] | None
    readback_contract: tuple[str, ...]


class Bundle(_Model):
    """Everything :func:`diagnose` found about one attempt; :meth:`files` is what is written."""

    attempt_id: str
    tenant_id: str
    subject_id: str
    generated_at: datetime
    include_text: bool
    attempt: dict[str, Any]
    selected_ids: tuple[str, ...]
    events: tuple[EventEvidence, ...]
    expected: tuple[ExpectedFact, ...]
    conflicts: tuple[str, ...]
    snapshot_note: str
    immediate: dict[str, Any] | None
    immediate_note: str
    readback: ArtifactEvidence | None
    versions: Versions
    gate: GateEvidence
    checks: tuple[BoundaryCheck, ...]
    first_divergent: Boundary | None
    note: str
    recalls: tuple[RecallEvidence, ...]
    responses: tuple[ResponseEvidence, ...] = ()
    guard_results: tuple[GuardEvidence, ...] = ()

    def check(self, boundary: Boundary) -> BoundaryCheck:
        return next(c for c in self.checks if c.boundary == boundary)

    def summary(self) -> dict[str, Any]:
        """The headline: the attempt, the first divergent boundary and every check."""
        return {
            "attempt_id": self.attempt_id,
            "tenant_id": self.tenant_id,
            "subject_id": self.subject_id,
            "generated_at": self.generated_at.isoformat(),
            "include_text": self.include_text,
            "first_divergent": self.first_divergent,
            "note": self.note,
            "checks": [c.model_dump(mode="json") for c in self.checks],
        }

    def files(self) -> dict[str, Any]:
        """File name -> JSON document, as :func:`write_bundle` writes them."""
        dump = _dump
        return {
            "summary.json": self.summary(),
            "attempt.json": self.attempt,
            "sources.json": {"selected_ids": list(self.selected_ids), "events": [dump(e) for e in self.events]},
            "expected.json": {
                "facts": [dump(f) for f in self.expected],
                "conflicts": list(self.conflicts),
                "note": self.snapshot_note,
            },
            "immediate.json": {"body": self.immediate, "note": self.immediate_note},
            "readback.json": None if self.readback is None else dump(self.readback),
            "versions.json": dump(self.versions),
            "gate.json": dump(self.gate),
            "recalls.json": [dump(r) for r in self.recalls],
            "responses.json": {
                "responses": [dump(r) for r in self.responses],
                "guard_results": [dump(g) for g in self.guard_results],
            },
        }


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json")


# -- reading ---------------------------------------------------------------------------------


def diagnose(
    memory: Memory,
    tenant_id: str,
    subject_id: str,
    attempt_id: str,
    *,
    include_text: bool = False,
    recall_limit: int = 1000,
) -> Bundle:
    """The diagnosis bundle of one attempt (see the module). Reads only; raises
    :class:`~lossgate.errors.NotFound` when the subject has no such attempt."""
    with memory.store.read() as tx:
        attempt = next((a for a in tx.attempts(tenant_id, subject_id) if a.attempt_id == attempt_id), None)
        if attempt is None:
            raise NotFound(f"attempt {attempt_id} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
        artifact = tx.artifact(tenant_id, subject_id, attempt.artifact_id) if attempt.artifact_id else None
        registry, latest = _registry(tx, artifact)
        snapshot = snapshot_at(tx, tenant_id, subject_id, registry, through_seq=attempt.high_water)
        must = build_must_preserve(snapshot, registry)
        wanted = set(must.fact_ids())
        if artifact is not None and artifact.manifest.path == "part":
            wanted &= {r.id for r in artifact.manifest.inputs if r.kind == "fact"}
        expected = [f for f in snapshot.facts if f.fact_id in wanted]
        cited = {e for f in expected for e in f.source_event_ids}
        events = tx.events(tenant_id, subject_id, ids=sorted(cited | set(attempt.selected_ids)))
        known = {e.event_id for e in events} | {
            f.fact_id for f in tx.facts(tenant_id, subject_id, ids=list(attempt.selected_ids))
        }
        carried = _carried(tx, tenant_id, subject_id, [i for i in attempt.selected_ids if i not in known])
        clock, alias = tx.clock(tenant_id, subject_id), tx.alias(tenant_id, subject_id)
        policy = narrative_policy(tx, tenant_id)
        served = [
            r
            for r in reversed(tx.recalls(tenant_id, subject_id, limit=recall_limit))
            if artifact is not None and r.mode == "summary" and r.alias.artifact_id == artifact.artifact_id
        ]
        served_ids = {r.recall_id for r in served}
        responses = [
            r for r in reversed(tx.responses(tenant_id, subject_id, limit=recall_limit)) if r.recall_id in served_ids
        ]
        guards = _guards_of(served_ids, responses, tx.guard_results(tenant_id, subject_id, limit=recall_limit))
    schema = memory.store.schema_version()

    immediate, immediate_note = _immediate(attempt, artifact)
    # what the pipeline meant to store: the compressor's body as lossgate publishes it
    # (sentences on the ledger's topics left out, superseded values marked)
    meant = (
        None
        if immediate is None
        else as_published(
            snapshot,
            immediate,
            must,
            registry,
            retired=retired_values(snapshot.facts, snapshot.conflicts),
            policy=policy,
        ).body
    )
    checks = (
        _selection(attempt, expected, snapshot, carried),
        _compression(attempt, snapshot, expected, immediate, immediate_note, must.loss_severity),
        _storage(attempt, meant, immediate_note, artifact, include_text),
        _retrieval(artifact, served, registry),
        _response(artifact, served, responses, guards, registry, include_text),
    )
    first = next((c.boundary for c in checks if c.status == "diverged"), None)
    unchecked = [c.boundary for c in checks[: BOUNDARIES.index(first) if first else None] if c.status == "unchecked"]
    note = ("no boundary diverged" if first is None else f"{first} is the first divergent boundary") + (
        f"; not checked: {', '.join(unchecked)}" + (" (the divergence may begin there)" if first else "")
        if unchecked
        else ""
    )
    gate = _gate(attempt, artifact, snapshot, expected, include_text)
    if gate.readback_contract and "compression" in unchecked:
        note += (
            f"; the read-back artifact fails the fact contract ({', '.join(gate.readback_contract)}): "
            "the loss began at compression or at storage"
        )
    snapshot_note = (
        ""
        if clock.input_epoch == attempt.input_epoch
        else (
            f"input_epoch moved from {attempt.input_epoch} to {clock.input_epoch} since the attempt: "
            "the facts' and events' statuses are read now"
        )
    )
    if artifact is not None and artifact.manifest.path == "part":
        snapshot_note = "; ".join(
            filter(
                None,
                [
                    snapshot_note,
                    "a hierarchy's part: the expected facts are the must-preserve facts among the part's inputs",
                ],
            )
        )
    selected = set(attempt.selected_ids)
    by_id = {e.event_id: e for e in events}
    return Bundle(
        attempt_id=attempt.attempt_id,
        tenant_id=tenant_id,
        subject_id=subject_id,
        generated_at=utcnow(),
        include_text=include_text,
        attempt=_attempt_doc(attempt, include_text),
        selected_ids=attempt.selected_ids,
        events=tuple(
            _event(by_id[i], selected, carried, expected, include_text)
            for i in sorted(by_id, key=lambda i: by_id[i].seq)
        ),
        expected=tuple(
            _expected(f, must.reasons(f.fact_id), must.loss_severity(f.fact_id), include_text) for f in expected
        ),
        conflicts=must.conflicts,
        snapshot_note=snapshot_note,
        immediate=None if immediate is None else _body(immediate, include_text),
        immediate_note=immediate_note,
        readback=None
        if artifact is None
        else ArtifactEvidence(
            artifact_id=artifact.artifact_id,
            state=artifact.state,
            state_reason=artifact.state_reason,
            created_at=artifact.created_at,
            body=_body(artifact.body, include_text),
            manifest=artifact.manifest.model_dump(mode="json"),
            gate=artifact.gate,
        ),
        versions=_versions(attempt, artifact, schema, registry, latest, clock, alias),
        gate=gate,
        checks=checks,
        first_divergent=first,
        note=note,
        recalls=tuple(_recall(r, include_text) for r in served),
        responses=tuple(_response_doc(r, include_text) for r in responses),
        guard_results=tuple(_guard_doc(g, include_text) for g in guards),
    )


def _registry(tx: ReadTx, artifact: Artifact | None) -> tuple[Registry, int | None]:
    """The registry the attempt was gated under (its manifest's; else the newest), and the newest version."""
    latest = tx.latest_registry_version()
    doc = tx.registry_document(artifact.manifest.registry_version) if artifact is not None else None
    doc = doc or tx.registry_document()
    if doc is None:
        raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
    return parse_registry(doc), latest


def _carried(tx: ReadTx, tenant_id: str, subject_id: str, artifact_ids: Sequence[str]) -> dict[str, str]:
    """Input id -> the selected artifact that carried it in: for each of ``artifact_ids``
    (the selected ids that are neither events nor facts: an incremental parent, a
    hierarchy's reused parts), its inputs and its parents' inputs, recursively."""
    carried: dict[str, str] = {}
    for top in artifact_ids:
        todo, seen = [top], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            found = tx.artifact(tenant_id, subject_id, current)
            if found is None:
                continue
            for ref in found.manifest.inputs:
                carried.setdefault(ref.id, top)
                if ref.kind == "artifact":
                    todo.append(ref.id)
    return carried


def _immediate(attempt: Attempt, artifact: Artifact | None) -> tuple[ArtifactBody | None, str]:
    """The artifact as the compressor produced it: the attempt's raw output parsed as the
    pipeline parses it (JSON, then :class:`ArtifactBody`), or ``None`` and why not."""
    if artifact is not None and artifact.manifest.path == "hierarchical":
        return None, (
            "a hierarchy's root: its raw output holds its parts' compressor outputs, and its body "
            "is rendered from the gated parts"
        )
    if attempt.raw_output is None:
        if attempt.status == "selected":
            return None, "the attempt never finished (status selected): no output was recorded"
        return None, "no raw output is kept (an error before any output, or erased with a deleted input)"
    try:
        data = json.loads(attempt.raw_output)
        # parsed as the pipeline parses it: claim values in their stored form
        return stored_claims(ArtifactBody.model_validate(data)), "the attempt's raw output, parsed"
    except json.JSONDecodeError:
        return None, "the raw output is not JSON"
    except ValidationError as exc:
        return None, f"the raw output is not an artifact body ({exc.error_count()} error(s))"


# -- the five boundaries ---------------------------------------------------------------------


def _selection(attempt: Attempt, expected: list[Fact], snapshot: Snapshot, carried: dict[str, str]) -> BoundaryCheck:
    selected = set(attempt.selected_ids)
    valid = {e.event_id for e in snapshot.events}
    found: list[Finding] = []
    for fact in expected:
        if fact.fact_id not in selected and fact.fact_id not in carried:
            found.append(
                Finding(
                    boundary="selection",
                    code="fact_not_selected",
                    subject=fact.fact_id,
                    detail=f"expected fact ({fact.predicate}) is not among the selected ids",
                )
            )
        for event_id in fact.source_event_ids:
            if event_id in valid and event_id not in selected and event_id not in carried:
                found.append(
                    Finding(
                        boundary="selection",
                        code="source_not_selected",
                        subject=event_id,
                        detail=f"source of {fact.fact_id}, valid at the snapshot, was not selected",
                    )
                )
    return BoundaryCheck(
        boundary="selection",
        status="diverged" if found else "ok",
        findings=tuple(found),
        note=f"{len(expected)} expected facts, {len(selected)} selected ids",
    )


def _compression(
    attempt: Attempt,
    snapshot: Snapshot,
    expected: list[Fact],
    immediate: ArtifactBody | None,
    immediate_note: str,
    severity: Any,
) -> BoundaryCheck:
    if immediate is None:
        if attempt.status == "error" and "the store refused it" not in (attempt.error or ""):
            return BoundaryCheck(
                boundary="compression",
                status="diverged",
                note=immediate_note,
                findings=(
                    Finding(
                        boundary="compression",
                        code="error",
                        subject="attempt",
                        detail=f"the attempt failed before a gated artifact existed: {attempt.reason}",
                    ),
                ),
            )
        return BoundaryCheck(boundary="compression", status="unchecked", note=immediate_note)
    wanted = {f.fact_id for f in expected}
    ledger = [lf for lf in ledger_facts(snapshot) if lf.fact_id in wanted]
    claims = artifact_facts(immediate)
    types = {lf.fact_id: lf.value.type_name for lf in ledger}
    seen = {c.fact_id: c.value.type_name for c in reversed(claims)}
    found = []
    for v in sorted(
        compare_facts(
            ledger,
            claims,
            owner=(snapshot.tenant_id, snapshot.subject_id),
            header=(immediate.tenant_id, immediate.subject_id),
            loss_severity=severity,
        ),
        key=lambda v: (v.subject, v.code),
    ):
        if v.subject not in wanted and v.subject != "artifact":
            continue  # a claim of no expected fact: the gate judges it, this boundary does not
        typed = v.code == "value_changed"
        found.append(
            Finding(
                boundary="compression",
                code=v.code,
                subject=v.subject,
                detail=_without_values(v, ledger, types, seen),
                severity=v.severity,
                expected_type=types.get(v.subject) if typed else None,
                observed_type=seen.get(v.subject) if typed else None,
            )
        )
    return BoundaryCheck(
        boundary="compression", status="diverged" if found else "ok", findings=tuple(found), note=immediate_note
    )


def _without_values(v: Violation, ledger: list[LedgerFact], types: dict[str, str], seen: dict[str, str]) -> str:
    """A contract finding's detail without the fact values the gate's detail shows: a string
    value is text, which the bundle keeps only as a hash (the types stay, as evidence)."""
    if v.code == "value_changed":
        return f"expected type {types.get(v.subject)}, observed type {seen.get(v.subject)}"
    if v.code == "missing":
        predicate = next((lf.predicate for lf in ledger if lf.fact_id == v.subject), "?")
        return f"active fact ({predicate}) not in the artifact"
    return v.detail


def _storage(
    attempt: Attempt, immediate: ArtifactBody | None, immediate_note: str, artifact: Artifact | None, include: bool
) -> BoundaryCheck:
    if attempt.status == "error" and "the store refused it" in (attempt.error or ""):
        return BoundaryCheck(
            boundary="storage",
            status="diverged",
            findings=(
                Finding(
                    boundary="storage",
                    code="store_refused",
                    subject="artifact",
                    detail="the store refused to keep the artifact the compressor produced",
                ),
            ),
        )
    if artifact is None:
        return BoundaryCheck(boundary="storage", status="unchecked", note="the attempt stored no artifact")
    if immediate is None:
        return BoundaryCheck(boundary="storage", status="unchecked", note=f"no immediate artifact: {immediate_note}")
    found = _body_diff(immediate, artifact.body, include)
    return BoundaryCheck(
        boundary="storage",
        status="diverged" if found else "ok",
        findings=tuple(found),
        note=f"immediate artifact against {artifact.artifact_id} as the store returns it",
    )


def _retrieval(artifact: Artifact | None, served: list[RecallRecord], registry: Registry) -> BoundaryCheck:
    if artifact is None:
        return BoundaryCheck(boundary="retrieval", status="unchecked", note="the attempt stored no artifact")
    if not served:
        return BoundaryCheck(
            boundary="retrieval",
            status="unchecked",
            note=f"no recall record served {artifact.artifact_id} (state {artifact.state})",
        )
    # A predicate the registry lacks counts as critical, as in the gate (lossgate.gate.preserve).
    level = {
        c.fact_id: p.criticality if (p := registry.predicates.get(c.predicate)) else "critical"
        for c in artifact.body.claims
    }
    found = []
    for record in served:
        returned, considered = set(record.selected_ids), set(record.candidate_ids)
        for fact_id, criticality in level.items():
            if fact_id in returned:
                continue
            why = (
                "a critical fact, which recall returns always"
                if criticality == "critical"
                else "a candidate the recall found and did not return"
                if fact_id in considered
                else None
            )
            if why:
                found.append(
                    Finding(
                        boundary="retrieval",
                        code="not_selected",
                        subject=fact_id,
                        severity=criticality,
                        recall_id=record.recall_id,
                        detail=f"the artifact claims it; {why}",
                    )
                )
    return BoundaryCheck(
        boundary="retrieval",
        status="diverged" if found else "ok",
        findings=tuple(found),
        note=f"{len(served)} recall record(s) served {artifact.artifact_id}",
    )


def _guards_of(served: set[str], responses: list[ResponseRecord], newest_first: list[GuardResult]) -> list[GuardResult]:
    """The guard results the response boundary reads, oldest first: those tied to a recall
    that served the artifact, those a response names, and refused ones whose action a
    response carried out after them."""
    named = {r.guard_id for r in responses if r.guard_id}
    acted = {r.action_sha256 for r in responses if r.action_sha256}
    return [
        g
        for g in reversed(newest_first)
        if g.recall_id in served or g.guard_id in named or (not g.allowed and g.action_sha256 in acted)
    ]


def _response(
    artifact: Artifact | None,
    served: list[RecallRecord],
    responses: list[ResponseRecord],
    guards: list[GuardResult],
    registry: Registry,
    include: bool,
) -> BoundaryCheck:
    if artifact is None:
        return BoundaryCheck(boundary="response", status="unchecked", note="the attempt stored no artifact")
    if not responses:
        return BoundaryCheck(
            boundary="response",
            status="unchecked",
            note=f"no response record rests on a recall that served {artifact.artifact_id}",
        )
    recalls = {r.recall_id: r for r in served}
    refused = [g for g in guards if not g.allowed]
    found = []
    for response in responses:
        ignored = [
            g
            for g in refused
            if g.guard_id == response.guard_id
            or (
                response.action_sha256 is not None and g.action_sha256 == response.action_sha256 and g.at <= response.at
            )
        ]
        returned = set(recalls[response.recall_id].selected_ids)
        for guard in ignored:
            how = "names" if guard.guard_id == response.guard_id else "carried out the action of"
            for refusal in guard.refusals:
                spec = registry.predicates.get(refusal.predicate or "")
                said = _fact_said(refusal, guard, include)
                told = (
                    f"the recall returned {said}"
                    if refusal.fact_id in returned
                    else f"the guard read {said}, which the recall did not return"
                )
                acted = (
                    f"the action still held {_shown(refusal.value, include)} at {refusal.field}"
                    if include
                    else f"the action still held what it refused at {refusal.field}"
                )
                found.append(
                    Finding(
                        boundary="response",
                        code="refusal_ignored",
                        subject=refusal.fact_id or refusal.conflict_id or refusal.field,
                        recall_id=response.recall_id,
                        severity=spec.criticality if spec else None,
                        detail=f"{told} and {acted}: response {response.response_id} {how} guard result "
                        f"{guard.guard_id}, refused by rule {refusal.rule} ({refusal.kind})",
                    )
                )
    return BoundaryCheck(
        boundary="response",
        status="diverged" if found else "ok",
        findings=tuple(found),
        note=f"{len(responses)} response record(s), {len(refused)} refused guard result(s)",
    )


def _fact_said(refusal: Any, guard: GuardResult, include: bool) -> str:
    """The fact a refusal names, as a finding's detail says it (``food.peanuts_allowed: false``)."""
    what = refusal.predicate or (f"conflict {refusal.conflict_id}" if refusal.conflict_id else "a fact")
    if refusal.conflict_id and not refusal.fact_id:
        return f"{what} in conflict"
    if guard.redacted is not None:
        return f"{what} (its value redacted)"
    return f"{what}: {_shown(refusal.fact_value, include)}"


def _shown(value: Any, include: bool) -> str:
    """A value in a finding's detail: as JSON, or for text without ``include_text`` its sha256 and length."""
    if isinstance(value, str) and not include:
        ref = _text(value, False)
        assert ref is not None
        return f"text sha256:{ref.sha256[:12]}... ({ref.chars} characters)"
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _type(value: Any, present: bool = True) -> str:
    return "absent" if not present else "None" if value is None else type(value).__name__


def _same(a: Any, b: Any) -> bool:
    """Equal in value and in type at every depth (``False`` is not ``"false"``, nor ``0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=False))
    return bool(a == b)


def _body_diff(immediate: ArtifactBody, readback: ArtifactBody, include: bool) -> list[Finding]:
    """Every field where the read-back body differs from the immediate one, in body order:
    the header, each claim (by fact id) field by field, then open items, conflicts, prose."""
    found: list[Finding] = []

    def differ(path: str, a: Any, b: Any, shown: Any = None, *, present: tuple[bool, bool] = (True, True)) -> None:
        if present == (True, True) and _same(a, b):
            return
        show = shown or (lambda v: v)
        ta, tb = _type(a, present[0]), _type(b, present[1])
        code = (
            "missing"
            if not present[1]
            else "added"
            if not present[0]
            else ("type_changed" if ta != tb else "value_changed")
        )
        found.append(
            Finding(
                boundary="storage",
                code=code,
                subject=path,
                expected_type=ta,
                observed_type=tb,
                expected=show(a) if present[0] else None,
                observed=show(b) if present[1] else None,
                detail=f"{path}: {ta} -> {tb}" if ta != tb else f"{path}: {ta} changed",
            )
        )

    a, b = immediate.model_dump(), readback.model_dump()
    differ("tenant_id", a["tenant_id"], b["tenant_id"])
    differ("subject_id", a["subject_id"], b["subject_id"])
    after = {c["fact_id"]: c for c in b["claims"]}
    for claim in a["claims"]:
        fid = claim["fact_id"]
        other = after.pop(fid, None)
        if other is None:
            differ(f"claims[{fid}]", claim, None, lambda c: _claim_doc(c, include), present=(True, False))
            continue
        for key in claim:
            vt = claim["value_type"]
            differ(
                f"claims[{fid}].{key}",
                claim[key],
                other.get(key),
                (lambda v, vt=vt: _value(v, vt, include)) if key == "value" else None,
                present=(True, key in other),
            )
    for fid, other in after.items():
        differ(f"claims[{fid}]", None, other, lambda c: _claim_doc(c, include), present=(False, True))
    differ("open_items", a["open_items"], b["open_items"])
    differ("unresolved_conflicts", a["unresolved_conflicts"], b["unresolved_conflicts"])
    differ("summary", a["summary"], b["summary"], lambda v: _dump_text(v, include))
    return found


def _dump_text(value: Any, include: bool) -> Any:
    ref = _text(value, include) if isinstance(value, str) else None
    return value if ref is None else ref.model_dump()


# -- sanitized documents ---------------------------------------------------------------------


def _claim_doc(claim: dict[str, Any], include: bool) -> dict[str, Any]:
    return {**claim, "value": _value(claim["value"], claim["value_type"], include)}


def _body(body: ArtifactBody, include: bool) -> dict[str, Any]:
    data = body.model_dump(mode="json")
    data["summary"] = _dump_text(body.summary, include)
    data["claims"] = [_claim_doc(c, include) for c in data["claims"]]
    return data


def _attempt_doc(attempt: Attempt, include: bool) -> dict[str, Any]:
    data = attempt.model_dump(mode="json")
    data["raw_output"] = _dump_text(attempt.raw_output, include)
    data["error"] = _dump_text(attempt.error, include)
    data["details"] = [_dump_text(d, include) for d in attempt.details]
    return data


def _event(e: Event, selected: set[str], carried: dict[str, str], expected: list[Fact], include: bool) -> EventEvidence:
    payload = None if e.payload is None else json.dumps(e.payload, sort_keys=True, ensure_ascii=False)
    return EventEvidence(
        event_id=e.event_id,
        seq=e.seq,
        kind=e.kind,
        actor=e.actor,
        trust=e.trust,
        state=e.state,
        occurred_at=e.occurred_at,
        content_hash=e.content_hash,
        text=_text(e.text, include),
        payload=_text(payload, include),
        selected=e.event_id in selected,
        carried_by=None if e.event_id in selected else carried.get(e.event_id),
        required_by=tuple(f.fact_id for f in expected if e.event_id in f.source_event_ids),
    )


def _expected(f: Fact, reasons: tuple[str, ...], severity: str, include: bool) -> ExpectedFact:
    return ExpectedFact(
        fact_id=f.fact_id,
        predicate=f.predicate,
        value_type=f.value_type,
        value=_value(f.encoded_value(), f.value_type, include),
        qualifiers=f.qualifiers,
        polarity=f.polarity,
        modality=f.modality,
        authority=f.authority,
        status=f.status,
        source_event_ids=f.source_event_ids,
        reasons=reasons,
        loss_severity=severity,
    )


def _versions(
    attempt: Attempt,
    artifact: Artifact | None,
    schema: int,
    registry: Registry,
    latest: int | None,
    clock: Clock,
    alias: Alias,
) -> Versions:
    m = artifact.manifest if artifact is not None else None
    return Versions(
        store_schema_version=schema,
        registry_version=registry.version,
        registry_version_latest=latest,
        manifest=None
        if m is None
        else {
            "selector_version": m.selector_version,
            "prompt_version": m.prompt_version,
            "compressor": m.compressor,
            "compressor_version": m.compressor_version,
            "extractor_version": m.extractor_version,
            "schema_version": m.schema_version,
            "registry_version": m.registry_version,
            "path": m.path,
            "attempt": m.attempt,
            "budget_tokens": m.budget_tokens,
            "input_epoch": m.input_epoch,
            "new_covers_through": m.new_covers_through,
            "input_root": m.input_root,
        },
        attempt_compressor=attempt.compressor,
        attempt_high_water=attempt.high_water,
        attempt_input_epoch=attempt.input_epoch,
        attempt_expected_alias=attempt.expected_alias,
        clock=clock,
        alias=alias,
    )


def _gate(
    attempt: Attempt, artifact: Artifact | None, snapshot: Snapshot, expected: list[Fact], include: bool
) -> GateEvidence:
    readback: tuple[str, ...] = ()
    if artifact is not None:
        wanted = {f.fact_id for f in expected}
        ledger = [lf for lf in ledger_facts(snapshot) if lf.fact_id in wanted]
        readback = tuple(
            sorted(
                {
                    f"{v.subject}:{v.code}"
                    for v in compare_facts(ledger, artifact_facts(artifact.body))
                    if v.subject in wanted
                }
            )
        )
    return GateEvidence(
        attempt_status=attempt.status,
        gate_outcome=attempt.gate_outcome,
        violations=attempt.violations,
        losses=attempt.losses,
        details=tuple(r for d in attempt.details if (r := _text(d, include)) is not None),
        reason=attempt.reason,
        error=_text(attempt.error, include),
        artifact_gate=None if artifact is None else artifact.gate,
        readback_contract=readback,
    )


def _recall(r: RecallRecord, include: bool) -> RecallEvidence:
    return RecallEvidence(
        recall_id=r.recall_id,
        at=r.at,
        mode=r.mode,
        query=_text(r.query, include),
        redacted=None if r.redacted is None else r.redacted.model_dump(mode="json"),
        filters=r.filters,
        candidate_ids=r.candidate_ids,
        selected_ids=r.selected_ids,
        alias=r.alias,
        clock=r.clock,
        tiers=r.tiers,
    )


def _json_text(value: Any, include: bool) -> TextRef | None:
    """A JSON value (an action) as text: its canonical form's sha256 and length."""
    return None if value is None else _text(canonical_json(value).decode("utf-8"), include)


def _json_value(value: Any, include: bool) -> Any:
    """A value read from an action: typed scalars stay, text and structures become text."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return _dump_text(value, include)
    ref = _json_text(value, include)
    return None if ref is None else ref.model_dump()


def _response_doc(r: ResponseRecord, include: bool) -> ResponseEvidence:
    return ResponseEvidence(
        response_id=r.response_id,
        at=r.at,
        recall_id=r.recall_id,
        guard_id=r.guard_id,
        answer=_text(r.answer, include),
        action=_json_text(r.action, include),
        answer_sha256=r.answer_sha256,
        action_sha256=r.action_sha256,
        redacted=None if r.redacted is None else r.redacted.model_dump(mode="json"),
    )


def _guard_doc(g: GuardResult, include: bool) -> GuardEvidence:
    return GuardEvidence(
        guard_id=g.guard_id,
        at=g.at,
        recall_id=g.recall_id,
        allowed=g.allowed,
        action=_json_text(g.action, include),
        action_sha256=g.action_sha256,
        rules=g.rules,
        registry_version=g.registry_version,
        redacted=None if g.redacted is None else g.redacted.model_dump(mode="json"),
        refusals=tuple(
            RefusalEvidence(
                rule=r.rule,
                kind=r.kind,
                field=r.field,
                value=_json_value(r.value, include),
                detail=_text(r.detail, include),
                fact_id=r.fact_id,
                predicate=r.predicate,
                fact_value=_dump_text(r.fact_value, include),
                qualifiers=dict(r.qualifiers),
                source_event_ids=r.source_event_ids,
                conflict_id=r.conflict_id,
                sides=tuple(t for side in r.sides if (t := _text(side, include)) is not None),
            )
            for r in g.refusals
        ),
    )


# -- writing ---------------------------------------------------------------------------------


def bundle_name(attempt_id: str, *, archive: bool = False) -> str:
    """``diagnose-<attempt id>`` (``.tar.gz`` for an archive), safe as a file name."""
    return "diagnose-" + re.sub(r"[^A-Za-z0-9._-]", "_", attempt_id) + (".tar.gz" if archive else "")


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_bundle(bundle: Bundle, path: str | Path, archive: bool = False) -> Path:
    """Write ``bundle`` at ``path``: a new directory of JSON files, or with ``archive`` a
    ``.tar.gz`` holding them under one directory. Written beside the target and renamed
    into place, so a failure leaves nothing behind. Raises
    :class:`~lossgate.errors.InvalidInput` if ``path`` exists, :class:`OSError` if it
    cannot be written."""
    target = Path(path)
    if target.exists():
        raise InvalidInput(f"{target} already exists: give another --out, or move it away")
    files = {name: _json_bytes(doc) for name, doc in bundle.files().items()}
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        if archive:
            top = target.name.removesuffix(".gz").removesuffix(".tar").removesuffix(".tgz")
            with tarfile.open(scratch, "w:gz") as tar:
                for name, data in sorted(files.items()):
                    info = tarfile.TarInfo(f"{top}/{name}")
                    info.size, info.mtime, info.mode = len(data), int(bundle.generated_at.timestamp()), 0o644
                    tar.addfile(info, io.BytesIO(data))
        else:
            scratch.mkdir()
            for name, data in files.items():
                (scratch / name).write_bytes(data)
        if target.exists():  # appeared meanwhile: never overwrite
            raise InvalidInput(f"{target} already exists: give another --out, or move it away")
        os.rename(scratch, target)
    except BaseException:
        if scratch.is_dir():
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            scratch.unlink(missing_ok=True)
        raise
    return target
