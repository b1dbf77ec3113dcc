"""Row <-> record conversion shared by the SQL backends.

Both backends hand back JSON columns as text (the PostgreSQL store registers a
text loader for json/jsonb: a decoded JSON string could not be told apart from
undecoded text) and these helpers decode it. Timestamps come back as ISO
strings from SQLite and as ``datetime`` from PostgreSQL; both are accepted.

An artifact's stored body states its format (``"format": 2``, :data:`ARTIFACT_FORMAT`);
a body without one is format 1, as every artifact was stored before formats existed.
The reader here reads both (their structure is the same) and refuses a newer one.
What format 2 asks of a body, and the migration from 1, are in
:mod:`lossgate.ops.migrate`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from lossgate.derived import Alias, Artifact, Attempt, Job, Manifest, RecallRecord
from lossgate.errors import StoreError
from lossgate.records import ArtifactBody, Conflict, Event, Fact, LedgerEntry, NewEvent
from lossgate.values import decode_value

EVENT_COLUMNS = (
    "tenant_id", "subject_id", "seq", "event_id", "kind", "actor", "trust", "text", "payload",
    "occurred_at", "recorded_at", "content_hash", "state", "tier",
)
FACT_COLUMNS = (
    "tenant_id", "subject_id", "fact_id", "seq", "predicate", "registry_version", "value_type",
    "value", "qualifiers", "polarity", "modality", "authority", "source_event_ids", "status",
    "supersedes", "superseded_by", "valid_from", "recorded_at", "content_hash", "criticality",
)
# Written, never read back into the record: the keyword-search text of a fact.
FACT_INSERT_COLUMNS = FACT_COLUMNS + ("search_text",)
CONFLICT_COLUMNS = (
    "tenant_id", "subject_id", "conflict_id", "predicate", "fact_a", "fact_b", "status",
    "detected_at", "resolved_at", "resolution",
)
LOG_COLUMNS = ("tenant_id", "subject_id", "entry_id", "at", "op", "target_id", "detail")
M = TypeVar("M")


def _construct(cls: type[M], values: dict[str, Any]) -> M:
    """Build a trusted record from stored columns without validation.

    pydantic's ``model_construct`` still walks every field for defaults; rows come back
    with every field present, and this is the read hot path (recall builds hundreds)."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, (str, bytes)) else value


