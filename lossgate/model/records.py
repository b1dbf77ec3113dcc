"""Typed records: what crosses every boundary in lossgate.

Records are frozen pydantic models. ``New*`` records are what a caller hands
in; the store assigns sequence numbers, hashes and lifecycle state and hands
back the full record. Every record carries ``tenant_id`` and ``subject_id``:
nothing in lossgate is addressed without both (invariant 7).

A ``New*`` record refuses, when it is built, anything a store could not keep the
same way on SQLite and PostgreSQL (NUL, lone surrogates, nesting and sizes beyond
:mod:`lossgate.model.limits`), raising :class:`~lossgate.errors.InvalidRecord`, an
:class:`~lossgate.errors.InvalidInput`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails, InitErrorDetails

from lossgate.errors import InvalidInput, InvalidRecord
from lossgate.model.canonical import envelope_hash
from lossgate.model.instants import Instant
from lossgate.model.limits import (
    MAX_PAYLOAD_BYTES,
    MAX_VALUE_BYTES,
    Id,
    Key,
    Label,
    Name,
    Plain,
    Text,
    json_problem,
)
from lossgate.model.search_terms import searchable
from lossgate.model.values import ValueType, canonical_value, encode_value

__all__ = [
    "EventKind",
    "Trust",
    "EventState",
    "Criticality",
    "Cardinality",
    "Category",
    "Polarity",
    "Modality",
    "Authority",
    "FactStatus",
    "NewEvent",
    "Event",
    "EventRef",
    "Predicate",
    "GuardRule",
    "GuardKind",
    "NewFact",
    "Fact",
    "Clock",
    "Conflict",
    "LedgerEntry",
    "FactHistory",
    "AppendResult",
    "Claim",
    "ConflictRef",
    "ArtifactBody",
    "Snapshot",
    "TRUST_RANK",
    "AUTHORITY_FOR_TRUST",
    "utcnow",
    "normalize_qualifiers",
    "Proposal",
    "ProposalStatus",
    "TaintPolicy",
    "TaintOutcome",
    "effective_trust",
    "Tier",
]

EventKind = Literal["message", "tool_result", "document", "system"]
Trust = Literal["authenticated_user", "system", "tool", "untrusted"]
EventState = Literal["valid", "revoked", "deleted"]
# hot: raw and recent; warm: dormant and covered by a gated published summary; cold: past
# the second horizon, raw and still searched (lossgate.ledger.tiers).
Tier = Literal["hot", "warm", "cold"]
Criticality = Literal["critical", "important", "contextual"]
Cardinality = Literal["one", "many"]
# What a predicate's facts are *for*. The gate uses it: an untrusted source may
# never become an instruction or a preference, obligations are open items and
# permissions are scopes that must survive exactly.
Category = Literal["attribute", "preference", "instruction", "permission", "obligation", "identifier"]
Polarity = Literal["positive", "negative"]
Modality = Literal["asserted", "speculative", "quoted"]
Authority = Literal["user", "system", "tool", "untrusted"]
FactStatus = Literal["active", "superseded", "deleted", "revoked"]

# Higher is more trusted. A fact's authority may not exceed the best trust of
# the events it rests on (invariant 8): repeating untrusted text never raises it.
TRUST_RANK: dict[Trust | Authority, int] = {"untrusted": 0, "tool": 1, "system": 2, "authenticated_user": 3, "user": 3}
AUTHORITY_FOR_TRUST: dict[Trust, Authority] = {
    "untrusted": "untrusted",
    "tool": "tool",
    "system": "system",
    "authenticated_user": "user",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


def normalize_qualifiers(value: Any) -> tuple[tuple[str, str], ...]:
    """Qualifiers as sorted (key, value) string pairs; accepts a mapping or pairs."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, dict) else value
    pairs = []
    for item in items:
        k, v = item
        if not isinstance(k, str) or not isinstance(v, str) or not k:
            raise ValueError(f"qualifier {k!r}={v!r}: keys and values must be non-empty strings")
        pairs.append((k, v))
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate qualifier key in {sorted(keys)}")
    return tuple(sorted(pairs))


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _invalid_record(exc: ValidationError) -> InvalidInput:
    """``exc`` as an :class:`InvalidRecord`, the same errors under lossgate's root."""
    if isinstance(exc, InvalidRecord):
        return exc
    try:
        return InvalidRecord.from_exception_data(exc.title, [_init_details(e) for e in exc.errors()])
    except Exception:  # noqa: BLE001 - an error type pydantic cannot rebuild: keep its text
        return InvalidInput(str(exc))


