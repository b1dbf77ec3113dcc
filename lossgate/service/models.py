"""The service's request and response models, apart from lossgate's records.

A request model says what a client may send: no tenant anywhere (the tenant is the API
key's), no subject in the body (it is in the path), unknown fields refused, and every
string bounded by the limits the records apply (:mod:`lossgate.model.limits`), so that the
OpenAPI document states them. The records check again when they are built: a value the
schema lets through and a record refuses is a 422 all the same.

A response model says what a client gets back, built from lossgate's records by the
``of`` class methods. Fact values come in their exact JSON form (:func:`lossgate.model.values.encode_value`:
a decimal as a string, money as ``{"amount": "12.50", "currency": "USD"}``) beside their
``value_type``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from lossgate.model.api_keys import ApiKey, Scope
from lossgate.model.derived_records import (
    Alias,
    Artifact,
    Attempt,
    Job,
    LineageView,
    RecallChange,
    RecallRecord,
    RecallResult,
    RecallVerification,
    ResponseRecord,
)
from lossgate.model.instants import Instant
from lossgate.model.limits import MAX_LABEL_CHARS, Id, Key, Label, Name, Text, as_doubles
from lossgate.model.records import (
    Authority,
    Clock,
    Conflict,
    Event,
    EventKind,
    EventState,
    Fact,
    FactStatus,
    LedgerEntry,
    Modality,
    Polarity,
    Proposal,
    Tier,
    Trust,
)

__all__ = [
    "MAX_BATCH",
    "SubjectId",
    "ItemId",
    "EventIn",
    "FactIn",
    "AppendIn",
    "SupersedeIn",
    "RecallIn",
    "EventRef",
    "FactRef",
    "ClockOut",
    "AliasOut",
    "SubjectClockOut",
    "AppendOut",
    "EventOut",
    "FactOut",
    "ConflictOut",
    "GuardIn",
    "RecallOut",
    "RecallRecordOut",
    "ProposalOut",
    "ExtractOut",
    "JobOut",
    "ConsolidateOut",
    "AttemptOut",
    "ArtifactOut",
    "ClaimOut",
    "ManifestOut",
    "LineageEdgeOut",
    "AncestorOut",
    "LineageOut",
    "LogEntryOut",
    "KeyOut",
    "HealthOut",
    "SubjectsOut",
    "RespondIn",
    "ResponseOut",
    "RecallChangeOut",
    "RecallVerificationOut",
]

MAX_BATCH = 1_000  # events, and facts, in one append: one transaction

SubjectId = Id
"""A subject: an id (:func:`lossgate.model.limits.id_problem`)."""
ItemId = Key
"""An event, fact or artifact the subject already has, looked up as given."""


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


# -- requests ------------------------------------------------------------------------------


class EventIn(_In):
    """A raw event. ``event_id`` is the idempotency key of the event: send one (or an
    ``Idempotency-Key`` header) so that a retry cannot append it twice; without it the
    service makes a fresh one. ``occurred_at`` must carry a UTC offset; default: now."""

    event_id: Id | None = None
    kind: EventKind = "message"
    actor: Name = "user"
    trust: Trust = "authenticated_user"
    text: Text = ""
    payload: dict[str, Any] = Field(default_factory=dict)
    occurred_at: Instant | None = None

    @field_validator("payload", mode="after")
    @classmethod
    def _payload_numbers(cls, value: dict[str, Any]) -> dict[str, Any]:
        # A payload's numbers as RFC 8785 hashes them: doubles (the service parses every
        # number with a fraction as a Decimal; facts keep theirs exact).
        return as_doubles(value)  # type: ignore[no-any-return]


class FactIn(_In):
    """A typed fact. ``value`` is checked against the predicate's type (an int is ``50``,
    never ``50.0``; a decimal ``"99.95"`` or ``99.95``; money ``{"amount": "12.50",
    "currency": "USD"}``); ``fact_id`` defaults to one derived from the content, so a retry
    finds it again."""

    fact_id: Id | None = None
    predicate: Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
    value: Any = Field(description="The value, in the JSON form of the predicate's type.")
    qualifiers: dict[Name, Label] = Field(default_factory=dict, max_length=64)
    polarity: Polarity = "positive"
    modality: Modality = "asserted"
    authority: Authority = "user"
    source_event_ids: list[Key] = Field(min_length=1, max_length=MAX_BATCH)
    valid_from: Instant | None = None


class AppendIn(_In):
    """Events and facts of one subject, appended in one transaction: all or nothing. A
    fact may cite an event of the same request."""

    events: list[EventIn] = Field(default_factory=list, max_length=MAX_BATCH)
    facts: list[FactIn] = Field(default_factory=list, max_length=MAX_BATCH)


class SupersedeIn(_In):
    """The fact that replaces an active one (same predicate)."""

    fact: FactIn


class RecallIn(_In):
    """What to recall: with a ``query``, the most relevant facts and events of every tier
    as well; ``budget`` bounds the tokens; ``k`` the query's hits."""

    query: Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS, pattern=r"^[^\x00]*$")] | None = None
    k: int = Field(default=20, ge=0, le=200)
    budget: int | None = Field(default=None, ge=1, le=1_000_000)
    context: bool = True