def _ts(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


def _instant(value: Any) -> datetime:
    """A timestamp of a NOT NULL column."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def instant_from(value: Any) -> datetime:
    """A stored instant (ISO text in UTC from SQLite, a ``datetime`` from PostgreSQL)."""
    return _instant(value)


def iso(value: datetime | None) -> str | None:
    """A caller's time as given, offset kept (occurred_at, valid_from: invariant 9)."""
    return None if value is None else value.isoformat()


def instant(value: datetime) -> str:
    """A machine instant as ISO text in UTC, so that text order is time order (SQLite
    compares and sorts these columns as text; PostgreSQL parses them into timestamptz).
    A naive time (which records refuse) is written as it is."""
    return (value if value.tzinfo is None else value.astimezone(UTC)).isoformat()


def instant_or_none(value: datetime | None) -> str | None:
    return None if value is None else instant(value)


def new_event_row(ev: NewEvent, seq: int, content_hash: str, occurred_at: str, recorded_at: str) -> tuple[Any, ...]:
    """The row of a freshly appended event (the append hot path: no Event model is built)."""
    return (
        ev.tenant_id, ev.subject_id, seq, ev.event_id, ev.kind, ev.actor, ev.trust, ev.text,
        dumps(ev.payload), occurred_at, recorded_at, content_hash, "valid", "hot",
    )


def event_from_row(r: Any) -> Event:
    return _construct(Event, dict(
        tenant_id=r[0], subject_id=r[1], seq=r[2], event_id=r[3], kind=r[4], actor=r[5],
        trust=r[6], text=r[7], payload=None if r[8] is None else _json(r[8]),
        occurred_at=_ts(r[9]), recorded_at=_ts(r[10]), content_hash=r[11], state=r[12], tier=r[13],
    ))


def fact_row(f: Fact) -> tuple[Any, ...]:
    return (
        f.tenant_id, f.subject_id, f.fact_id, f.seq, f.predicate, f.registry_version, f.value_type,
        None if f.value is None else dumps(f.encoded_value()),
        dumps([list(p) for p in f.qualifiers]), f.polarity, f.modality, f.authority,
        dumps(list(f.source_event_ids)), f.status, f.supersedes, f.superseded_by,
        iso(f.valid_from), instant(f.recorded_at), f.content_hash, f.criticality, f.search_text(),
    )


def fact_from_row(r: Any) -> Fact:
    value_type = r[6]
    raw = _json(r[7])
    quals = _json(r[8]) or []
    return _construct(Fact, dict(
        tenant_id=r[0], subject_id=r[1], fact_id=r[2], seq=r[3], predicate=r[4],
        registry_version=r[5], value_type=value_type,
        value=None if raw is None else decode_value(value_type, raw),
        qualifiers=tuple((k, v) for k, v in quals), polarity=r[9], modality=r[10],
        authority=r[11], source_event_ids=tuple(_json(r[12])), status=r[13], supersedes=r[14],
        superseded_by=r[15], valid_from=_ts(r[16]), recorded_at=_ts(r[17]), content_hash=r[18],
        criticality=r[19],
    ))


def conflict_row(c: Conflict) -> tuple[Any, ...]:
    return (
        c.tenant_id, c.subject_id, c.conflict_id, c.predicate, c.fact_ids[0], c.fact_ids[1],
        c.status, instant(c.detected_at), instant_or_none(c.resolved_at), c.resolution,
    )


def conflict_from_row(r: Any) -> Conflict:
    return Conflict.model_construct(
        tenant_id=r[0], subject_id=r[1], conflict_id=r[2], predicate=r[3], fact_ids=(r[4], r[5]),
        status=r[6], detected_at=_ts(r[7]), resolved_at=_ts(r[8]), resolution=r[9],
    )


def log_from_row(r: Any) -> LedgerEntry:
    return LedgerEntry.model_construct(
        tenant_id=r[0], subject_id=r[1], entry_id=r[2], at=_ts(r[3]), op=r[4], target_id=r[5],
        detail=_json(r[6]) or {},
    )


ARTIFACT_COLUMNS = ("tenant_id", "subject_id", "artifact_id", "state", "body", "manifest", "gate", "created_at", "state_reason")
ALIAS_COLUMNS = ("tenant_id", "subject_id", "artifact_id", "source_epoch", "covers_through", "updated_at")
JOB_COLUMNS = ("job_id", "tenant_id", "subject_id", "status", "reason", "run_after", "tries", "lease_owner", "lease_expires_at")


# The format of the artifact bodies this lossgate writes; a stored body without a
# ``format`` key is format 1 (lossgate.ops.migrate has the formats and the migration).
ARTIFACT_FORMAT = 2


def body_json(body: ArtifactBody) -> str:
    """An artifact body as stored: its JSON with ``"format"`` first."""
    text = body.model_dump_json()  # an object with at least tenant_id and subject_id: "{...}"
    return f'{{"format":{ARTIFACT_FORMAT},{text[1:]}'


def stored_format(body: dict[str, Any]) -> int | None:
    """The format a stored body states (1 when it states none), or ``None`` when its
    ``format`` is not a positive integer."""
    value = body.get("format", 1)
    return value if type(value) is int and value >= 1 else None


def body_from_json(artifact_id: str, body: dict[str, Any]) -> ArtifactBody:
    """The body of a stored document of format 1 or 2; :class:`StoreError` for another
    format (a newer lossgate wrote it: reading it as this one would misread it)."""
    fmt = stored_format(body)
    if fmt is None or fmt > ARTIFACT_FORMAT:
        raise StoreError(f"artifact {artifact_id} is stored in format {body.get('format')!r}; this lossgate "
                         f"reads formats 1 to {ARTIFACT_FORMAT} (lossgate migrate)")
    return ArtifactBody.model_validate({k: v for k, v in body.items() if k != "format"})


def artifact_row(a: Artifact) -> tuple[Any, ...]:
    return (a.tenant_id, a.subject_id, a.artifact_id, a.state, body_json(a.body),
            a.manifest.model_dump_json(), dumps(a.gate), instant(a.created_at), a.state_reason)


def artifact_from_row(r: Any) -> Artifact:
    return Artifact(
        tenant_id=r[0], subject_id=r[1], artifact_id=r[2], state=r[3],
        body=body_from_json(r[2], _json(r[4])), manifest=Manifest.model_validate(_json(r[5])),
        gate=_json(r[6]), created_at=_instant(r[7]), state_reason=r[8],
    )


def alias_from_row(r: Any) -> Alias:
    return Alias(tenant_id=r[0], subject_id=r[1], artifact_id=r[2], source_epoch=r[3],
                 covers_through=r[4], updated_at=_ts(r[5]))


def job_from_row(r: Any) -> Job:
    return Job(job_id=r[0], tenant_id=r[1], subject_id=r[2], status=r[3], reason=r[4],
               run_after=_instant(r[5]), tries=r[6], lease_owner=r[7], lease_expires_at=_ts(r[8]))


def attempt_from_json(value: Any) -> Attempt:
    return Attempt.model_validate(_json(value))


def recall_from_json(value: Any) -> RecallRecord:
    return RecallRecord.model_validate(_json(value))