def _init_details(error: ErrorDetails) -> InitErrorDetails:
    """One of ``errors()``'s entries as pydantic takes it to rebuild the error (its message
    and URL are derived again from its type and context)."""
    details = InitErrorDetails(type=error["type"], loc=error["loc"], input=error["input"])
    if "ctx" in error:
        details["ctx"] = error["ctx"]
    return details


class _Input(_Record):
    """A record a caller hands in: a bad field raises :class:`InvalidRecord` (an
    :class:`InvalidInput` and a pydantic ``ValidationError``) when it is built."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _invalid_record(exc) from None

    # Like pydantic's RootModel: this __init__ only translates the error, so validation
    # need not call it (a "custom init" would route every model_validate through it).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise _invalid_record(exc) from None


_JSON = TypeVar("_JSON")


def _json_field(value: _JSON, max_bytes: int, *, nul_ok: bool = False) -> _JSON:
    if not value and type(value) is dict:  # the common empty payload
        return value
    problem = json_problem(value, max_bytes, nul_ok=nul_ok)
    if problem is not None:
        raise ValueError(problem)
    return value


class NewEvent(_Input):
    """An event to append to the raw layer. ``event_id`` is the idempotency key.

    Ids are at most 200 characters with no whitespace, control or format character
    (:func:`~lossgate.model.limits.id_problem`), ``actor`` 200, ``text`` 65,536, the payload
    1 MiB of JSON nested at most 64 levels; no text may hold a lone surrogate, and
    none but the payload's strings a NUL (:mod:`lossgate.model.limits`).
    """

    tenant_id: Id
    subject_id: Id
    event_id: Id = Field(default_factory=lambda: f"ev-{uuid.uuid4().hex}")
    kind: EventKind = "message"
    # PostgreSQL cannot store NUL in text: every text field refuses it on every store, so
    # they agree (a pattern is checked in pydantic's core, off the Python hot path).
    actor: Name = "user"
    trust: Trust = "authenticated_user"
    text: Text = ""
    payload: dict[str, Any] = Field(default_factory=dict)
    occurred_at: Instant = Field(default_factory=utcnow)

    @field_validator("payload")
    @classmethod
    def _payload(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Stored as JSON text (PostgreSQL ``json``, not ``jsonb``), where \u0000 is just an
        # escape: a NUL in a payload string is kept on every store.
        return _json_field(value, MAX_PAYLOAD_BYTES, nul_ok=True)

    def hash_content(self, occurred_iso: str | None = None) -> dict[str, Any]:
        """What the content hash covers: what was said, by whom, when; not mutable state like trust."""
        return {
            "tenant_id": self.tenant_id,
            "subject_id": self.subject_id,
            "event_id": self.event_id,
            "kind": self.kind,
            "actor": self.actor,
            "text": self.text,
            "payload": self.payload,
            "occurred_at": occurred_iso or self.occurred_at.isoformat(),
        }

    def content_hash(self, occurred_iso: str | None = None) -> str:
        """``sha256:<hex>`` of :meth:`hash_content` in RFC 8785 form."""
        # Every field but the payload is a validated string: only the payload needs checking.
        return envelope_hash(self.hash_content(occurred_iso), self.payload)


class EventRef(NamedTuple):
    """Where an appended event landed: its id, per-subject seq and content hash."""

    tenant_id: str
    subject_id: str
    event_id: str
    seq: int
    content_hash: str


class Event(_Record):
    """An event in the raw layer. After deletion ``actor``, ``text`` and ``payload`` are
    ``None`` (who said it is erased with what was said); id, seq, hash, kind, trust and
    times stay."""

    tenant_id: str
    subject_id: str
    event_id: str
    seq: int
    kind: EventKind
    actor: str | None
    trust: Trust
    text: str | None
    payload: dict[str, Any] | None
    occurred_at: datetime
    recorded_at: datetime
    content_hash: str
    state: EventState = "valid"
    tier: Tier = "hot"


class Predicate(_Record):
    """One entry of the predicate registry: the schema of a kind of fact. Its text holds no NUL."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
    value_type: ValueType
    cardinality: Cardinality = "one"
    criticality: Criticality = "important"
    category: Category = "attribute"
    owner: Plain = "unowned"
    qualifiers: tuple[Plain, ...] = ()
    enum_values: tuple[Plain, ...] = ()
    description: Plain = ""
    # Extraction (lossgate.extract): phrases that name this kind of fact in text ("invoice
    # total"), and whether a proposal of it becomes a fact at once or waits for a person.
    cues: tuple[Plain, ...] = ()
    extraction: Literal["auto", "review"] = "review"
    # Words a sentence may name this kind of fact by beyond its predicate's own ("satay",
    # "groundnut" for peanuts; "ring", "phone" for calling): a model's narrative sentence that
    # uses one is on the fact's topic, which only the ledger states (lossgate.gate.narrative).
    synonyms: tuple[Plain, ...] = ()


