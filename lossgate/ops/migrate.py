"""Migrations of the stored artifact format, rehearsed on a copy before they are applied
(a stored summary is versioned, and what changes its form
must not change what it says).

An artifact is stored as JSON documents (:mod:`lossgate.store.rows`): its body (claims,
open items, conflicts, prose) and its manifest. A **format** is one version of those
documents; the body states it (``"format": 2``), and a body that states none is format 1.
Each format has a **reader** (the documents into an :class:`~lossgate.model.records.ArtifactBody`
and a :class:`~lossgate.model.derived_records.Manifest`, or :class:`Unreadable`) and, but the newest, a
**step**: a pure function from a document of that format to one of the next.

Formats (:data:`FORMATS`):

1. Every artifact stored before formats existed: no ``format`` key; a claim's value is
   whatever the writer put there (the deterministic compressor writes the exact stored form
   of :func:`~lossgate.model.values.encode_value`; a body parsed from a compressor's JSON text may
   hold a float, a money amount as a number, a datetime ending in ``Z``).
2. The body states ``"format": 2`` (what this lossgate writes). Step 1 -> 2 records it
   and writes each claim value that the gate's strict reader
   (:func:`~lossgate.model.values.coerce_value`) reads as its declared type in its exact stored
   form (``encode_value``): ``{"amount": 14250}`` becomes ``{"amount": "14250"}``,
   ``...T12:00:00Z`` becomes ``...T12:00:00+00:00``, ``PT168H`` becomes ``P7D``. A value
   that reader refuses (``"true"`` for a bool, a float amount) is evidence, kept exactly as
   stored: a failed artifact holds such values, and a migration never guesses at them.

**Rehearsal** (:func:`rehearse`) copies a sample of a tenant's stored documents into
memory (never writing), and for each: reads it with the reader of its format, migrates it
to the newest format, reads the result with the newest reader (the one
:func:`lossgate.store.rows.artifact_from_row` uses), and checks:

* the fact contract of the migrated claims against the document's own claims
  (:func:`lossgate.gate.contract.compare_facts`, the old claims as the expected facts):
  every claim keeps its tenant, subject, predicate, typed value (``bool`` stays ``bool``,
  ``50`` is not ``"50"``, money stays a decimal with its currency: compared as the gate
  compares them, and by JSON type and content where the old value does not read as its
  type), qualifiers, polarity and provenance; none is lost or added. Differences the old
  document already has with itself (a duplicate fact id) are not the migration's;
* against the ledger: the gate's contract (:func:`~lossgate.gate.contract.check_contract`)
  of the old and of the migrated body against the facts they claim, read from the store;
  a violation only the migrated body has is the migration's (one both have, e.g. the
  superseded fact of a stale artifact, is counted as pre-existing, not blamed);
* what no step declares it changes: modality, authority, the exact provenance and the
  exact value of a decimal or an amount (the gate's canonical form keeps 28 significant
  digits) of each claim, open items, conflicts, the prose and the manifest;
* idempotence: each step applied again to its own output changes nothing; each step must
  write the next format (else ``migration_error``), so migrating the result again is a
  no-op; and migrating the original twice gives the same bytes (what :func:`apply`
  computes is what was rehearsed).

Findings, by code (each blocks the migration): ``unknown_format``, ``unreadable`` (the old
reader), ``migration_error``, ``unreadable_after`` (the new reader), the contract's codes
(``value_changed``, ``missing``, ``unsupported_fact``, ``polarity_flipped``,
``qualifiers_changed``, ``provenance_missing``, ...; ``against`` says whether against the
document's own claims or the ledger), ``claim_changed``, ``open_items_changed``,
``conflicts_changed``, ``summary_changed``, ``manifest_changed``, ``not_idempotent``,
``not_deterministic``.

**Apply** (:func:`apply`) first rehearses every stored document of the tenants, not a
sample; with any finding it writes nothing. Then, a batch at a time, one write transaction
each: it reads the batch again, migrates and checks each document again (against the ledger
as it is now), and swaps in the new documents with
:meth:`~lossgate.store.protocol.DerivedWriteTx.replace_artifact_documents`, which leaves a
document changed since it was read (a deletion purged it meanwhile) as it is: run it again
for those. A batch with a finding writes nothing, and apply stops there. The reader reads
formats 1 and 2 alike, so a store part-way through is served as before.

Limits: the tenants are named (on PostgreSQL a transaction sees one tenant's rows, and
nothing lists tenants); every artifact id of the named tenants is held in memory while the
sample is drawn (about 100 bytes each).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from lossgate.errors import InvalidInput, LossgateError
from lossgate.gate.contract import ArtifactFact, LedgerFact, check_contract, compare_facts
from lossgate.gate.outcome import Violation
from lossgate.gate.typed import TypedValue, json_value, typed_value
from lossgate.model.derived_records import Manifest
from lossgate.model.records import ArtifactBody, Claim, Clock, Event, Fact, Snapshot
from lossgate.model.values import ValueMismatch, coerce_value, stored_form
from lossgate.store import rows
from lossgate.store.protocol import ArtifactDocument, ReadTx, Store

__all__ = [
    "Document",
    "Unreadable",
    "Format",
    "Formats",
    "FORMATS",
    "v1_to_v2",
    "Finding",
    "DocumentCheck",
    "Rehearsal",
    "Applied",
    "LedgerView",
    "check_document",
    "rehearse",
    "apply",
]

Document = dict[str, Any]  # {"body": {...}, "manifest": {...}}: an artifact's stored JSON, parsed
Progress = Callable[[str, int, int], None]  # (phase, done, total)


class Unreadable(ValueError):
    """A reader refuses a document: it is not of the reader's format, or not what that format holds."""


