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

from datetime import UTC, datetime, tzinfo
from typing import Any

import orjson
from pydantic_core import TzInfo

from lossgate.errors import UnknownFormat
from lossgate.model.derived_records import (
    Alias,
    Artifact,
    Attempt,
    GuardResult,
    Job,
    Manifest,
    RecallRecord,
    ResponseRecord,
)
from lossgate.model.records import ArtifactBody, Conflict, Event, Fact, LedgerEntry, NewEvent
from lossgate.model.trusted import trusted
from lossgate.model.values import decode_value

EVENT_COLUMNS = (
    "tenant_id",
    "subject_id",
    "seq",
    "event_id",
    "kind",
    "actor",
    "trust",
    "text",
    "payload",
    "occurred_at",
    "recorded_at",
    "content_hash",
    "state",
    "tier",
)
FACT_COLUMNS = (
    "tenant_id",
    "subject_id",
    "fact_id",
    "seq",
    "predicate",
    "registry_version",
    "value_type",
    "value",
    "qualifiers",
    "polarity",
    "modality",
    "authority",
    "source_event_ids",
    "status",
    "supersedes",
    "superseded_by",
    "valid_from",
    "recorded_at",
    "content_hash",
    "criticality",
)
# Written, never read back into the record: the keyword-search text of a fact.
FACT_INSERT_COLUMNS = FACT_COLUMNS + ("search_text",)
CONFLICT_COLUMNS = (
    "tenant_id",
    "subject_id",
    "conflict_id",
    "predicate",
    "fact_a",
    "fact_b",
    "status",
    "detected_at",
    "resolved_at",
    "resolution",
)
LOG_COLUMNS = ("tenant_id", "subject_id", "entry_id", "at", "op", "target_id", "detail")

_EVENT_FIELDS = frozenset(Event.model_fields)
_FACT_FIELDS = frozenset(Fact.model_fields)
_CONFLICT_FIELDS = frozenset(Conflict.model_fields)
_LOG_FIELDS = frozenset(LedgerEntry.model_fields)


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, (str, bytes)) else value


# tzinfo of a parsed ISO time -> the one pydantic gives the same text (see _ts)
_SAME_TZ: dict[tzinfo, tzinfo | None] = {}


def _pydantic_tz(tz: tzinfo, at: datetime) -> tzinfo | None:
    """The tzinfo pydantic gives a parsed ISO time of ``tz``'s UTC offset (``TzInfo``), or
    ``None`` for an offset finer than a second, which ``TzInfo`` cannot hold."""
    offset = tz.utcoffset(at)
    same = None if offset is None or offset.microseconds else TzInfo(offset.days * 86_400 + offset.seconds)
    if len(_SAME_TZ) < 4096:  # offsets are few; a bound all the same
        _SAME_TZ[tz] = same
    return same


def _ts(value: Any) -> datetime | None:
    """A stored time: ``None``, a ``datetime`` (PostgreSQL's timestamptz: kept as it is, as
    validation keeps it) or ISO text (SQLite, and caller times kept as text), parsed into
    the very datetime pydantic makes of that text: the same instant and offset, and its
    ``TzInfo`` (``datetime.fromisoformat`` gives a ``timezone``: equal, but ``tzname()`` and
    ``repr`` differ). Rebuilt by the constructor, which costs a fifth of ``replace``."""
    if value is None or isinstance(value, datetime):
        return value
    p = datetime.fromisoformat(value)
    tz = p.tzinfo
    if tz is None:
        return p
    same = _SAME_TZ[tz] if tz in _SAME_TZ else _pydantic_tz(tz, p)
    if same is None:
        return p
    return datetime(p.year, p.month, p.day, p.hour, p.minute, p.second, p.microsecond, same)


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
        ev.tenant_id,
        ev.subject_id,
        seq,
        ev.event_id,
        ev.kind,
        ev.actor,
        ev.trust,
        ev.text,
        dumps(ev.payload),
        occurred_at,
        recorded_at,
        content_hash,
        "valid",
        "hot",
    )


