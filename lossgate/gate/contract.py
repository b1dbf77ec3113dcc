"""The fact contract: compare an artifact's facts with the expected ledger.

One comparison, :func:`compare_facts`, runs over a small normalized form
(:class:`LedgerFact`, :class:`ArtifactFact`, :class:`TypedValue`). Two
adapters feed it: :func:`check_contract` for lossgate records (a
:class:`~lossgate.model.records.Snapshot` and an
:class:`~lossgate.model.records.ArtifactBody`) and :mod:`lossgate.gate.fixture`
for the fact-contract fixture format (``fact-contract``).

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
    :func:`~lossgate.model.values.canonical_value`, so money is a decimal amount plus a
    currency whatever the key order or trailing zeros. The detail shows both values
    (``false -> true (bool)``), each with its type when the types differ.
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

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from lossgate.gate.outcome import FORBIDDEN, Code, Severity, Violation
from lossgate.gate.typed import TypedValue, dump_json, json_type_name, json_value, typed_value
from lossgate.model.records import ArtifactBody, Snapshot

__all__ = [
    "TypedValue",
    "LedgerFact",
    "ArtifactFact",
    "compare_facts",
    "check_contract",
    "ledger_facts",
    "artifact_facts",
    "typed_value",
    "json_value",
    "json_type_name",
]


class LedgerFact(NamedTuple):
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


class ArtifactFact(NamedTuple):
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


def _v(
    code: Code,
    subject: str,
    detail: str,
    *,
    expected: Any = None,
    observed: Any = None,
    severity: Severity = "critical",
) -> Violation:
    return Violation(
        code=code,
        subject=subject,
        severity=severity,
        detail=detail,
        expected=None if expected is None else str(expected),
        observed=None if observed is None else str(observed),
    )


def _qualifier_detail(want: tuple[tuple[str, str], ...], got: tuple[tuple[str, str], ...]) -> str:
    w, g = dict(want), dict(got)
    parts = [f"lost {k}={w[k]!r}" for k in sorted(w.keys() - g.keys())]
    parts += [f"{k}: {w[k]!r} -> {g[k]!r}" for k in sorted(w.keys() & g.keys()) if w[k] != g[k]]
    parts += [f"added {k}={g[k]!r}" for k in sorted(g.keys() - w.keys())]
    return "; ".join(parts)


def _value_detail(want: TypedValue, got: TypedValue) -> str:
    """Both values, as a person reads the change: ``false -> true (bool)``; when the type
    changed too, each with its type: ``bool false -> string "false"``. The values are the
    ledger's content: an attempt that holds this detail is purged with the fact
    (:func:`lossgate.lineage.propagation.scrubbed`)."""
    if want.type_name == got.type_name:
        return f"{_said(want)} -> {_said(got)} ({want.type_name})"
    return f"{want.shown()} -> {got.shown()} (the type changed)"


def _said(value: TypedValue) -> str:
    """A value as a detail writes it: JSON, money as its amount and currency (``50 USD``)."""
    c = value.canonical
    if value.type_name == "money" and isinstance(c, dict) and {"amount", "currency"} <= c.keys():
        return f"{c['amount']} {c['currency']}"
    return dump_json(c)


def _same(e: LedgerFact, a: ArtifactFact) -> bool:
    """The common case, decided in one expression: the claim states the fact exactly."""
    key = e.value.key
    return (
        key is not None
        and key == a.value.key
        and a.qualifiers == e.qualifiers
        and a.subject_id == e.subject_id
        and a.tenant_id == e.tenant_id
        and a.predicate == e.predicate
        and a.polarity == e.polarity
        and a.sources.issuperset(e.required_sources)
        and (
            e.authority in (None, "untrusted")
            or a.authority is None
            or (a.modality == e.modality and a.authority == e.authority)
        )
    )


def _compare(e: LedgerFact, a: ArtifactFact, out: list[Violation]) -> None:
    if _same(e, a):
        return
    fid = e.fact_id
    if a.tenant_id != e.tenant_id:
        out.append(
            _v(
                "tenant_changed",
                fid,
                f"claim names another tenant: {e.tenant_id} -> {a.tenant_id}",
                expected=e.tenant_id,
                observed=a.tenant_id,
            )
        )
    if a.subject_id != e.subject_id:
        out.append(
            _v(
                "subject_changed",
                fid,
                f"claim names another subject: {e.subject_id} -> {a.subject_id}",
                expected=e.subject_id,
                observed=a.subject_id,
            )
        )
    if a.predicate != e.predicate:
        out.append(
            _v(
                "predicate_changed",
                fid,
                f"claim names another predicate: {e.predicate} -> {a.predicate}",
                expected=e.predicate,
                observed=a.predicate,
            )
        )
    if not e.value.matches(a.value):
        out.append(
            _v(
                "value_changed",
                fid,
                _value_detail(e.value, a.value),
                expected=e.value.shown(),
                observed=a.value.shown(),
            )
        )
    if a.polarity != e.polarity:
        out.append(
            _v(
                "polarity_flipped",
                fid,
                f"polarity differs: {e.polarity} -> {a.polarity}",
                expected=e.polarity,
                observed=a.polarity,
            )
        )
    if a.qualifiers != e.qualifiers:
        out.append(
            _v(
                "qualifiers_changed",
                fid,
                _qualifier_detail(e.qualifiers, a.qualifiers),
                expected=dump_json(dict(e.qualifiers)),
                observed=dump_json(dict(a.qualifiers)),
            )
        )
    if e.authority not in (None, "untrusted") and a.authority is not None:
        if a.modality != e.modality:
            out.append(
                _v(
                    "modality_changed",
                    fid,
                    f"modality differs: {e.modality} -> {a.modality}",
                    expected=e.modality,
                    observed=a.modality,
                )
            )
        if a.authority != e.authority:
            out.append(
                _v(
                    "authority_changed",
                    fid,
                    f"authority differs: {e.authority} -> {a.authority}",
                    expected=e.authority,
                    observed=a.authority,
                )
            )
    lost = [s for s in e.required_sources if s not in a.sources]
    if lost:
        out.append(
            _v(
                "provenance_missing",
                fid,
                f"not cited: {', '.join(lost)}",
                expected=dump_json(list(e.required_sources)),
                observed=dump_json(sorted(a.sources)),
            )
        )


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
    ``missing`` (default: critical, as in the fixture format). Linear in the number of facts.
    """
    out: list[Violation] = []
    by_id: dict[str, list[ArtifactFact]] = {}
    for a in observed:
        by_id.setdefault(a.fact_id, []).append(a)
    for fid, shared in by_id.items():
        if len(shared) > 1:
            out.append(_v("duplicate_fact_id", fid, f"{len(shared)} claims share this fact id"))
    known: set[str] = set()
    for e in expected:
        known.add(e.fact_id)
        copies = by_id.get(e.fact_id)
        if e.status != "active":
            if copies:
                out.append(_v(FORBIDDEN[e.status], e.fact_id, f"a {e.status} fact is in the artifact"))
            continue
        if not copies:
            sev = loss_severity(e.fact_id) if loss_severity else "critical"
            out.append(
                _v(
                    "missing",
                    e.fact_id,
                    f"active fact ({e.predicate}: {dump_json(e.value.canonical)}) not in the artifact",
                    expected=e.value.shown(),
                    severity=sev,
                )
            )
            continue
        for a in copies:
            _compare(e, a, out)
    for fid in by_id.keys() - known:
        out.append(
            _v("unsupported_fact", fid, "the ledger has no fact with this id", observed=by_id[fid][0].value.shown())
        )
    if owner is not None and header is not None:
        if header[0] != owner[0]:
            out.append(
                _v(
                    "tenant_changed",
                    "artifact",
                    "the artifact is for another tenant",
                    expected=owner[0],
                    observed=header[0],
                )
            )
        if header[1] != owner[1]:
            out.append(
                _v(
                    "subject_changed",
                    "artifact",
                    "the artifact is for another subject",
                    expected=owner[1],
                    observed=header[1],
                )
            )
    return out