# -- formats --------------------------------------------------------------------------------


def _read(doc: Document, fmt: int) -> tuple[ArtifactBody, Manifest]:
    body, manifest = doc.get("body"), doc.get("manifest")
    if not isinstance(body, dict) or not isinstance(manifest, dict):
        raise Unreadable("the body and the manifest must be JSON objects")
    if rows.stored_format(body) != fmt:
        raise Unreadable(f"the body states format {body.get('format', 1)!r}, not {fmt}")
    try:
        if fmt == rows.ARTIFACT_FORMAT:  # the newest: the reader every read of the store uses
            read = rows.body_from_json(str(manifest.get("artifact_id")), body)
        else:
            read = ArtifactBody.model_validate({k: v for k, v in body.items() if k != "format"})
        return read, Manifest.model_validate(manifest)
    except (ValidationError, LossgateError) as exc:
        raise Unreadable(_first_error(exc)) from None


def read_v1(doc: Document) -> tuple[ArtifactBody, Manifest]:
    """Format 1: a body with no ``format`` key; claim values as their writer left them."""
    return _read(doc, 1)


def read_v2(doc: Document) -> tuple[ArtifactBody, Manifest]:
    """Format 2: the body states ``"format": 2``; read as :mod:`lossgate.store.rows` reads it."""
    return _read(doc, 2)


def _stored_form(value_type: Any, value: Any) -> Any:
    """``value`` in the exact stored form of ``value_type`` (:func:`lossgate.model.values.stored_form`)."""
    return stored_form(value_type, value) if isinstance(value_type, str) else value


def v1_to_v2(doc: Document) -> Document:
    """Format 1 -> 2: the body states its format, and each claim value that reads as its
    declared type is written in that type's exact stored form (see the module)."""
    body = {k: v for k, v in doc["body"].items() if k != "format"}
    claims = body.get("claims")
    if isinstance(claims, list):
        body["claims"] = [
            {**c, "value": _stored_form(c.get("value_type"), c["value"])} if isinstance(c, dict) and "value" in c else c
            for c in claims
        ]
    return {"body": {"format": 2, **body}, "manifest": doc["manifest"]}


@dataclass(frozen=True)
class Format:
    """One stored format: its number, its reader and its step to the next (``None`` for the newest)."""

    number: int
    read: Callable[[Document], tuple[ArtifactBody, Manifest]]
    step: Callable[[Document], Document] | None
    describe: str


@dataclass(frozen=True)
class Formats:
    """The registry: formats numbered 1, 2, ... in order, each but the last with its step."""

    formats: tuple[Format, ...]

    def __post_init__(self) -> None:
        numbers = [f.number for f in self.formats]
        if numbers != list(range(1, len(numbers) + 1)) or any(f.step is None for f in self.formats[:-1]):
            raise ValueError(f"formats must be numbered 1..n in order, each but the last with a step: {numbers}")

    @property
    def newest(self) -> int:
        return self.formats[-1].number

    def get(self, number: int | None) -> Format | None:
        return self.formats[number - 1] if number is not None and 1 <= number <= self.newest else None