class GuardIn(_In):
    """An agent's planned action, a JSON object, and the recall it was based on (if any)."""

    action: dict[str, Any] = Field(
        description="The action the agent is about to carry out: a meal order, a refund, a message to send, a deploy."
    )
    recall_id: Annotated[str, StringConstraints(max_length=200)] | None = None


class RespondIn(_In):
    """What the agent finally answered (text) or did (a JSON object), or both, after the recall
    ``recall_id``; ``guard_id``: the guard result of the action, if it was checked first."""

    recall_id: Key
    answer: Text | None = None
    action: dict[str, Any] | None = Field(default=None, description="The action the agent carried out.")
    guard_id: Key | None = None


# -- responses -----------------------------------------------------------------------------


class EventRef(_Out):
    event_id: str
    seq: int
    content_hash: str


class FactRef(_Out):
    fact_id: str
    seq: int
    status: FactStatus
    content_hash: str


class ClockOut(_Out):
    high_water: int
    input_epoch: int

    @classmethod
    def of(cls, clock: Clock) -> ClockOut:
        return cls(high_water=clock.high_water, input_epoch=clock.input_epoch)


class AliasOut(_Out):
    artifact_id: str | None
    source_epoch: int
    covers_through: int
    updated_at: datetime | None

    @classmethod
    def of(cls, alias: Alias) -> AliasOut:
        return cls(
            artifact_id=alias.artifact_id,
            source_epoch=alias.source_epoch,
            covers_through=alias.covers_through,
            updated_at=alias.updated_at,
        )


class SubjectClockOut(_Out):
    """A subject's clock and alias: ``high_water`` (its largest seq), ``input_epoch`` (moved
    by every change that makes summaries stale) and the published artifact, if any."""

    subject_id: str
    clock: ClockOut
    alias: AliasOut


class AppendOut(_Out):
    """What an append did: the events stored with their seq, the ids already stored with the
    same content (no-ops), the facts (new or found again) and the subject's clock after.
    Holds no text, so that a stored idempotent answer keeps no content."""

    subject_id: str
    appended: list[EventRef]
    duplicates: list[str]
    facts: list[FactRef]
    clock: ClockOut


class EventOut(_Out):
    event_id: str
    seq: int
    kind: EventKind
    actor: str | None = Field(description="None once the event is deleted: who said it is erased with what was said.")
    trust: Trust
    text: str | None = Field(description="None once the event is deleted (its id and hash stay).")
    payload: dict[str, Any] | None
    occurred_at: datetime
    recorded_at: datetime
    content_hash: str
    state: EventState
    tier: Tier

    @classmethod
    def of(cls, e: Event) -> EventOut:
        return cls(
            event_id=e.event_id,
            seq=e.seq,
            kind=e.kind,
            actor=e.actor,
            trust=e.trust,
            text=e.text,
            payload=e.payload,
            occurred_at=e.occurred_at,
            recorded_at=e.recorded_at,
            content_hash=e.content_hash,
            state=e.state,
            tier=e.tier,
        )