def _event_fields(r: Any) -> dict[str, Any]:
    """The fields of a row of :data:`EVENT_COLUMNS`, its instants as the driver gave them."""
    return {
        "tenant_id": r[0],
        "subject_id": r[1],
        "event_id": r[3],
        "seq": r[2],
        "kind": r[4],
        "actor": r[5],
        "trust": r[6],
        "text": r[7],
        "payload": None if r[8] is None else _json(r[8]),
        "occurred_at": r[9],
        "recorded_at": r[10],
        "content_hash": r[11],
        "state": r[12],
        "tier": r[13],
    }


def event_from_row(r: Any) -> Event:
    """An :class:`Event` from a row of :data:`EVENT_COLUMNS`, without validation (:func:`~lossgate.model.trusted.trusted`)."""
    fields = _event_fields(r)
    fields["occurred_at"], fields["recorded_at"] = _ts(r[9]), _ts(r[10])
    return trusted(Event, _EVENT_FIELDS, fields)


def event_from_row_validated(r: Any) -> Event:
    """The same record as :func:`event_from_row`, through full validation: what the fast path
    must equal (the conformance test and ``bench/bench_rows.py`` compare them)."""
    return Event.model_validate(_event_fields(r))


def fact_row(f: Fact) -> tuple[Any, ...]:
    return (
        f.tenant_id,
        f.subject_id,
        f.fact_id,
        f.seq,
        f.predicate,
        f.registry_version,
        f.value_type,
        None if f.value is None else dumps(f.encoded_value()),
        dumps([list(p) for p in f.qualifiers]),
        f.polarity,
        f.modality,
        f.authority,
        dumps(list(f.source_event_ids)),
        f.status,
        f.supersedes,
        f.superseded_by,
        iso(f.valid_from),
        instant(f.recorded_at),
        f.content_hash,
        f.criticality,
        f.search_text(),
    )


def _fact_fields(r: Any) -> dict[str, Any]:
    """The fields of a row of :data:`FACT_COLUMNS` as JSON gives them (lists, the instants as
    the driver gave them); a purged fact's value and qualifiers are NULL."""
    raw = _json(r[7])
    return {
        "tenant_id": r[0],
        "subject_id": r[1],
        "fact_id": r[2],
        "seq": r[3],
        "predicate": r[4],
        "registry_version": r[5],
        "value_type": r[6],
        "value": None if raw is None else decode_value(r[6], raw),
        "qualifiers": _json(r[8]) or [],
        "polarity": r[9],
        "modality": r[10],
        "authority": r[11],
        "source_event_ids": _json(r[12]),
        "status": r[13],
        "supersedes": r[14],
        "superseded_by": r[15],
        "valid_from": r[16],
        "recorded_at": r[17],
        "content_hash": r[18],
        "criticality": r[19],
    }


def fact_from_row(r: Any) -> Fact:
    """A :class:`Fact` from a row of :data:`FACT_COLUMNS`, without validation (:func:`~lossgate.model.trusted.trusted`).
    A purged fact's value and qualifiers are NULL: ``None`` and ``()``."""
    fields = _fact_fields(r)
    fields["qualifiers"] = tuple([(k, v) for k, v in fields["qualifiers"]])
    fields["source_event_ids"] = tuple(fields["source_event_ids"])
    fields["valid_from"], fields["recorded_at"] = _ts(r[16]), _ts(r[17])
    return trusted(Fact, _FACT_FIELDS, fields)


def fact_from_row_validated(r: Any) -> Fact:
    """The same record as :func:`fact_from_row`, through full validation (see
    :func:`event_from_row_validated`)."""
    return Fact.model_validate(_fact_fields(r))


def conflict_row(c: Conflict) -> tuple[Any, ...]:
    return (
        c.tenant_id,
        c.subject_id,
        c.conflict_id,
        c.predicate,
        c.fact_ids[0],
        c.fact_ids[1],
        c.status,
        instant(c.detected_at),
        instant_or_none(c.resolved_at),
        c.resolution,
    )


def _conflict_fields(r: Any) -> dict[str, Any]:
    """The fields of a row of :data:`CONFLICT_COLUMNS`, its instants as the driver gave them."""
    return {
        "tenant_id": r[0],
        "subject_id": r[1],
        "conflict_id": r[2],
        "predicate": r[3],
        "fact_ids": (r[4], r[5]),
        "status": r[6],
        "detected_at": r[7],
        "resolved_at": r[8],
        "resolution": r[9],
    }


