"""The fact contract (seed 000): compare an artifact's facts with the expected ledger.

One comparison, :func:`compare_facts`, runs over a small normalized form
(:class:`LedgerFact`, :class:`ArtifactFact`, :class:`TypedValue`). Two
adapters feed it: :func:`check_contract` for lossgate records (a
:class:`~lossgate.records.Snapshot` and an
:class:`~lossgate.records.ArtifactBody`) and :mod:`lossgate.gate.fixture`
for the seed-000 JSON format.

Codes, per expected fact id (all critical unless noted):

``missing``
    an active fact has no claim. Severity from the must-preserve set: critical for
    a hard reason, important or contextual otherwise (see :mod:`~lossgate.gate.preserve`).
``tenant_changed`` / ``subject_changed`` / ``predicate_changed``
    the claim names another tenant, subject or predicate (entity merge). On the
    subject ``artifact``: the artifact's own header names another tenant or subject.
``value_changed``
    the typed value differs. Types count: ``False`` is not ``"false"``, ``50`` is
    not ``50.0``; records compare ``value_type`` plus
    :func:`~lossgate.values.canonical_value`, so money is a decimal amount plus a
    currency whatever the key order or trailing zeros. The detail names both types.
``polarity_flipped``
    the claim's polarity differs (``positive`` vs ``negative``).
``qualifiers_changed``
    the qualifier set differs (order-insensitive, content-exact).
``modality_changed`` / ``authority_changed``
    records only: a speculative statement became asserted, or the authority
    changed. Not checked for untrusted facts (``untrusted_elevated`` covers those).
``provenance_missing``
    a source event of the fact is not among the claim's sources. For records: every
    *valid* source event of the fact must be in ``derived_from``.
``forbidden_superseded_fact`` / ``forbidden_deleted_fact`` / ``forbidden_revoked_fact``
    a fact that is no longer active appears in the artifact.
``unsupported_fact``
    a claim names a fact id the ledger does not have.
``duplicate_fact_id``
    two claims share a fact id; each copy is also compared, so a bad copy cannot
    hide behind a good one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Hashable, Iterable, Sequence

from lossgate.gate.outcome import Severity, Violation
from lossgate.records import ArtifactBody, Snapshot
from lossgate.values import ValueMismatch, canonical_value, coerce_value

__all__ = [
    "TypedValue", "LedgerFact", "ArtifactFact", "compare_facts", "check_contract",
    "ledger_facts", "artifact_facts", "typed_value", "json_value", "json_type_name",
]


@dataclass(frozen=True, slots=True)
class TypedValue:
    """A value reduced to what equality means for it.

    ``key`` compares with ``==``: equal keys, equal meaning (``None`` never matches,
    used for a value that cannot be read as its declared type). ``type_name`` is
    printed on ``value_changed``; ``shown`` is a JSON rendering for details.
    """

    type_name: str
    key: Hashable | tuple | None
    canonical: Any

    def shown(self) -> str:
        return f"{self.type_name} {_dump(self.canonical)}"

    def matches(self, other: TypedValue) -> bool:
        return self.key is not None and self.key == other.key


def _dump(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def json_type_name(value: Any) -> str:
    """JSON type of a parsed value; numbers with a fraction or exponent are ``float``."""
    t = type(value)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is float or t is Decimal:
        return "float"
    if t is str:
        return "string"
    if value is None:
        return "null"
    if t is dict:
        return "object"
    if t is list or t is tuple:
        return "array"
    return t.__name__


def _tag(value: Any) -> Hashable:
    """A hashable form that keeps JSON types apart (``True != 1``, ``50 != 50.0``)."""
    name = json_type_name(value)
    if name == "object":
        return ("object", tuple(sorted((k, _tag(v)) for k, v in value.items())))
    if name == "array":
        return ("array", tuple(_tag(v) for v in value))
    return (name, value)


def json_value(value: Any) -> TypedValue:
    """A raw JSON value compared by JSON type and content (the seed-000 rule)."""
    return TypedValue(json_type_name(value), _tag(value), value)


def typed_value(value_type: str, value: Any) -> TypedValue:
    """A typed value compared by ``value_type`` and canonical form.

    A value that cannot be read as ``value_type`` (``"false"`` for a bool) gets
    ``key=None`` and its JSON type as ``type_name``, so the mismatch names both types.
    """
    if value is None:
        return TypedValue("null", None, None)
    try:
        # Enum membership is the registry's business at assertion time; here only
        # the spelling matters, and an enum value is a string.
        coerced = coerce_value("string" if value_type == "enum" else value_type, value)
        canon = canonical_value(value_type, coerced)
    except (ValueMismatch, TypeError, ValueError, AttributeError):
        return TypedValue(json_type_name(value), None, value)
    return TypedValue(value_type, (value_type, _tag(canon)), canon)


@dataclass(frozen=True, slots=True)
class LedgerFact:
    """An expected fact. ``required_sources``: source ids the artifact must cite."""

    fact_id: str
    tenant_id: str
    subject_id: str
    predicate: str
    status: str
    value: TypedValue
    qualifiers: tuple[tuple[str, str], ...]
    required_sources: tuple[str, ...]
    polarity: str = "positive"
    modality: str | None = None
    authority: str | None = None


@dataclass(frozen=True, slots=True)
class ArtifactFact:
    """A fact as an artifact states it. ``sources``: what it cites."""

    fact_id: str
    tenant_id: str
    subject_id: str
    predicate: str
    value: TypedValue
    qualifiers: tuple[tuple[str, str], ...]
    sources: frozenset[str]
    polarity: str = "positive"
    modality: str | None = None
    authority: str | None = None


def _v(code: str, subject: str, detail: str, *, expected: Any = None, observed: Any = None,
       severity: Severity = "critical") -> Violation:
    return Violation(
        code=code, subject=subject, severity=severity, detail=detail,  # type: ignore[arg-type]
        expected=None if expected is None else str(expected),
        observed=None if observed is None else str(observed),
    )


def _qualifier_detail(want: tuple[tuple[str, str], ...], got: tuple[tuple[str, str], ...]) -> str:
    w, g = dict(want), dict(got)
    parts = [f"lost {k}={w[k]!r}" for k in sorted(w.keys() - g.keys())]
    parts += [f"{k}: {w[k]!r} -> {g[k]!r}" for k in sorted(w.keys() & g.keys()) if w[k] != g[k]]
    parts += [f"added {k}={g[k]!r}" for k in sorted(g.keys() - w.keys())]
    return "; ".join(parts)


def _compare(e: LedgerFact, a: ArtifactFact, out: list[Violation]) -> None:
    fid = e.fact_id
    if a.tenant_id != e.tenant_id:
        out.append(_v("tenant_changed", fid, "claim names another tenant", expected=e.tenant_id, observed=a.tenant_id))
    if a.subject_id != e.subject_id:
        out.append(_v("subject_changed", fid, "claim names another subject", expected=e.subject_id, observed=a.subject_id))
    if a.predicate != e.predicate:
        out.append(_v("predicate_changed", fid, "claim names another predicate", expected=e.predicate, observed=a.predicate))
    if not e.value.matches(a.value):
        out.append(_v(
            "value_changed", fid,
            f"expected type {e.value.type_name}, observed type {a.value.type_name}",
            expected=e.value.shown(), observed=a.value.shown(),
        ))
    if a.polarity != e.polarity:
        out.append(_v("polarity_flipped", fid, "polarity differs", expected=e.polarity, observed=a.polarity))
    if a.qualifiers != e.qualifiers:
        out.append(_v(
            "qualifiers_changed", fid, _qualifier_detail(e.qualifiers, a.qualifiers),
            expected=_dump(dict(e.qualifiers)), observed=_dump(dict(a.qualifiers)),
        ))
    if e.authority not in (None, "untrusted") and a.authority is not None:
        if a.modality != e.modality:
            out.append(_v("modality_changed", fid, "modality differs", expected=e.modality, observed=a.modality))
        if a.authority != e.authority:
            out.append(_v("authority_changed", fid, "authority differs", expected=e.authority, observed=a.authority))
    lost = [s for s in e.required_sources if s not in a.sources]
    if lost:
        out.append(_v(
            "provenance_missing", fid, f"not cited: {', '.join(lost)}",
            expected=_dump(list(e.required_sources)), observed=_dump(sorted(a.sources)),
        ))


def compare_facts(
    expected: Iterable[LedgerFact],
    observed: Sequence[ArtifactFact],
    *,
    owner: tuple[str, str] | None = None,
    header: tuple[str, str] | None = None,
    loss_severity: Callable[[str], Severity] | None = None,
) -> list[Violation]:
    """Every contract violation of ``observed`` against ``expected`` (unordered).

    ``owner`` is the (tenant, subject) the ledger belongs to and ``header`` the one the
    artifact declares; when both are given and differ, the subject ``artifact`` gets
    ``tenant_changed``/``subject_changed``. ``loss_severity(fact_id)`` grades
    ``missing`` (default: critical, as in seed 000). Linear in the number of facts.
    """
    out: list[Violation] = []
    by_id: dict[str, list[ArtifactFact]] = {}
    for a in observed:
        by_id.setdefault(a.fact_id, []).append(a)
    for fid, copies in by_id.items():
        if len(copies) > 1:
            out.append(_v("duplicate_fact_id", fid, f"{len(copies)} claims share this fact id"))
    known: set[str] = set()
    for e in expected:
        known.add(e.fact_id)
        copies = by_id.get(e.fact_id)
        if e.status != "active":
            if copies:
                out.append(_v(f"forbidden_{e.status}_fact", e.fact_id, f"a {e.status} fact is in the artifact"))
            continue
        if not copies:
            sev = loss_severity(e.fact_id) if loss_severity else "critical"
            out.append(_v("missing", e.fact_id, f"active fact ({e.predicate}) not in the artifact",
                          expected=e.value.shown(), severity=sev))
            continue
        for a in copies:
            _compare(e, a, out)
    for fid in by_id.keys() - known:
        out.append(_v("unsupported_fact", fid, "the ledger has no fact with this id",
                      observed=by_id[fid][0].value.shown()))
    if owner is not None and header is not None:
        if header[0] != owner[0]:
            out.append(_v("tenant_changed", "artifact", "the artifact is for another tenant", expected=owner[0], observed=header[0]))
        if header[1] != owner[1]:
            out.append(_v("subject_changed", "artifact", "the artifact is for another subject", expected=owner[1], observed=header[1]))
    return out


# --- the records adapter ---------------------------------------------------------------


def ledger_facts(snapshot: Snapshot) -> list[LedgerFact]:
    """The snapshot's facts in normalized form; provenance is their *valid* source events."""
    valid = {e.event_id for e in snapshot.events if e.state == "valid"}
    return [
        LedgerFact(
            fact_id=f.fact_id, tenant_id=f.tenant_id, subject_id=f.subject_id, predicate=f.predicate,
            status=f.status,
            value=typed_value(f.value_type, f.value) if f.status == "active" else TypedValue("null", None, None),
            qualifiers=f.qualifiers,
            required_sources=tuple(s for s in f.source_event_ids if s in valid),
            polarity=f.polarity, modality=f.modality, authority=f.authority,
        )
        for f in snapshot.facts
    ]


def artifact_facts(artifact: ArtifactBody) -> list[ArtifactFact]:
    """The artifact's claims in normalized form."""
    return [
        ArtifactFact(
            fact_id=c.fact_id, tenant_id=c.tenant_id, subject_id=c.subject_id, predicate=c.predicate,
            value=typed_value(c.value_type, c.value), qualifiers=c.qualifiers,
            sources=frozenset(c.derived_from), polarity=c.polarity, modality=c.modality,
            authority=c.authority,
        )
        for c in artifact.claims
    ]


def check_contract(
    snapshot: Snapshot, artifact: ArtifactBody, *,
    loss_severity: Callable[[str], Severity] | None = None,
) -> list[Violation]:
    """Contract violations of a records artifact against its snapshot (unordered)."""
    return compare_facts(
        ledger_facts(snapshot), artifact_facts(artifact),
        owner=(snapshot.tenant_id, snapshot.subject_id),
        header=(artifact.tenant_id, artifact.subject_id),
        loss_severity=loss_severity,
    )