FORMATS = Formats(
    (
        Format(1, read_v1, v1_to_v2, "no format key; claim values as their writer left them"),
        Format(2, read_v2, None, "states its format; claim values that read as their type in their stored form"),
    )
)
if FORMATS.newest != rows.ARTIFACT_FORMAT:  # the store writes the newest format, and only that one
    raise RuntimeError(f"lossgate.store.rows writes format {rows.ARTIFACT_FORMAT}, the newest here is {FORMATS.newest}")


# -- findings and reports -----------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """Why a document may not be migrated. ``subject``: a fact id, or the part of the document
    (``document``, ``body``, ``manifest``); ``against``: the document's own claims or the ledger."""

    code: str
    subject: str
    detail: str
    against: Literal["document", "ledger"] = "document"

    def __str__(self) -> str:
        return f"{self.subject}:{self.code}" + (" (against the ledger)" if self.against == "ledger" else "")


@dataclass(frozen=True)
class DocumentCheck:
    """What the rehearsal found for one document. ``changed``: the migration changes its bytes;
    ``preexisting``: differences from the ledger it has before and after (not the migration's);
    ``kept``: claim values the strict reader does not read as their type, kept as stored."""

    tenant_id: str
    subject_id: str
    artifact_id: str
    state: str
    from_format: int | None
    to_format: int
    changed: bool = False
    findings: tuple[Finding, ...] = ()
    preexisting: int = 0
    kept: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "subject_id": self.subject_id,
            "artifact_id": self.artifact_id,
            "state": self.state,
            "from_format": self.from_format,
            "to_format": self.to_format,
            "changed": self.changed,
            "preexisting": self.preexisting,
            "kept": self.kept,
            "findings": [
                {"code": f.code, "subject": f.subject, "against": f.against, "detail": f.detail} for f in self.findings
            ],
        }


