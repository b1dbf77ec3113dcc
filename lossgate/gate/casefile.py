"""The lossgate gate-case format: a snapshot, a registry and a candidate artifact in JSON.

One file is one case, readable and checkable by hand::

    {
      "format": "lossgate.gate-case/1",
      "case_id": "peanut-allergy",
      "title": "A critical allergy, not a preference",
      "families": ["negation_loss", "qualifier_loss"],
      "tenant_id": "travel-co", "subject_id": "user-17",
      "registry": "predicates.toml",
      "events": [{"event_id": "event-41", "trust": "authenticated_user", "state": "valid",
                  "occurred_at": "2026-03-14T09:00:00+00:00", "text": "I am allergic ..."}],
      "facts": [{"fact_id": "fact-allergy-1", "predicate": "food.peanuts_allowed", "value": false,
                 "qualifiers": {"basis": "allergy", "severity": "critical"},
                 "sources": ["event-41"], "status": "active"}],
      "conflicts": [],
      "artifact": {"claims": [{"fact_id": "fact-allergy-1", "predicate": "food.peanuts_allowed",
                               "value": false, "qualifiers": {...}, "derived_from": ["event-41"]}],
                   "open_items": [], "unresolved_conflicts": [], "summary": "..."}
    }

``registry`` is a path relative to the case file (a registry TOML) or an
inline registry document (``{"version": 1, "predicates": {...}}``). Events
default to kind ``message``, actor ``user``, trust ``authenticated_user``,
state ``valid``; a deleted event has no actor and no text. Facts default to polarity
``positive``, modality ``asserted``, authority ``user``, status ``active``; a
deleted fact's value is purged on load (the ledger keeps only its tombstone),
so it may be written as ``null``. Claims take tenant, subject and value type
from the case and the registry unless they say otherwise, and keep their value
as raw JSON, as a compressor would emit it. ``tenant_id``/``subject_id`` on an
event, fact or claim override the case's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lossgate.errors import InvalidInput, LossgateError
from lossgate.gate.jsonio import field, opt_field, read_json, require_object, string_list, string_map
from lossgate.model.canonical import content_hash
from lossgate.model.records import (
    ArtifactBody,
    Claim,
    Clock,
    Conflict,
    ConflictRef,
    Event,
    Fact,
    NewEvent,
    Snapshot,
    fact_hash_content,
)
from lossgate.model.registry import Registry, load_registry, parse_registry
from lossgate.model.values import ValueMismatch, canonical_value, coerce_value

__all__ = ["GateCase", "FORMAT", "load_case", "parse_case", "is_case", "parse_artifact"]

FORMAT = "lossgate.gate-case/1"


@dataclass(frozen=True)
class GateCase:
    """One gate case: what the gate is given, plus the raw document it came from."""

    case_id: str
    title: str
    families: tuple[str, ...]
    registry: Registry
    snapshot: Snapshot
    artifact: ArtifactBody
    document: dict[str, Any]
    path: Path | None = None


def is_case(payload: Any) -> bool:
    """True if ``payload`` looks like a gate case (not a fact-contract fixture, ``fact-contract``)."""
    return isinstance(payload, dict) and payload.get("format") == FORMAT


def _when(obj: dict[str, Any], key: str, where: str) -> datetime:
    text = field(obj, key, "string", where)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"{where}.{key}: {text!r} is not an ISO 8601 datetime") from None
    if value.utcoffset() is None:
        raise InvalidInput(f"{where}.{key}: {text!r} has no UTC offset")
    return value


def _registry(doc: dict[str, Any], base: Path | None) -> Registry:
    ref = field(doc, "registry", "any", "case")
    if isinstance(ref, dict):
        return parse_registry(ref)
    if isinstance(ref, str):
        return load_registry((base / ref) if base is not None else Path(ref))
    raise InvalidInput("case.registry: expected a path string or an inline registry object")


def _events(doc: dict[str, Any], t: str, s: str) -> list[Event]:
    events = []
    for i, raw in enumerate(opt_field(doc, "events", "array", "case", [])):
        where = f"events[{i}]"
        obj = require_object(raw, where)
        state = opt_field(obj, "state", "string", where, "valid")
        text = opt_field(obj, "text", "string", where, "")
        try:
            new = NewEvent(
                tenant_id=opt_field(obj, "tenant_id", "string", where, t),
                subject_id=opt_field(obj, "subject_id", "string", where, s),
                event_id=field(obj, "event_id", "string", where),
                kind=opt_field(obj, "kind", "string", where, "message"),
                actor=opt_field(obj, "actor", "string", where, "user"),
                trust=opt_field(obj, "trust", "string", where, "authenticated_user"),
                text=text,
                occurred_at=_when(obj, "occurred_at", where),
            )
            deleted = state == "deleted"
            events.append(
                Event(
                    **new.model_dump(exclude={"actor", "text", "payload"}),
                    seq=i + 1,
                    recorded_at=new.occurred_at,
                    content_hash=new.content_hash(),
                    state=state,
                    actor=None if deleted else new.actor,
                    text=None if deleted else text,
                    payload=None if deleted else {},
                )
            )
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {_first(exc)}") from None
    return events


def _first(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"


def _facts(doc: dict[str, Any], t: str, s: str, registry: Registry, seq0: int) -> list[Fact]:
    facts = []
    for i, raw in enumerate(opt_field(doc, "facts", "array", "case", [])):
        where = f"facts[{i}]"
        obj = require_object(raw, where)
        pred = registry.get(field(obj, "predicate", "string", where))
        status = opt_field(obj, "status", "string", where, "active")
        fid = field(obj, "fact_id", "string", where)
        value = None
        if status != "deleted":
            try:
                value = coerce_value(pred.value_type, field(obj, "value", "any", where), enum_values=pred.enum_values)
            except ValueMismatch as exc:
                raise InvalidInput(
                    f"{where}.value: predicate {pred.name!r} expects {pred.value_type} ({exc})"
                ) from None
        fields = dict(
            tenant_id=opt_field(obj, "tenant_id", "string", where, t),
            subject_id=opt_field(obj, "subject_id", "string", where, s),
            qualifiers=string_map(obj, "qualifiers", where),
            polarity=opt_field(obj, "polarity", "string", where, "positive"),
            modality=opt_field(obj, "modality", "string", where, "asserted"),
            authority=opt_field(obj, "authority", "string", where, "user"),
            source_event_ids=tuple(sorted(set(string_list(obj, "sources", where)))),
            supersedes=opt_field(obj, "supersedes", "string", where),
        )
        body = fact_hash_content(
            fact_id=fid,
            predicate=pred.name,
            value_type=pred.value_type,
            valid_from=None,
            canonical=None if value is None else canonical_value(pred.value_type, value),
            **fields,
        )
        try:
            facts.append(
                Fact(
                    **fields,
                    fact_id=fid,
                    seq=seq0 + i + 1,
                    predicate=pred.name,
                    registry_version=registry.version,
                    value_type=pred.value_type,
                    value=value,
                    status=status,
                    superseded_by=opt_field(obj, "superseded_by", "string", where),
                    recorded_at=datetime.fromisoformat("2026-01-01T00:00:00+00:00"),
                    content_hash=content_hash(body),
                )
            )
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {_first(exc)}") from None
    return facts


def _conflicts(doc: dict[str, Any], t: str, s: str) -> list[Conflict]:
    out = []
    for i, raw in enumerate(opt_field(doc, "conflicts", "array", "case", [])):
        where = f"conflicts[{i}]"
        obj = require_object(raw, where)
        try:
            out.append(
                Conflict(
                    tenant_id=t,
                    subject_id=s,
                    conflict_id=field(obj, "conflict_id", "string", where),
                    predicate=field(obj, "predicate", "string", where),
                    # pydantic checks that there are two
                    fact_ids=tuple(sorted(string_list(obj, "fact_ids", where))),  # type: ignore[arg-type]
                    status=opt_field(obj, "status", "string", where, "unresolved"),
                    detected_at=datetime.fromisoformat("2026-01-01T00:00:00+00:00"),
                )
            )
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {_first(exc)}") from None
    return out


def parse_artifact(art: dict[str, Any], t: str, s: str, registry: Registry) -> ArtifactBody:
    """An :class:`ArtifactBody` from its case-file JSON form; raises :class:`InvalidInput`."""
    claims = []
    for i, raw in enumerate(opt_field(art, "claims", "array", "artifact", [])):
        where = f"artifact.claims[{i}]"
        obj = require_object(raw, where)
        predicate = field(obj, "predicate", "string", where)
        known = registry.predicates.get(predicate)
        value_type = opt_field(obj, "value_type", "string", where, known.value_type if known else None)
        if value_type is None:
            raise InvalidInput(f"{where}: predicate {predicate!r} is not in the registry; give value_type")
        try:
            claims.append(
                Claim(
                    fact_id=field(obj, "fact_id", "string", where),
                    tenant_id=opt_field(obj, "tenant_id", "string", where, t),
                    subject_id=opt_field(obj, "subject_id", "string", where, s),
                    predicate=predicate,
                    value_type=value_type,
                    value=field(obj, "value", "any", where),
                    qualifiers=string_map(obj, "qualifiers", where),
                    polarity=opt_field(obj, "polarity", "string", where, "positive"),
                    modality=opt_field(obj, "modality", "string", where, "asserted"),
                    authority=opt_field(obj, "authority", "string", where, "user"),
                    derived_from=string_list(obj, "derived_from", where, required=False),
                )
            )
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {_first(exc)}") from None
    refs = []
    for i, raw in enumerate(opt_field(art, "unresolved_conflicts", "array", "artifact", [])):
        where = f"artifact.unresolved_conflicts[{i}]"
        obj = require_object(raw, where)
        try:
            refs.append(
                ConflictRef(
                    conflict_id=field(obj, "conflict_id", "string", where),
                    fact_ids=string_list(obj, "fact_ids", where),  # type: ignore[arg-type]
                )
            )
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {_first(exc)}") from None
    return ArtifactBody(
        tenant_id=opt_field(art, "tenant_id", "string", "artifact", t),
        subject_id=opt_field(art, "subject_id", "string", "artifact", s),
        claims=tuple(claims),
        open_items=string_list(art, "open_items", "artifact", required=False),
        unresolved_conflicts=tuple(refs),
        summary=opt_field(art, "summary", "string", "artifact", ""),
    )


def parse_case(doc: Any, *, base: Path | None = None) -> GateCase:
    """Build a :class:`GateCase` from a parsed document; raises :class:`InvalidInput`.

    ``base`` is the directory a registry path is relative to.
    """
    doc = require_object(doc, "case")
    if doc.get("format") != FORMAT:
        raise InvalidInput(f"case.format: expected {FORMAT!r}")
    t, s = field(doc, "tenant_id", "string", "case"), field(doc, "subject_id", "string", "case")
    try:
        registry = _registry(doc, base)
    except LossgateError as exc:
        raise InvalidInput(f"case.registry: {exc}") from None
    events = _events(doc, t, s)
    facts = _facts(doc, t, s, registry, len(events))
    snapshot = Snapshot(
        tenant_id=t,
        subject_id=s,
        registry_version=registry.version,
        clock=Clock(tenant_id=t, subject_id=s, high_water=len(events) + len(facts), input_epoch=0),
        events=tuple(events),
        facts=tuple(facts),
        conflicts=tuple(_conflicts(doc, t, s)),
    )
    artifact = parse_artifact(field(doc, "artifact", "object", "case"), t, s, registry)
    return GateCase(
        case_id=field(doc, "case_id", "string", "case"),
        title=opt_field(doc, "title", "string", "case", ""),
        families=string_list(doc, "families", "case", required=False),
        registry=registry,
        snapshot=snapshot,
        artifact=artifact,
        document=doc,
    )


def load_case(path: str | Path) -> GateCase:
    """Read a gate case file; raises :class:`InvalidInput`."""
    path = Path(path)
    case = parse_case(read_json(path), base=path.parent)
    return GateCase(**{**case.__dict__, "path": path})
