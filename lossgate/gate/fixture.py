"""The fact-contract fixture format (``fact-contract``): an expected ledger and one compressed
artifact, as JSON.

The format::

    {
      "expected": [
        {"fact_id": "fact-allergy-1", "tenant_id": "travel-co", "subject_id": "user-17",
         "predicate": "food.peanuts_allowed", "value": false,
         "qualifiers": {"basis": "allergy", "severity": "critical"},
         "source_event_id": "event-41", "status": "active"}
      ],
      "artifact": {
        "memory_version": 8, "tenant_id": "travel-co", "subject_id": "user-17",
        "facts": [
          {"fact_id": "fact-allergy-1", "tenant_id": "travel-co", "subject_id": "user-17",
           "predicate": "food.peanuts_allowed", "value": false,
           "qualifiers": {"basis": "allergy", "severity": "critical"},
           "source_event_ids": ["event-41"]}
        ],
        "summary": "User has a critical peanut allergy."
      }
    }

``qualifiers`` is optional (an object of strings); ``status`` is one of
``active``, ``superseded``, ``deleted``, ``revoked``. Values are raw JSON and
compare by JSON type and content, as ``type(a) is not type(b) or
a != b`` would, but strictly: ``false`` is not ``0`` even inside an object, and
``50.0`` is not ``50``. Three optional extensions: an expected fact may list
``source_event_ids`` instead of ``source_event_id``; any fact may carry
``polarity`` (``positive``/``negative``); and an expected fact may declare a
``value_type`` (``money``, ``date`` ...), which makes its value compare as
that lossgate type (``{"amount": "14250.00", "currency": "USD"}`` then equals
``{"currency": "USD", "amount": "14250"}``). The prose summary is not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lossgate.errors import InvalidInput
from lossgate.gate.contract import ArtifactFact, LedgerFact, compare_facts
from lossgate.gate.jsonio import field, opt_field, read_json, require_object, string_list, string_map
from lossgate.gate.outcome import GateResult, make_result
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.typed import TypedValue, json_value, typed_value
from lossgate.model.values import VALUE_TYPES, ValueMismatch, coerce_value

__all__ = [
    "ExpectedFact",
    "CompressedFact",
    "CompressionArtifact",
    "parse_fixture",
    "load_fixture",
    "contract_result",
    "validate_artifact",
    "is_contract_fixture",
]

STATUSES = ("active", "superseded", "deleted", "revoked")
POLARITIES = ("positive", "negative")


@dataclass(frozen=True)
class ExpectedFact:
    """A fact of the expected ledger, plus the optional extensions."""

    fact_id: str
    tenant_id: str
    subject_id: str
    predicate: str
    value: Any
    qualifiers: tuple[tuple[str, str], ...]
    source_event_id: str | tuple[str, ...]
    status: str
    polarity: str = "positive"
    value_type: str | None = None


@dataclass(frozen=True)
class CompressedFact:
    """A fact as the compressed artifact states it."""

    fact_id: str
    tenant_id: str
    subject_id: str
    predicate: str
    value: Any
    qualifiers: tuple[tuple[str, str], ...]
    source_event_ids: tuple[str, ...]
    polarity: str = "positive"


@dataclass(frozen=True)
class CompressionArtifact:
    """A compressed artifact."""

    memory_version: int
    tenant_id: str
    subject_id: str
    facts: tuple[CompressedFact, ...]
    summary: str


def _choice(obj: dict[str, Any], key: str, where: str, allowed: tuple[str, ...], default: str | None) -> str:
    value: str = field(obj, key, "string", where) if default is None else opt_field(obj, key, "string", where, default)
    if value not in allowed:
        raise InvalidInput(f"{where}.{key}: unknown {key} {value!r} (expected one of {', '.join(allowed)})")
    return value


def _common(obj: dict[str, Any], where: str) -> dict[str, Any]:
    return {
        "fact_id": field(obj, "fact_id", "string", where),
        "tenant_id": field(obj, "tenant_id", "string", where),
        "subject_id": field(obj, "subject_id", "string", where),
        "predicate": field(obj, "predicate", "string", where),
        "value": field(obj, "value", "any", where),
        "qualifiers": string_map(obj, "qualifiers", where),
        "polarity": _choice(obj, "polarity", where, POLARITIES, "positive"),
    }


def _expected(raw: Any, where: str) -> ExpectedFact:
    obj = require_object(raw, where)
    if "source_event_ids" in obj and "source_event_id" not in obj:
        sources: str | tuple[str, ...] = string_list(obj, "source_event_ids", where)
    else:
        sources = field(obj, "source_event_id", "string", where)
    value_type = opt_field(obj, "value_type", "string", where)
    if value_type is not None and value_type not in VALUE_TYPES:
        raise InvalidInput(f"{where}.value_type: unknown value type {value_type!r}")
    return ExpectedFact(
        **_common(obj, where),
        source_event_id=sources,
        status=_choice(obj, "status", where, STATUSES, None),
        value_type=value_type,
    )


def _compressed(raw: Any, where: str) -> CompressedFact:
    obj = require_object(raw, where)
    return CompressedFact(**_common(obj, where), source_event_ids=string_list(obj, "source_event_ids", where))


def parse_fixture(payload: Any) -> tuple[tuple[ExpectedFact, ...], CompressionArtifact]:
    """Validate a parsed fixture document; raises :class:`InvalidInput` naming the bad field."""
    doc = require_object(payload, "fixture")
    expected = tuple(
        _expected(item, f"expected[{i}]") for i, item in enumerate(field(doc, "expected", "array", "fixture"))
    )
    seen: set[str] = set()
    for fact in expected:
        if fact.fact_id in seen:
            raise InvalidInput(f"expected: fact id {fact.fact_id!r} is listed twice")
        seen.add(fact.fact_id)
    art = require_object(field(doc, "artifact", "object", "fixture"), "artifact")
    artifact = CompressionArtifact(
        memory_version=field(art, "memory_version", "integer", "artifact"),
        tenant_id=field(art, "tenant_id", "string", "artifact"),
        subject_id=field(art, "subject_id", "string", "artifact"),
        facts=tuple(
            _compressed(item, f"artifact.facts[{i}]") for i, item in enumerate(field(art, "facts", "array", "artifact"))
        ),
        summary=field(art, "summary", "string", "artifact"),
    )
    for fact in expected:  # a declared type must hold for the expected value itself
        if fact.value_type is not None and fact.status == "active":
            try:
                coerce_value("string" if fact.value_type == "enum" else fact.value_type, fact.value)
            except ValueMismatch as exc:
                raise InvalidInput(f"expected fact {fact.fact_id}: value is not a {fact.value_type} ({exc})") from None
    return expected, artifact


def is_contract_fixture(payload: Any) -> bool:
    """True if ``payload`` looks like the fixture format (has an ``expected`` ledger)."""
    return isinstance(payload, dict) and "expected" in payload


def load_fixture(path: str | Path) -> tuple[tuple[ExpectedFact, ...], CompressionArtifact]:
    """Read and validate a fixture file; raises :class:`InvalidInput`."""
    return parse_fixture(read_json(path))


def _value(value: Any, value_type: str | None) -> TypedValue:
    return json_value(value) if value_type is None else typed_value(value_type, value)


def _normalize(
    expected: tuple[ExpectedFact, ...],
    artifact: CompressionArtifact,
) -> tuple[list[LedgerFact], list[ArtifactFact]]:
    types = {e.fact_id: e.value_type for e in expected}
    ledger = [
        LedgerFact(
            fact_id=e.fact_id,
            tenant_id=e.tenant_id,
            subject_id=e.subject_id,
            predicate=e.predicate,
            status=e.status,
            value=_value(e.value, e.value_type),
            qualifiers=tuple(sorted(e.qualifiers)),
            required_sources=(e.source_event_id,) if isinstance(e.source_event_id, str) else tuple(e.source_event_id),
            polarity=e.polarity,
        )
        for e in expected
    ]
    observed = [
        ArtifactFact(
            fact_id=a.fact_id,
            tenant_id=a.tenant_id,
            subject_id=a.subject_id,
            predicate=a.predicate,
            value=_value(a.value, types.get(a.fact_id)),
            qualifiers=tuple(sorted(a.qualifiers)),
            sources=frozenset(a.source_event_ids),
            polarity=a.polarity,
        )
        for a in artifact.facts
    ]
    return ledger, observed


def contract_result(expected: tuple[ExpectedFact, ...], artifact: CompressionArtifact) -> GateResult:
    """The fact contract of a fixture as a :class:`GateResult`.

    Every active expected fact is treated as critical (the fixture format carries no
    criticality), so the outcome is ``clean`` or ``failed``.
    """
    ledger, observed = _normalize(expected, artifact)
    owners = {(e.tenant_id, e.subject_id) for e in expected if e.status == "active"}
    found = compare_facts(
        ledger,
        observed,
        owner=next(iter(owners)) if len(owners) == 1 else None,
        header=(artifact.tenant_id, artifact.subject_id),
    )
    active = tuple(sorted(e.fact_id for e in expected if e.status == "active"))
    return make_result(found, MustPreserve(critical=active))


def validate_artifact(expected: tuple[ExpectedFact, ...], artifact: CompressionArtifact) -> list[str]:
    """The fact contract's violations as ``<fact_id>:<code>`` lines, in a stable order."""
    return contract_result(expected, artifact).lines()