class FactOut(_Out):
    fact_id: str
    seq: int
    predicate: str
    value_type: str
    value: Any = Field(description="The value's exact JSON form; None once the fact is deleted.")
    qualifiers: dict[str, str]
    polarity: Polarity
    modality: Modality
    authority: Authority
    source_event_ids: list[str]
    status: FactStatus
    supersedes: str | None
    superseded_by: str | None
    valid_from: datetime | None
    recorded_at: datetime
    content_hash: str
    criticality: str

    @classmethod
    def of(cls, f: Fact) -> FactOut:
        return cls(
            fact_id=f.fact_id,
            seq=f.seq,
            predicate=f.predicate,
            value_type=f.value_type,
            value=f.encoded_value(),
            qualifiers=dict(f.qualifiers),
            polarity=f.polarity,
            modality=f.modality,
            authority=f.authority,
            source_event_ids=list(f.source_event_ids),
            status=f.status,
            supersedes=f.supersedes,
            superseded_by=f.superseded_by,
            valid_from=f.valid_from,
            recorded_at=f.recorded_at,
            content_hash=f.content_hash,
            criticality=f.criticality,
        )


class ConflictOut(_Out):
    conflict_id: str
    predicate: str
    fact_ids: list[str]
    status: Literal["unresolved", "resolved"]
    detected_at: datetime
    resolved_at: datetime | None
    resolution: str | None

    @classmethod
    def of(cls, c: Conflict) -> ConflictOut:
        return cls(
            conflict_id=c.conflict_id,
            predicate=c.predicate,
            fact_ids=list(c.fact_ids),
            status=c.status,
            detected_at=c.detected_at,
            resolved_at=c.resolved_at,
            resolution=c.resolution,
        )


class RecallOut(_Out):
    """What an agent reads: the fresh summary (``mode: summary``) or raw memory
    (``raw_fallback``), the facts, the events, and ``rendered``: the one block of text to put
    in the prompt (:meth:`lossgate.model.derived_records.RecallResult.render`)."""

    subject_id: str
    mode: Literal["summary", "raw_fallback"]
    artifact_id: str | None
    summary: str | None
    open_items: list[str]
    facts: list[FactOut]
    events: list[EventOut]
    tokens: int
    recall_id: str
    rendered: str

    @classmethod
    def of(cls, r: RecallResult) -> RecallOut:
        return cls(
            subject_id=r.subject_id,
            mode=r.mode,
            artifact_id=r.artifact_id,
            summary=r.summary,
            open_items=list(r.open_items),
            facts=[FactOut.of(f) for f in r.facts],
            events=[EventOut.of(e) for e in r.events],
            tokens=r.tokens,
            recall_id=r.record.recall_id,
            rendered=r.render(),
        )


class ResponseOut(_Out):
    """What an agent answered or did, tied to the recall (and guard result) it rests on.
    ``answer`` and ``action`` are ``None`` once content the recall returned is deleted
    (``redacted``); their sha256 stay for audit."""

    response_id: str
    at: datetime
    recall_id: str
    guard_id: str | None
    answer: str | None
    action: dict[str, Any] | None
    answer_sha256: str | None
    action_sha256: str | None
    redacted: bool
    redacted_at: datetime | None
    redaction_cause: str | None

    @classmethod
    def of(cls, r: ResponseRecord) -> ResponseOut:
        red = r.redacted
        return cls(
            response_id=r.response_id,
            at=r.at,
            recall_id=r.recall_id,
            guard_id=r.guard_id,
            answer=r.answer,
            action=r.action,
            answer_sha256=r.answer_sha256,
            action_sha256=r.action_sha256,
            redacted=red is not None,
            redacted_at=red.at if red else None,
            redaction_cause=red.cause if red else None,
        )


class RecallChangeOut(_Out):
    """One input of a recall that moved since: its id and how (superseded, revoked, deleted,
    edited, or retired: the summary's artifact is no longer the live one)."""

    id: str
    what: RecallChange


class RecallVerificationOut(_Out):
    """Whether what a recall returned is still what memory says: ``unchanged``, ``changed`` or
    ``erased`` (something it returned deleted since), each change, and whether the block it
    rendered is rebuilt to the same sha256 (``rendered_matches``; ``null`` when not checked)."""

    recall_id: str
    state: Literal["unchanged", "changed", "erased"]
    changes: list[RecallChangeOut]
    rendered_matches: bool | None

    @classmethod
    def of(cls, v: RecallVerification) -> RecallVerificationOut:
        return cls(
            recall_id=v.recall_id,
            state=v.state,
            changes=[RecallChangeOut(id=i, what=what) for i, what in v.changes],
            rendered_matches=v.rendered_matches,
        )