GuardKind = Literal["excludes", "at_most", "permits"]
_FIELD_PATH = r"^[A-Za-z_][A-Za-z0-9_-]*(\[\])?(\.[A-Za-z_][A-Za-z0-9_-]*(\[\])?)*$"


class GuardRule(_Record):
    """How an agent's planned action relates to the ledger (:mod:`lossgate.guard`): one entry
    of a registry's ``[[guards]]`` list, versioned with the registry.

    ``field`` is a path into the action (``items[].ingredients``: ``[]`` reads each element of
    a list); ``predicates`` the facts it is checked against, by name or a ``*`` pattern
    (``food.*_allowed``). ``kind``:

    * ``excludes``: the field must not name what a forbidding fact (``false``, or negative)
      names: its ``qualifier``'s value when given (``channel = "phone"``), else its
      predicate's words and synonyms (``peanuts``, ``satay``);
    * ``at_most``: the field, a number, must not exceed a trusted fact's value (in the
      currency at ``currency_field``, when the fact is money), and every condition the fact
      is qualified with (``condition = "after supervisor review"``) must be named by a value
      at ``conditions_field``;
    * ``permits``: the field's value must be, whole, one a trusted, positive fact names (its
      ``qualifier``'s value less its condition words, else its value); nothing else
      authorizes it.

    A fact asserted by a tool or an untrusted source, quoted or speculative, or resting on
    any tool or untrusted event, never authorizes (``at_most``, ``permits``); any fact
    forbids. A field on a predicate with an open conflict is refused, with both sides. Once
    an action has the first key of ``field``, it must have the path's shape
    (:func:`lossgate.guard.fields.values_at`)."""

    name: Name
    kind: GuardKind
    field: str = Field(pattern=_FIELD_PATH, max_length=500)
    predicates: tuple[Plain, ...] = Field(min_length=1)
    qualifier: Plain | None = None
    currency_field: str | None = Field(default=None, pattern=_FIELD_PATH, max_length=500)
    conditions_field: str | None = Field(default=None, pattern=_FIELD_PATH, max_length=500)
    description: Plain = ""

    def reads(self, predicate: str) -> bool:
        """Whether this rule checks facts of ``predicate``."""
        return any(fnmatchcase(predicate, p) for p in self.predicates)