def conflict_from_row(r: Any) -> Conflict:
    """A :class:`Conflict` from a row of :data:`CONFLICT_COLUMNS`, without validation."""
    fields = _conflict_fields(r)
    fields["detected_at"], fields["resolved_at"] = _ts(r[7]), _ts(r[8])
    return trusted(Conflict, _CONFLICT_FIELDS, fields)


def conflict_from_row_validated(r: Any) -> Conflict:
    return Conflict.model_validate(_conflict_fields(r))


def log_from_row(r: Any) -> LedgerEntry:
    """A :class:`LedgerEntry` from a row of :data:`LOG_COLUMNS`, without validation."""
    return trusted(
        LedgerEntry,
        _LOG_FIELDS,
        {
            "tenant_id": r[0],
            "subject_id": r[1],
            "entry_id": r[2],
            "at": _ts(r[3]),
            "op": r[4],
            "target_id": r[5],
            "detail": _json(r[6]) or {},
        },
    )


def log_from_row_validated(r: Any) -> LedgerEntry:
    return LedgerEntry.model_validate(
        {
            "tenant_id": r[0],
            "subject_id": r[1],
            "entry_id": r[2],
            "at": r[3],
            "op": r[4],
            "target_id": r[5],
            "detail": _json(r[6]) or {},
        }
    )


ARTIFACT_COLUMNS = (
    "tenant_id",
    "subject_id",
    "artifact_id",
    "state",
    "body",
    "manifest",
    "gate",
    "created_at",
    "state_reason",
)
ALIAS_COLUMNS = ("tenant_id", "subject_id", "artifact_id", "source_epoch", "covers_through", "updated_at")
JOB_COLUMNS = (
    "job_id",
    "tenant_id",
    "subject_id",
    "status",
    "reason",
    "run_after",
    "tries",
    "lease_owner",
    "lease_expires_at",
)


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
    """The body of a stored document of format 1 or 2; :class:`UnknownFormat` (a StoreError) for another
    format (a newer lossgate wrote it: reading it as this one would misread it)."""
    fmt = stored_format(body)
    if fmt is None or fmt > ARTIFACT_FORMAT:
        raise UnknownFormat(
            f"artifact {artifact_id} is stored in format {body.get('format')!r}; this lossgate "
            f"reads formats 1 to {ARTIFACT_FORMAT} (lossgate migrate)"
        )
    return ArtifactBody.model_validate({k: v for k, v in body.items() if k != "format"})


def artifact_row(a: Artifact) -> tuple[Any, ...]:
    return (
        a.tenant_id,
        a.subject_id,
        a.artifact_id,
        a.state,
        body_json(a.body),
        a.manifest.model_dump_json(),
        dumps(a.gate),
        instant(a.created_at),
        a.state_reason,
    )


def artifact_from_row(r: Any) -> Artifact:
    return Artifact(
        tenant_id=r[0],
        subject_id=r[1],
        artifact_id=r[2],
        state=r[3],
        body=body_from_json(r[2], _json(r[4])),
        manifest=Manifest.model_validate(_json(r[5])),
        gate=_json(r[6]),
        created_at=_instant(r[7]),
        state_reason=r[8],
    )


def alias_from_row(r: Any) -> Alias:
    return Alias(
        tenant_id=r[0], subject_id=r[1], artifact_id=r[2], source_epoch=r[3], covers_through=r[4], updated_at=_ts(r[5])
    )


def job_from_row(r: Any) -> Job:
    return Job(
        job_id=r[0],
        tenant_id=r[1],
        subject_id=r[2],
        status=r[3],
        reason=r[4],
        run_after=_instant(r[5]),
        tries=r[6],
        lease_owner=r[7],
        lease_expires_at=_ts(r[8]),
    )


def attempt_from_json(value: Any) -> Attempt:
    return Attempt.model_validate(_json(value))


def recall_from_json(value: Any) -> RecallRecord:
    return RecallRecord.model_validate(_json(value))


def guard_from_json(value: Any) -> GuardResult:
    return GuardResult.model_validate(_json(value))


def response_from_json(value: Any) -> ResponseRecord:
    return ResponseRecord.model_validate(_json(value))