@dataclass
class Rehearsal:
    """A rehearsal's report. ``clean``: no document has a finding (an empty store is clean)."""

    tenants: tuple[str, ...]
    newest: int
    sample: int | None
    seed: int
    formats: dict[int, str] = field(default_factory=dict)  # number -> what it is
    stored: int = 0  # artifacts the tenants have
    checked: int = 0  # documents rehearsed
    by_format: Counter[str] = field(default_factory=Counter)  # "1", "2", "unknown"
    changed: int = 0
    preexisting: int = 0
    kept: int = 0
    refused: list[DocumentCheck] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)
    per_tenant: dict[str, Counter[str]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not self.refused

    def add(self, check: DocumentCheck) -> None:
        counts = self.per_tenant.setdefault(check.tenant_id, Counter())
        self.checked += 1
        counts["checked"] += 1
        fmt = "unknown" if check.from_format is None else str(check.from_format)
        self.by_format[fmt] += 1
        counts[f"format {fmt}"] += 1
        self.changed += check.changed
        counts["changed"] += check.changed
        self.preexisting += check.preexisting
        self.kept += check.kept
        if check.findings:
            self.refused.append(check)
            counts["refused"] += 1
            self.codes.update(f.code for f in check.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "tenants": list(self.tenants),
            "newest_format": self.newest,
            "sample": self.sample,
            "seed": self.seed,
            "formats": {str(n): d for n, d in sorted(self.formats.items())},
            "stored": self.stored,
            "checked": self.checked,
            "by_format": dict(sorted(self.by_format.items())),
            "changed": self.changed,
            "preexisting": self.preexisting,
            "kept": self.kept,
            "clean": self.clean,
            "codes": dict(sorted(self.codes.items())),
            "per_tenant": {t: dict(sorted(c.items())) for t, c in sorted(self.per_tenant.items())},
            "refused": [c.to_json() for c in self.refused],
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Applied:
    """What :func:`apply` did. ``refused``: the rehearsal of every document, or a batch's check,
    found something (``stopped_at`` names the batch's first artifact id; batches before it are
    written). ``skipped``: documents changed since they were read, left in their format."""

    rehearsal: Rehearsal
    refused: bool = False
    written: int = 0
    skipped: int = 0
    batches: int = 0
    stopped_at: str | None = None
    batch_refused: list[DocumentCheck] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "refused": self.refused,
            "written": self.written,
            "skipped": self.skipped,
            "batches": self.batches,
            "stopped_at": self.stopped_at,
            "batch_refused": [c.to_json() for c in self.batch_refused],
            "seconds": round(self.seconds, 3),
            "rehearsal": self.rehearsal.to_json(),
        }


# -- checking one document --------------------------------------------------------------


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        kind = "missing field" if first["type"] == "missing" else first["msg"]
        return f"{kind} at {where} ({exc.error_count()} error(s))"
    return str(exc)


def _bytes(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def _copy(doc: Document) -> Document:
    """A deep copy of a JSON document (raises if it holds anything but JSON)."""
    copied: Document = orjson.loads(orjson.dumps(doc))
    return copied


def _difference(a: Any, b: Any, path: str = "") -> str:
    """The first JSON path where ``a`` and ``b`` differ (``body.claims[3].value.amount``)."""
    return _first_difference(a, b, path)[0]


def _first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any]:
    """The first JSON path where ``a`` and ``b`` differ, and what each holds there."""
    if type(a) is type(b) and isinstance(a, dict):
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b or _bytes(a[key]) != _bytes(b[key]):
                return _first_difference(a.get(key), b.get(key), f"{path}.{key}" if path else key)
    if type(a) is type(b) and isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if _bytes(x) != _bytes(y):
                return _first_difference(x, y, f"{path}[{i}]")
        return f"{path}[{min(len(a), len(b))}]", a[len(b) :], b[len(a) :]
    return path or "(root)", a, b


def _exact(value_type: str, value: Any) -> str:
    """A decimal's or an amount's exact value as text, trailing zeros dropped (``""`` for other
    types, or a value that does not read as its type). The gate's canonical form rounds to 28
    significant digits (``Decimal.normalize`` in the default context): this does not."""
    if value_type not in ("decimal", "money"):
        return ""
    try:
        typed = coerce_value(value_type, value)
    except (ValueMismatch, TypeError, ValueError, AttributeError, ArithmeticError):
        return ""
    amount = typed if value_type == "decimal" else typed.amount
    text = format(amount, "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    text = "0" if text in ("-0", "") else text
    return text if value_type == "decimal" else f"{text} {typed.currency}"


def _finding(v: Violation, against: Literal["document", "ledger"]) -> Finding:
    shown = f"; expected {v.expected}, observed {v.observed}" if v.expected or v.observed else ""
    return Finding(v.code, v.subject, f"{v.detail}{shown}", against)


def _shown(value: Any) -> str:
    return orjson.dumps(value).decode() if value is not None else "null"


def _key(v: Violation) -> tuple[str, str, str | None, str | None]:
    return v.code, v.subject, v.expected, v.observed


def _self_contract(old: ArtifactBody, new: ArtifactBody) -> list[Finding]:
    """The migrated claims against the old ones (the old as the expected facts), beyond what
    the old ones already break against themselves; then what the contract leaves unchecked."""
    # A value the strict reader does not read as its type compares by JSON type and content,
    # on both sides: kept as stored, it passes; turned into anything else, it does not.
    loose = {c.fact_id for c in old.claims if typed_value(c.value_type, c.value).key is None}

    def value(c: Claim) -> TypedValue:
        return json_value(c.value) if c.fact_id in loose else typed_value(c.value_type, c.value)

    expected = [
        LedgerFact(
            c.fact_id,
            c.tenant_id,
            c.subject_id,
            c.predicate,
            "active",
            value(c),
            c.qualifiers,
            tuple(c.derived_from),
            c.polarity,
            c.modality,
            c.authority,
        )
        for c in old.claims
    ]

    def observed(body: ArtifactBody) -> list[ArtifactFact]:
        return [
            ArtifactFact(
                c.fact_id,
                c.tenant_id,
                c.subject_id,
                c.predicate,
                value(c),
                c.qualifiers,
                frozenset(c.derived_from),
                c.polarity,
                c.modality,
                c.authority,
            )
            for c in body.claims
        ]

    header = (old.tenant_id, old.subject_id)
    before = {_key(v) for v in compare_facts(expected, observed(old), owner=header, header=header)}
    values = {c.fact_id: c.value for c in old.claims}
    found = []
    for v in compare_facts(expected, observed(new), owner=header, header=(new.tenant_id, new.subject_id)):
        if _key(v) in before:
            continue
        finding = _finding(v, "document")
        if v.code == "value_changed":  # say where, and what JSON type each side holds there
            (now_value,) = [c.value for c in new.claims if c.fact_id == v.subject][:1] or [None]
            where, a, b = _first_difference(values.get(v.subject), now_value, "value")
            finding = Finding(
                v.code,
                v.subject,
                f"{where}: {json_value(a).type_name} {_shown(a)} -> {json_value(b).type_name} {_shown(b)}",
            )
        found.append(finding)
    blamed = {f.subject for f in found}

    def rest(body: ArtifactBody) -> dict[str, list[tuple[Any, ...]]]:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for c in body.claims:
            out.setdefault(c.fact_id, []).append(
                (c.value_type, c.modality, c.authority, tuple(sorted(c.derived_from)), _exact(c.value_type, c.value))
            )
        return {k: sorted(v) for k, v in out.items()}

    names = ("value_type", "modality", "authority", "derived_from", "exact value")
    was, now = rest(old), rest(new)
    for fid in sorted(was.keys() & now.keys() - blamed):
        if was[fid] != now[fid]:
            fields = sorted(
                {
                    n
                    for a, b in zip(was[fid], now[fid], strict=False)
                    for n, x, y in zip(names, a, b, strict=False)
                    if x != y
                }
            )
            found.append(Finding("claim_changed", fid, f"{', '.join(fields) or 'claims'}: {was[fid]} -> {now[fid]}"))
    for code, a, b in (
        ("open_items_changed", old.open_items, new.open_items),
        ("conflicts_changed", old.unresolved_conflicts, new.unresolved_conflicts),
        ("summary_changed", old.summary, new.summary),
    ):
        if a != b:
            found.append(Finding(code, "body", f"{code.removesuffix('_changed').replace('_', ' ')} differ"))
    return found


@dataclass(frozen=True)
class LedgerView:
    """What the ledger holds for one subject, as far as some documents need it: the facts
    they claim (any status), by id, and the events those facts cite, by id."""

    tenant_id: str
    subject_id: str
    facts: dict[str, Fact]
    events: dict[str, Event]

    def snapshot(self, fact_ids: Iterable[str]) -> Snapshot:
        facts = [self.facts[i] for i in sorted(set(fact_ids)) if i in self.facts]
        cited = {e for f in facts for e in f.source_event_ids}
        return Snapshot(
            tenant_id=self.tenant_id,
            subject_id=self.subject_id,
            clock=Clock(tenant_id=self.tenant_id, subject_id=self.subject_id),
            registry_version=0,
            facts=tuple(facts),
            events=tuple(self.events[e] for e in sorted(cited) if e in self.events),
        )


def _against_ledger(ledger: LedgerView, old: ArtifactBody, new: ArtifactBody) -> tuple[list[Finding], int]:
    snapshot = ledger.snapshot([c.fact_id for c in (*old.claims, *new.claims)])
    before = {_key(v) for v in check_contract(snapshot, old)}
    after = check_contract(snapshot, new)
    return [_finding(v, "ledger") for v in after if _key(v) not in before], len(before)


def _upgrade(doc: Document, fmt: int, formats: Formats) -> tuple[Document, list[Finding]]:
    """``doc`` migrated from ``fmt`` to the newest format, with what went wrong on the way
    (a step that raised, or did not write the next format, or is not idempotent). A
    ``migration_error`` finding comes with ``doc`` as it was before that step."""
    findings: list[Finding] = []
    for f in formats.formats[fmt - 1 : -1]:
        assert f.step is not None
        try:  # each call gets a copy: a step that changes its argument cannot hide it from the checks
            out = f.step(_copy(doc))
            again = f.step(_copy(out))
            body = out["body"]
            stated = rows.stored_format(body) if isinstance(body, dict) else None
        except Exception as exc:  # noqa: BLE001 - a step's failure is a finding, whatever it raised
            return doc, [
                Finding(
                    "migration_error", "document", f"the step from format {f.number} raised {type(exc).__name__}: {exc}"
                )
            ]
        if stated != f.number + 1:
            return doc, [
                Finding(
                    "migration_error",
                    "document",
                    f"the step from format {f.number} wrote format {stated}, not {f.number + 1}",
                )
            ]
        if _bytes(again) != _bytes(out):
            findings.append(
                Finding(
                    "not_idempotent",
                    "document",
                    f"the step from format {f.number}, applied to its own output, changes {_difference(out, again)}",
                )
            )
        doc = out
    return doc, findings


def check_document(
    stored: ArtifactDocument,
    ledger: LedgerView | None,
    formats: Formats = FORMATS,
) -> tuple[DocumentCheck, Document | None]:
    """Rehearse one stored document (nothing is written): the check, and the migrated document
    when the migration changes it and found nothing (``None`` otherwise). ``ledger``: the
    facts it claims, for the check against the ledger (``None`` skips that check)."""

    def result(fmt: int | None, *findings: Finding, **more: Any) -> DocumentCheck:
        return DocumentCheck(
            tenant_id=stored.tenant_id,
            subject_id=stored.subject_id,
            artifact_id=stored.artifact_id,
            state=stored.state,
            from_format=fmt,
            to_format=formats.newest,
            findings=findings,
            **more,
        )

    try:
        doc: Document = {"body": orjson.loads(stored.body), "manifest": orjson.loads(stored.manifest)}
    except orjson.JSONDecodeError as exc:
        return result(None, Finding("unreadable", "document", f"not JSON: {exc}")), None
    body = doc["body"]
    fmt = rows.stored_format(body) if isinstance(body, dict) else None
    spec = formats.get(fmt)
    if spec is None:
        stated = body.get("format") if isinstance(body, dict) else None
        return result(
            fmt,
            Finding(
                "unknown_format",
                "document",
                f"the body states format {stated!r}; this lossgate reads formats 1 to {formats.newest}",
            ),
        ), None
    assert fmt is not None
    try:
        old_body, old_manifest = spec.read(doc)
    except Unreadable as exc:
        return result(fmt, Finding("unreadable", "document", f"format {fmt}: {exc}")), None
    migrated, findings = _upgrade(doc, fmt, formats)
    if any(f.code == "migration_error" for f in findings):
        return result(fmt, *findings), None
    try:
        new_body, new_manifest = formats.formats[-1].read(migrated)
    except Unreadable as exc:
        return result(fmt, *findings, Finding("unreadable_after", "document", str(exc))), None
    again, _ = _upgrade(doc, fmt, formats)  # what apply will compute must be what was rehearsed
    if _bytes(again) != _bytes(migrated):
        findings.append(Finding("not_deterministic", "document", f"two runs differ at {_difference(migrated, again)}"))
    findings += _self_contract(old_body, new_body)
    if new_manifest != old_manifest:
        where = _difference(old_manifest.model_dump(mode="json"), new_manifest.model_dump(mode="json"))
        findings.append(Finding("manifest_changed", "manifest", f"the manifest differs at {where}"))
    preexisting = 0
    if ledger is not None:
        regressed, preexisting = _against_ledger(ledger, old_body, new_body)
        findings += regressed
    kept = sum(1 for c in new_body.claims if c.value is not None and typed_value(c.value_type, c.value).key is None)
    changed = _bytes(migrated) != _bytes(doc)
    check = result(fmt, *findings, changed=changed, preexisting=preexisting, kept=kept)
    return check, (migrated if changed and not findings else None)


# -- rehearsal and apply --------------------------------------------------------------------


def _listing(store: Store, tenants: Sequence[str], page: int) -> list[tuple[str, str]]:
    """``(tenant, artifact id)`` of every artifact of the tenants, in that order."""
    found: list[tuple[str, str]] = []
    for tenant in tenants:
        after: str | None = None
        while True:
            with store.read() as tx:
                ids = tx.artifact_ids(tenant, after=after, limit=page)
            found += [(tenant, a) for a, _ in ids]
            if len(ids) < page:
                break
            after = ids[-1][0]
    return found


def _ledgers(tx: ReadTx, docs: Sequence[ArtifactDocument]) -> dict[tuple[str, str], LedgerView]:
    """Per subject of ``docs``: the facts their claims name and the events those facts cite."""
    claimed: dict[tuple[str, str], set[str]] = {}
    for d in docs:
        ids = claimed.setdefault((d.tenant_id, d.subject_id), set())
        try:
            claims = orjson.loads(d.body).get("claims") or []
            ids.update(c["fact_id"] for c in claims if isinstance(c, dict) and isinstance(c.get("fact_id"), str))
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            continue  # an unreadable document is a finding of its own
    out = {}
    for (t, s), ids in sorted(claimed.items()):
        facts = {f.fact_id: f for f in tx.facts(t, s, ids=sorted(ids))} if ids else {}
        sources = sorted({e for f in facts.values() for e in f.source_event_ids})
        events = {e.event_id: e for e in tx.events(t, s, ids=sources)} if sources else {}
        out[(t, s)] = LedgerView(t, s, facts, events)
    return out


def _check_batch(
    tx: ReadTx,
    tenant: str,
    ids: Sequence[str],
    formats: Formats,
) -> list[tuple[ArtifactDocument, DocumentCheck, Document | None]]:
    docs = tx.artifact_documents(tenant, ids)
    ledgers = _ledgers(tx, docs)
    return [(d, *check_document(d, ledgers[(d.tenant_id, d.subject_id)], formats)) for d in docs]


def _tenants(tenants: Iterable[str]) -> tuple[str, ...]:
    named = tuple(dict.fromkeys(tenants))
    if not named or any(not t for t in named):
        raise InvalidInput("name the tenants whose artifacts to migrate (nothing lists every tenant)")
    return named


def rehearse(
    store: Store,
    tenants: Iterable[str],
    *,
    sample: int | None = 1000,
    seed: int = 0,
    batch: int = 200,
    formats: Formats | None = None,
    progress: Progress | None = None,
) -> Rehearsal:
    """Rehearse the migration of the tenants' stored artifacts to the newest format on a copy
    in memory, writing nothing: ``sample`` documents drawn at random (``seed``; ``None``:
    every document), read ``batch`` at a time. Returns the report; ``clean`` when no document
    has a finding. ``formats`` defaults to :data:`FORMATS`."""
    if sample is not None and sample < 1:
        raise InvalidInput(f"sample must be at least 1, got {sample}")
    if batch < 1:
        raise InvalidInput(f"batch must be at least 1, got {batch}")
    formats = FORMATS if formats is None else formats
    named = _tenants(tenants)
    t0 = time.perf_counter()
    report = Rehearsal(
        tenants=named,
        newest=formats.newest,
        sample=sample,
        seed=seed,
        formats={f.number: f.describe for f in formats.formats},
    )
    every = _listing(store, named, max(batch, 1000))
    report.stored = len(every)
    chosen = every if sample is None or sample >= len(every) else sorted(random.Random(seed).sample(every, sample))
    for tenant in named:
        report.per_tenant.setdefault(tenant, Counter())["stored"] = sum(1 for t, _ in every if t == tenant)
    done = 0
    for tenant in named:
        ids = [a for t, a in chosen if t == tenant]
        for i in range(0, len(ids), batch):
            with store.read() as tx:
                checked = _check_batch(tx, tenant, ids[i : i + batch], formats)
            for _, check, _ in checked:
                report.add(check)
            done += len(ids[i : i + batch])
            if progress is not None:
                progress("rehearse", done, len(chosen))
    report.seconds = time.perf_counter() - t0
    return report


def apply(
    store: Store,
    tenants: Iterable[str],
    *,
    batch: int = 200,
    formats: Formats | None = None,
    progress: Progress | None = None,
) -> Applied:
    """Migrate every stored artifact of the tenants to the newest format, after a clean
    rehearsal of every one of them (not a sample); a rehearsal with any finding writes
    nothing. One write transaction per ``batch`` documents, each checked again before it is
    swapped in (see the module). Returns what was done; ``refused`` says it stopped."""
    formats = FORMATS if formats is None else formats
    named = _tenants(tenants)
    t0 = time.perf_counter()
    rehearsal = rehearse(store, named, sample=None, batch=batch, formats=formats, progress=progress)
    applied = Applied(rehearsal=rehearsal)
    if not rehearsal.clean:
        applied.refused = True
        applied.seconds = time.perf_counter() - t0
        return applied
    every = _listing(store, named, max(batch, 1000))
    done = 0
    for tenant in named:
        ids = [a for t, a in every if t == tenant]
        for i in range(0, len(ids), batch):
            chunk = ids[i : i + batch]
            with store.write() as tx:
                checked = _check_batch(tx, tenant, chunk, formats)
                bad = [c for _, c, _ in checked if not c.ok]
                if bad:  # changed since the rehearsal into something the migration may not touch
                    applied.refused, applied.stopped_at, applied.batch_refused = True, chunk[0], bad
                    break
                changes = [
                    (d, rows.dumps(m["body"]), rows.dumps(m["manifest"])) for d, _, m in checked if m is not None
                ]
                written = tx.replace_artifact_documents(changes) if changes else []
            applied.batches += 1
            applied.written += len(written)
            applied.skipped += len(changes) - len(written)
            done += len(chunk)
            if progress is not None:
                progress("apply", done, len(every))
        if applied.refused:
            break
    applied.seconds = time.perf_counter() - t0
    return applied