class NewFact(_Input):
    """A fact to assert. ``value`` is checked against the predicate's type by the ledger.

    Ids obey :func:`~lossgate.model.limits.id_problem` (the source event ids name stored events
    and are only looked up); ids and the predicate are at most 200 characters, a qualifier
    key 200 and its value 4,096; ``value`` is at most 64 KiB of JSON nested at most 64
    levels; no text anywhere may hold NUL or a lone surrogate (:mod:`lossgate.model.limits`).
    """

    tenant_id: Id
    subject_id: Id
    fact_id: Id | None = None
    predicate: Name
    value: Any
    qualifiers: tuple[tuple[Name, Label], ...] = ()
    polarity: Polarity = "positive"
    modality: Modality = "asserted"
    authority: Authority = "user"
    # Events already stored: looked up as given (a Key), so a fact may rest on an event whose
    # id an earlier version took; an id never stored is not found.
    source_event_ids: tuple[Key, ...] = Field(min_length=1)
    valid_from: Instant | None = None

    @field_validator("value")
    @classmethod
    def _value(cls, value: Any) -> Any:
        return _json_field(value, MAX_VALUE_BYTES)

    @field_validator("qualifiers", mode="before")
    @classmethod
    def _qualifiers(cls, value: Any) -> tuple[tuple[str, str], ...]:
        return normalize_qualifiers(value)

    @field_validator("source_event_ids", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> tuple[str, ...]:
        return tuple(sorted(set(value))) if isinstance(value, (list, tuple, set, frozenset)) else value


class Fact(_Record):
    """A fact in the ledger, with its lifecycle. Deleted facts keep id and hash; value is purged."""

    tenant_id: str
    subject_id: str
    fact_id: str
    seq: int
    predicate: str
    registry_version: int
    value_type: ValueType
    value: Any
    qualifiers: tuple[tuple[str, str], ...] = ()
    polarity: Polarity = "positive"
    modality: Modality = "asserted"
    authority: Authority = "user"
    source_event_ids: tuple[str, ...]
    status: FactStatus = "active"
    supersedes: str | None = None
    superseded_by: str | None = None
    valid_from: datetime | None = None
    recorded_at: datetime
    content_hash: str
    criticality: Criticality = "important"  # the predicate's, when asserted; not hashed

    def canonical_value(self) -> Any:
        """The value in canonical JSON form (``None`` once purged)."""
        return None if self.value is None else canonical_value(self.value_type, self.value)

    def encoded_value(self) -> Any:
        return None if self.value is None else encode_value(self.value_type, self.value)

    def search_text(self) -> str | None:
        """The words a keyword search matches: predicate, value and qualifiers (None once purged)."""
        if self.value is None:
            return None
        v = self.encoded_value()
        if isinstance(v, dict):  # money
            v = f"{v['amount']} {v['currency']}"
        words = [re.sub(r"[._]", " ", self.predicate), str(v).lower() if isinstance(v, bool) else str(v)]
        words += [f"{k} {q}" for k, q in self.qualifiers]
        return searchable(" ".join(words))


def fact_hash_content(
    *,
    tenant_id: str,
    subject_id: str,
    fact_id: str,
    predicate: str,
    value_type: str,
    canonical: Any,
    qualifiers: tuple[tuple[str, str], ...],
    polarity: str,
    modality: str,
    authority: str,
    source_event_ids: tuple[str, ...],
    valid_from: datetime | None,
    supersedes: str | None,
) -> dict[str, Any]:
    """What a fact's content hash covers (everything but lifecycle state and timestamps)."""
    return {
        "tenant_id": tenant_id,
        "subject_id": subject_id,
        "fact_id": fact_id,
        "predicate": predicate,
        "value_type": value_type,
        "value": canonical,
        "qualifiers": [list(p) for p in qualifiers],
        "polarity": polarity,
        "modality": modality,
        "authority": authority,
        "source_event_ids": list(source_event_ids),
        "valid_from": valid_from.isoformat() if valid_from else None,
        "supersedes": supersedes,
    }


class Clock(_Record):
    """Per-subject fences. ``high_water``: the largest seq. ``input_epoch``: bumped by any
    change that invalidates derived memory (supersede, delete, revoke, new conflict, trust change)."""

    tenant_id: str
    subject_id: str
    high_water: int = 0
    input_epoch: int = 0


class Conflict(_Record):
    """Two active values of a cardinality-one predicate with no supersession between them.
    Recorded, never resolved silently; it resolves when a side leaves the active set."""

    tenant_id: str
    subject_id: str
    conflict_id: str
    predicate: str
    fact_ids: tuple[str, str]
    status: Literal["unresolved", "resolved"] = "unresolved"
    detected_at: datetime
    resolved_at: datetime | None = None
    resolution: str | None = None


class LedgerEntry(_Record):
    """One line of the per-subject operation log: what changed, when and why."""

    tenant_id: str
    subject_id: str
    entry_id: int
    at: datetime
    op: str
    target_id: str
    detail: dict[str, Any] = Field(default_factory=dict)


class FactHistory(_Record):
    """A fact's supersession chain (oldest first), the conflicts it took part in and its log."""

    fact_id: str
    chain: tuple[Fact, ...]
    conflicts: tuple[Conflict, ...] = ()
    log: tuple[LedgerEntry, ...] = ()


class AppendResult(_Record):
    """What an append did: new events with their seq, ids already present (no-ops), the clocks after."""

    appended: tuple[EventRef, ...] = ()
    duplicates: tuple[str, ...] = ()
    clocks: tuple[Clock, ...] = ()


# --- artifact content, as the gate sees it ---------------------------------------------


class Claim(_Record):
    """A structured statement in an artifact. ``fact_id`` is the key into the ledger;
    ``derived_from`` names the facts and events it rests on (invariant 5)."""

    fact_id: str
    tenant_id: str
    subject_id: str
    predicate: str
    value_type: ValueType
    value: Any
    qualifiers: tuple[tuple[str, str], ...] = ()
    polarity: Polarity = "positive"
    modality: Modality = "asserted"
    authority: Authority = "user"
    derived_from: tuple[str, ...] = ()

    @field_validator("qualifiers", mode="before")
    @classmethod
    def _qualifiers(cls, value: Any) -> tuple[tuple[str, str], ...]:
        return normalize_qualifiers(value)


class ConflictRef(_Record):
    conflict_id: str
    fact_ids: tuple[str, str]


class ArtifactBody(_Record):
    """What a compressor produces and the gate checks: claims, open items, conflicts, prose."""

    tenant_id: str
    subject_id: str
    claims: tuple[Claim, ...] = ()
    open_items: tuple[str, ...] = ()  # fact ids of unfinished obligations
    unresolved_conflicts: tuple[ConflictRef, ...] = ()
    summary: str = ""


class Snapshot(_Record):
    """An immutable view of one subject's memory at (high_water, input_epoch).

    ``facts`` holds every fact with seq <= high_water in any status (the gate needs the
    superseded and deleted ones to forbid them); ``events`` holds only the authorized
    view: valid events, which are the only text a compressor may ever see."""

    tenant_id: str
    subject_id: str
    clock: Clock
    registry_version: int
    events: tuple[Event, ...] = ()
    facts: tuple[Fact, ...] = ()
    conflicts: tuple[Conflict, ...] = ()


ProposalStatus = Literal["accepted", "conflict", "review", "rejected", "refused", "known"]


class Proposal(_Record):
    """A fact an extractor proposed from raw events (:mod:`lossgate.extract`), kept with its outcome.

    ``status``: ``accepted`` (asserted as ``fact_id``), ``conflict`` (asserted, and it
    opened a conflict with an active fact: never a silent supersession), ``review``
    (waiting for a person: the predicate's policy), ``rejected`` (a person said no),
    ``refused`` (unknown predicate or a value of the wrong type: ``reason`` says which),
    ``known`` (an active fact already says it).
    """

    proposal_id: str
    tenant_id: str
    subject_id: str
    predicate: str
    value: Any
    qualifiers: tuple[tuple[str, str], ...] = ()
    source_event_ids: tuple[str, ...]
    authority: Authority
    modality: Modality
    extractor: str
    status: ProposalStatus
    reason: str | None = None
    fact_id: str | None = None
    created_at: datetime


class TaintPolicy(_Input):
    """A tenant-level rule: every event of the tenant that it matches has trust ``trust``.

    It matches on the event's ``kind`` (its source: ``tool_result``, ``document``, ...)
    and/or its ``actor`` (who said it; for a tool result, the tool, e.g.
    ``tool:invoice.adjust``); at least one of the two. A policy is versioned: setting it
    again with another match or trust stores the next version, and the newest version is
    the one in force. Where several policies match one event, the lowest trust wins
    (:func:`effective_trust`). See :meth:`lossgate.ledger.lifecycle.Ledger.set_taint_policy`.
    """

    tenant_id: Id
    policy_id: Id
    version: int = Field(default=1, ge=1)
    actor: Name | None = None
    kind: EventKind | None = None
    trust: Trust
    reason: Label = ""
    created_at: Instant = Field(default_factory=utcnow)

    @field_validator("actor")
    @classmethod
    def _actor(cls, value: str | None) -> str | None:
        if value == "":
            raise ValueError("an actor to match must not be empty (omit it to match any actor)")
        return value

    def model_post_init(self, context: Any, /) -> None:
        if self.actor is None and self.kind is None:
            raise InvalidInput(f"taint policy {self.policy_id}: give an actor, a kind, or both to match")

    def matches(self, kind: str, actor: str) -> bool:
        """Whether an event of ``kind`` said by ``actor`` falls under this policy."""
        return (self.kind is None or self.kind == kind) and (self.actor is None or self.actor == actor)

    def same_rule(self, other: TaintPolicy) -> bool:
        """Same match and trust (setting it again changes nothing)."""
        return (self.actor, self.kind, self.trust) == (other.actor, other.kind, other.trust)


def effective_trust(policies: Iterable[TaintPolicy], kind: str, actor: str) -> Trust | None:
    """The trust that the policies in force impose on an event of ``kind`` by ``actor``:
    the lowest among those that match it, or ``None`` when none does."""
    found = [p.trust for p in policies if p.matches(kind, actor)]
    if not found:
        return None
    return min(found, key=TRUST_RANK.__getitem__)


class TaintOutcome(_Record):
    """What setting a taint policy did: the version stored (or the one already in force,
    ``changed=False``), the events whose trust it changed as ``(subject_id, event_id)``,
    the artifacts that went stale and the facts recorded again as quoted
    (``(subject_id, old fact id, new fact id)``)."""

    policy: TaintPolicy
    changed: bool = True
    events: tuple[tuple[str, str], ...] = ()
    stale_artifacts: tuple[tuple[str, str], ...] = ()
    demoted_facts: tuple[tuple[str, str, str], ...] = ()