# --- the records adapter ---------------------------------------------------------------


def ledger_facts(snapshot: Snapshot) -> list[LedgerFact]:
    """The snapshot's facts in normalized form; provenance is their *valid* source events."""
    valid = {e.event_id for e in snapshot.events if e.state == "valid"}
    purged = TypedValue("null", None, None)
    out = []
    for f in snapshot.facts:  # positional construction: this runs once per fact per gate
        active = f.status == "active"
        sources = f.source_event_ids
        out.append(
            LedgerFact(
                f.fact_id,
                f.tenant_id,
                f.subject_id,
                f.predicate,
                f.status,
                typed_value(f.value_type, f.value) if active else purged,
                f.qualifiers,
                sources if all(s in valid for s in sources) else tuple(s for s in sources if s in valid),
                f.polarity,
                f.modality,
                f.authority,
            )
        )
    return out


def artifact_facts(artifact: ArtifactBody) -> list[ArtifactFact]:
    """The artifact's claims in normalized form."""
    return [
        ArtifactFact(
            c.fact_id,
            c.tenant_id,
            c.subject_id,
            c.predicate,
            typed_value(c.value_type, c.value),
            c.qualifiers,
            frozenset(c.derived_from),
            c.polarity,
            c.modality,
            c.authority,
        )
        for c in artifact.claims
    ]


def check_contract(
    snapshot: Snapshot,
    artifact: ArtifactBody,
    *,
    loss_severity: Callable[[str], Severity] | None = None,
) -> list[Violation]:
    """Contract violations of a records artifact against its snapshot (unordered)."""
    return compare_facts(
        ledger_facts(snapshot),
        artifact_facts(artifact),
        owner=(snapshot.tenant_id, snapshot.subject_id),
        header=(artifact.tenant_id, artifact.subject_id),
        loss_severity=loss_severity,
    )