class RecallRecordOut(_Out):
    """Evidence of one recall: what was asked (``None`` once redacted: the recall touched
    content deleted since; ``query_sha256`` and ``query_chars`` stay for audit), the ids
    considered and returned, and the clock and alias it read."""

    recall_id: str
    at: datetime
    mode: Literal["summary", "raw_fallback"]
    query: str | None
    redacted: bool
    query_sha256: str | None
    query_chars: int | None
    filters: dict[str, Any]
    candidate_ids: list[str]
    selected_ids: list[str]
    tiers: dict[str, str]
    alias: AliasOut
    clock: ClockOut

    @classmethod
    def of(cls, r: RecallRecord) -> RecallRecordOut:
        red = r.redacted
        return cls(
            recall_id=r.recall_id,
            at=r.at,
            mode=r.mode,
            query=r.query,
            redacted=red is not None,
            query_sha256=red.query_sha256 if red else None,
            query_chars=red.query_chars if red else None,
            filters=dict(r.filters),
            candidate_ids=list(r.candidate_ids),
            selected_ids=list(r.selected_ids),
            tiers=dict(r.tiers),
            alias=AliasOut.of(r.alias),
            clock=ClockOut.of(r.clock),
        )


class ProposalOut(_Out):
    proposal_id: str
    predicate: str
    value: Any
    qualifiers: dict[str, str]
    source_event_ids: list[str]
    authority: Authority
    modality: Modality
    extractor: str
    status: str
    reason: str | None
    fact_id: str | None
    created_at: datetime

    @classmethod
    def of(cls, p: Proposal) -> ProposalOut:
        return cls(
            proposal_id=p.proposal_id,
            predicate=p.predicate,
            value=p.model_dump(mode="json")["value"],
            qualifiers=dict(p.qualifiers),
            source_event_ids=list(p.source_event_ids),
            authority=p.authority,
            modality=p.modality,
            extractor=p.extractor,
            status=p.status,
            reason=p.reason,
            fact_id=p.fact_id,
            created_at=p.created_at,
        )


class ExtractOut(_Out):
    """The proposals an extraction made, each with its outcome (asserted, waiting for review,
    refused, known)."""

    subject_id: str
    proposals: list[ProposalOut]


class JobOut(_Out):
    job_id: int
    subject_id: str
    status: Literal["pending", "running", "done", "review"]
    reason: str
    run_after: datetime
    tries: int
    lease_expires_at: datetime | None

    @classmethod
    def of(cls, j: Job) -> JobOut:
        return cls(
            job_id=j.job_id,
            subject_id=j.subject_id,
            status=j.status,
            reason=j.reason,
            run_after=j.run_after,
            tries=j.tries,
            lease_expires_at=j.lease_expires_at,
        )


class ConsolidateOut(_Out):
    """The rebuild job that will consolidate the subject (``queued``: false when one was
    already pending, and this is it). A worker (``lossgate worker``) runs it; poll the job,
    then the subject's attempts."""

    subject_id: str
    queued: bool
    job: JobOut


class AttemptOut(_Out):
    attempt_id: str
    number: int
    status: str
    lane: str
    started_at: datetime
    finished_at: datetime | None
    high_water: int
    input_epoch: int
    selected_ids: list[str]
    input_root: str
    compressor: str
    artifact_id: str | None
    gate_outcome: str | None
    violations: list[str]
    details: list[str]
    losses: list[str]
    error: str | None
    reason: str | None
    covers_through: int | None
    needs_review: bool

    @classmethod
    def of(cls, a: Attempt) -> AttemptOut:
        return cls(
            attempt_id=a.attempt_id,
            number=a.number,
            status=a.status,
            lane=a.lane,
            started_at=a.started_at,
            finished_at=a.finished_at,
            high_water=a.high_water,
            input_epoch=a.input_epoch,
            selected_ids=list(a.selected_ids),
            input_root=a.input_root,
            compressor=a.compressor,
            artifact_id=a.artifact_id,
            gate_outcome=a.gate_outcome,
            violations=list(a.violations),
            details=list(a.details),
            losses=list(a.losses),
            error=a.error,
            reason=a.reason,
            covers_through=a.covers_through,
            needs_review=a.needs_review,
        )


class ClaimOut(_Out):
    fact_id: str
    predicate: str
    value_type: str
    value: Any
    qualifiers: dict[str, str]
    polarity: Polarity
    modality: Modality
    authority: Authority
    derived_from: list[str]


class ManifestOut(_Out):
    """How an artifact was built (the manifest's main fields)."""

    path: str
    new_covers_through: int
    input_epoch: int
    parent_artifact_id: str | None
    inputs: int
    input_root: str
    compressor: str
    compressor_version: str
    prompt_version: str
    registry_version: int
    schema_version: int
    attempt: int
    part: str | None


class ArtifactOut(_Out):
    artifact_id: str
    state: str
    state_reason: str | None
    created_at: datetime
    gate_outcome: str | None
    summary: str
    claims: list[ClaimOut]
    open_items: list[str]
    unresolved_conflicts: list[list[str]]
    manifest: ManifestOut

    @classmethod
    def of(cls, a: Artifact) -> ArtifactOut:
        m, b = a.manifest, a.body
        outcome = a.gate.get("outcome")
        return cls(
            artifact_id=a.artifact_id,
            state=a.state,
            state_reason=a.state_reason,
            created_at=a.created_at,
            gate_outcome=outcome if isinstance(outcome, str) else None,
            summary=b.summary,
            claims=[
                ClaimOut(
                    fact_id=c.fact_id,
                    predicate=c.predicate,
                    value_type=c.value_type,
                    value=c.value,  # a claim carries the value's JSON form
                    qualifiers=dict(c.qualifiers),
                    polarity=c.polarity,
                    modality=c.modality,
                    authority=c.authority,
                    derived_from=list(c.derived_from),
                )
                for c in b.claims
            ],
            open_items=list(b.open_items),
            unresolved_conflicts=[list(c.fact_ids) for c in b.unresolved_conflicts],
            manifest=ManifestOut(
                path=m.path,
                new_covers_through=m.new_covers_through,
                input_epoch=m.input_epoch,
                parent_artifact_id=m.expected_alias.parent_artifact_id,
                inputs=len(m.inputs),
                input_root=m.input_root,
                compressor=m.compressor,
                compressor_version=m.compressor_version,
                prompt_version=m.prompt_version,
                registry_version=m.registry_version,
                schema_version=m.schema_version,
                attempt=m.attempt,
                part=m.part.key if m.part else None,
            ),
        )


class LogEntryOut(_Out):
    at: datetime
    op: str
    target_id: str
    detail: dict[str, Any]

    @classmethod
    def of(cls, e: LedgerEntry) -> LogEntryOut:
        return cls(at=e.at, op=e.op, target_id=e.target_id, detail=e.detail)


class LineageEdgeOut(_Out):
    input_kind: Literal["event", "fact", "artifact"]
    input_id: str


class AncestorOut(_Out):
    artifact_id: str
    state: str


class LineageOut(_Out):
    """An artifact (in any state: stale ones too), what it was derived from, the chain of
    parents behind it, and the tier moves made under it."""

    artifact: ArtifactOut
    edges: list[LineageEdgeOut]
    ancestors: list[AncestorOut]
    tier_moves: list[LogEntryOut]

    @classmethod
    def of(cls, v: LineageView) -> LineageOut:
        return cls(
            artifact=ArtifactOut.of(v.artifact),
            edges=[LineageEdgeOut(input_kind=e.input_kind, input_id=e.input_id) for e in v.edges],
            ancestors=[AncestorOut(artifact_id=a, state=s) for a, s in v.ancestors],
            tier_moves=[LogEntryOut.of(e) for e in v.tier_moves],
        )


class KeyOut(_Out):
    """The API key a request is made with (never its secret)."""

    tenant_id: str
    key_id: str
    scopes: list[Scope]
    name: str
    created_at: datetime

    @classmethod
    def of(cls, k: ApiKey) -> KeyOut:
        return cls(tenant_id=k.tenant_id, key_id=k.key_id, scopes=list(k.scopes), name=k.name, created_at=k.created_at)


class HealthOut(_Out):
    status: Literal["ok"]
    schema_version: int


class SubjectsOut(_Out):
    subjects: list[str]
