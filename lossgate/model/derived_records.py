"""Typed records of the derived layer: artifacts, their manifests and lineage,
the alias that publishes them, consolidation attempts, and recall results.

A summary is an invalidatable derived index, not a new raw fact: every
artifact names exactly what it was built from (its manifest and lineage), and
only the artifact the alias points at, built at the clock's current
``input_epoch``, is ever recalled.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lossgate.model.limits import Id
from lossgate.model.records import ArtifactBody, Clock, Conflict, Event, Fact, LedgerEntry
from lossgate.model.wording import conflict_line, day_line, event_line, fact_line, header_line, one_line, summary_parts

__all__ = [
    "ArtifactState",
    "ExpectedAlias",
    "Alias",
    "InputRef",
    "PartInfo",
    "TreeSettings",
    "Manifest",
    "Artifact",
    "ArtifactHead",
    "LineageEdge",
    "AttemptStatus",
    "Attempt",
    "Lane",
    "RecallMode",
    "RecallRecord",
    "RecallResult",
    "Job",
    "LineageView",
    "DailyMetric",
    "Refusal",
    "GuardResult",
    "ResponseRecord",
    "RecallInputs",
    "RecallChange",
    "RecallVerification",
    "rendered_block",
    "conflicts_between",
]

ArtifactState = Literal[
    "candidate", "published", "retired", "stale", "failed", "abandoned", "quarantined", "shadow", "review", "refused"
]
AttemptStatus = Literal["selected", "gated", "published", "rejected", "conflict", "error"]
RecallMode = Literal["summary", "raw_fallback"]
#: Who reads what a lane publishes: ``live`` is the subject's alias, served by recall;
#: ``shadow`` is the shadow alias of a tenant's shadow lane (:mod:`lossgate.policy.rollout`),
#: which recall never reads.
Lane = Literal["live", "shadow"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExpectedAlias(_Record):
    """The alias tuple a job read at snapshot time; its CAS succeeds only if nothing moved."""

    parent_artifact_id: str | None
    source_epoch: int
    covers_through: int


class Alias(_Record):
    """The per-subject read alias: which artifact is live, at which epoch, covering which seq."""

    tenant_id: str
    subject_id: str
    artifact_id: str | None = None
    source_epoch: int = 0
    covers_through: int = 0
    updated_at: datetime | None = None

    def expected(self) -> ExpectedAlias:
        return ExpectedAlias(
            parent_artifact_id=self.artifact_id, source_epoch=self.source_epoch, covers_through=self.covers_through
        )


class InputRef(_Record):
    """One input of a consolidation, pinned by content hash."""

    kind: Literal["event", "fact", "artifact"]
    id: str
    content_hash: str
    seq: int = 0


class PartInfo(_Record):
    """What one part of a hierarchical consolidation covers (:mod:`lossgate.consolidate.parts`):
    its key (``session 3``, ``2023-05-08``, ``2023-W19``; ``#2`` and on for a part split by
    size), the times of its first and last events, and its fingerprint: a hash of its inputs
    with their statuses, its conflicts, the compressor and the digest budget. A later job
    whose part has the same fingerprint reuses this artifact instead of building it again."""

    key: str
    first_at: datetime
    last_at: datetime
    events: int
    fingerprint: str


class TreeSettings(_Record):
    """How a hierarchical root's parts were cut and digested
    (:class:`~lossgate.consolidate.hierarchy.HierarchyConfig`): a later job inherits what
    its own configuration leaves unset."""

    split_by: Literal["session", "day", "week", "month"]
    context_tokens: int
    digest_tokens: int
    digest_ratio: float
    # The most tokens of period digests the root inlines, newest first (the older digests
    # stay its parts): a root that grows with history would make every read of it grow too.
    window_tokens: int = 8000


class Manifest(_Record):
    """Everything needed to reproduce or audit one artifact.

    ``path`` says how it was built: ``direct`` (from every input), ``incremental`` (a
    published parent plus what is new), ``part`` (one period's digest in a hierarchy, with
    ``part`` saying which) or ``hierarchical`` (a root that rolls up its parts: its
    ``artifact`` inputs are its children). A root that ``extends`` the published root
    (:mod:`lossgate.consolidate.tail`) lists that root and its own new parts as inputs, and
    the parent's parts it keeps as ``carried``: its children are those, then its new parts.
    Its ``input_root`` chains the parent's (the parent's input is pinned by its input root),
    so it still commits to everything it covers."""

    artifact_id: str
    tenant_id: str
    subject_id: str
    new_covers_through: int
    input_epoch: int
    expected_alias: ExpectedAlias
    inputs: tuple[InputRef, ...]
    input_root: str
    path: Literal["direct", "incremental", "part", "hierarchical"]
    selector_version: str
    prompt_version: str
    compressor: str
    compressor_version: str
    extractor_version: str
    schema_version: int
    registry_version: int
    attempt: int
    budget_tokens: int | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    part: PartInfo | None = None
    tree: TreeSettings | None = None  # a hierarchical root's settings
    extends: str | None = None  # the root this one extends
    carried: tuple[str, ...] = ()  # the parts of that root this one keeps, oldest first
    # A root's: a hash of each child's period (its grouping key), in the children's order; a
    # job that extends the root tells by them whether a new event belongs to an older period.
    periods: tuple[str, ...] = ()
    # The valid source events holding an atom the summary dropped (the gate's ``atom_missing``
    # losses: in neither the summary nor its claims), sorted. A part's are its own events'; a
    # root's, its own gate's over the parts it brings and theirs (recall reads the carried
    # parts' from them: :func:`lossgate.recall.read.dropped_events`).
    dropped: tuple[str, ...] = ()

    @property
    def children(self) -> tuple[str, ...]:
        """The parts a hierarchical root rolls up, oldest first (none for any other artifact)."""
        if self.path != "hierarchical":
            return ()
        return (*self.carried, *self.new_parts)

    @property
    def new_parts(self) -> tuple[str, ...]:
        """The parts a hierarchical root brings itself (all of them, unless it extends a root)."""
        if self.path != "hierarchical":
            return ()
        return tuple(r.id for r in self.inputs if r.kind == "artifact" and r.id != self.extends)


class Artifact(_Record):
    """A stored artifact: the compressor's body, its manifest, and what the gate said."""

    artifact_id: str
    tenant_id: str
    subject_id: str
    state: ArtifactState
    body: ArtifactBody
    manifest: Manifest
    gate: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    state_reason: str | None = None


class ArtifactHead(_Record):
    """What recall needs of an artifact, without its (large) manifest."""

    artifact_id: str
    state: ArtifactState
    summary: str
    open_items: tuple[str, ...] = ()


class LineageEdge(_Record):
    """``artifact_id`` was derived from ``input_id`` (W3C PROV ``wasDerivedFrom``)."""

    tenant_id: str
    subject_id: str
    artifact_id: str
    input_kind: Literal["event", "fact", "artifact"]
    input_id: str


class Attempt(_Record):
    """One consolidation attempt, kept whatever its outcome (invariant 11).

    ``selected_ids`` is written before the compressor runs, so a loss can be
    attributed to selection or to generation."""

    attempt_id: str
    tenant_id: str
    subject_id: str
    number: int
    status: AttemptStatus
    started_at: datetime
    finished_at: datetime | None = None
    high_water: int
    input_epoch: int
    expected_alias: ExpectedAlias
    selected_ids: tuple[str, ...]
    input_root: str
    compressor: str
    artifact_id: str | None = None
    gate_outcome: Literal["clean", "acceptable", "failed"] | None = None
    violations: tuple[str, ...] = ()
    # one line per violation, ``subject:code: detail``: what the gate says of it (the
    # fence quotes the sentence); erased with the raw output when an input is deleted
    details: tuple[str, ...] = ()
    losses: tuple[str, ...] = ()
    raw_output: str | None = None
    error: str | None = None
    reason: str | None = None
    covers_through: int | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    # Set on the failure that reached ``max_attempts``: no retry is queued and the
    # worker leaves the job in ``review`` for a person.
    needs_review: bool = False
    # ``shadow``: built by a tenant's shadow lane (lossgate.policy.rollout): its artifact is
    # published to the shadow alias at most, and its failures never count toward retries.
    lane: Lane = "live"
    # Set when a deletion purged what this attempt held of deleted content (lossgate.lineage.propagation):
    # a later save of the attempt keeps it purged (lineage.save_attempt).
    purged: bool = False


class RecallRedaction(_Record):
    """What is left of a recall's query once the recall touched content that was deleted
    since: the query's sha256 and length, for audit. The query text itself is gone."""

    at: datetime
    cause: str
    query_sha256: str
    query_chars: int


class RecallInputs(_Record):
    """What one recall returned, pinned by content hash, so that a later check can tell
    whether memory still says it (:func:`lossgate.recall.attestation.verify_recall`): the artifact
    whose summary it returned (``None`` in raw fallback) with the sha256 of what recall reads
    of its body (summary and open items), how many of the summary's trimmable lines a budget
    kept (``None``: the whole summary), and each fact and event it returned with its content
    hash (facts in the order returned, events in seq order). Ids and hashes only: nothing
    here holds content."""

    artifact_id: str | None = None
    artifact_sha256: str | None = None
    summary_lines: int | None = None
    facts: dict[str, str] = Field(default_factory=dict)
    events: dict[str, str] = Field(default_factory=dict)


class RecallRecord(_Record):
    """Evidence of one recall: what was asked, what was considered, what was returned, at which versions.

    A recall that touched deleted content (a candidate id, or the summary it returned, derived
    from it) is redacted when the deletion commits: ``query`` becomes ``None`` and ``redacted``
    keeps the query's hash and length; ids and versions stay (invariant 13)."""

    recall_id: str
    tenant_id: str
    subject_id: str
    at: datetime
    query: str | None
    filters: dict[str, Any]
    mode: RecallMode
    candidate_ids: tuple[str, ...]
    selected_ids: tuple[str, ...]
    alias: Alias
    clock: Clock
    redacted: RecallRedaction | None = None
    # The tier (hot, warm, cold) of each selected event when it was recalled (lossgate.ledger.tiers).
    tiers: dict[str, str] = Field(default_factory=dict)
    # What the agent was handed, pinned (lossgate.recall.attestation): the sha256 of the block
    # RecallResult.render() printed, and the content hash of everything it was built from.
    # None on records written before recalls were attested.
    rendered_sha256: str | None = None
    inputs: RecallInputs | None = None


RecallChange = Literal["superseded", "revoked", "deleted", "edited", "retired"]


class RecallVerification(_Record):
    """Whether what one recall returned is still what memory says
    (:func:`lossgate.recall.attestation.verify_recall`).

    ``state``: ``unchanged``; ``changed`` (a fact it returned was superseded or revoked, an
    event revoked, a content hash differs, or its summary's artifact is no longer the live
    one); ``erased`` (content it returned, or its own query, was deleted since). ``changes``
    names each input that moved and how: ``(id, "superseded" | "revoked" | "deleted" |
    "edited" | "retired")``. ``rendered_matches``, checked only when unchanged: whether the
    block rebuilt from what is stored now hashes to the recorded ``rendered_sha256``
    (``None`` when not checked, or for a record written before recalls were attested)."""

    recall_id: str
    tenant_id: str
    subject_id: str
    state: Literal["unchanged", "changed", "erased"]
    changes: tuple[tuple[str, RecallChange], ...] = ()
    rendered_matches: bool | None = None


class Refusal(_Record):
    """Why a guard refused an action: the rule, the action's field and value it read, and the
    fact (or open conflict) that forbids it, with the fact's value, qualifiers and sources."""

    rule: str  # the registry's name for the rule
    kind: str  # excludes | at_most | permits | in_conflict | condition_unmet
    field: str  # where in the action, with indexes: "items[1].ingredients[0]"
    value: Any = None  # what the action holds there
    detail: str
    fact_id: str | None = None
    predicate: str | None = None
    fact_value: Any = None
    qualifiers: dict[str, str] = Field(default_factory=dict)
    source_event_ids: tuple[str, ...] = ()
    conflict_id: str | None = None
    sides: tuple[str, ...] = ()  # an open conflict: each side as a fact line


class GuardResult(_Record):
    """One guard check of an agent's planned action against the subject's ledger
    (:mod:`lossgate.guard`): allowed, or refused with every :class:`Refusal`. ``recall_id``
    names the recall the agent saw, if it said; ``action`` is ``None`` once content it was
    checked against is deleted (its sha256 stays)."""

    guard_id: str
    tenant_id: str
    subject_id: str
    at: datetime
    action: dict[str, Any] | None
    action_sha256: str
    allowed: bool
    refusals: tuple[Refusal, ...] = ()
    rules: tuple[str, ...] = ()  # the rules that read a field of the action
    # the facts those rules read, and their source events: deleting one redacts this result
    read: tuple[str, ...] = ()
    recall_id: str | None = None
    registry_version: int | None = None
    redacted: RecallRedaction | None = None


class ResponseRecord(_Record):
    """What an agent finally said or did, tied to the recall (and guard result) it was based on.
    ``answer`` and ``action`` are ``None`` once content the recall returned is deleted."""

    response_id: str
    tenant_id: str
    subject_id: str
    at: datetime
    recall_id: str
    guard_id: str | None = None
    answer: str | None = None
    action: dict[str, Any] | None = None
    answer_sha256: str | None = None
    action_sha256: str | None = None
    redacted: RecallRedaction | None = None


class RecallResult(_Record):
    """What an agent reads back. ``summary`` only in ``summary`` mode; active critical facts always."""

    tenant_id: str
    subject_id: str
    mode: RecallMode
    artifact_id: str | None = None
    summary: str | None = None
    open_items: tuple[str, ...] = ()
    facts: tuple[Fact, ...] = ()
    events: tuple[Event, ...] = ()
    record: RecallRecord
    tokens: int = 0
    # in raw fallback, the open conflicts between the facts it returned (a fresh summary's
    # structured part states its own)
    conflicts: tuple[Conflict, ...] = ()

    def render(self) -> str:
        """The single block of text an agent puts into its prompt, the ledger first:

        * one header line, whose memory it is and whether from a fresh summary
          (``Memory of user-17 (summary)``) or from raw memory
          (``Memory of user-17 (raw memory: no fresh summary)``);
        * ``Facts:``, the recall's facts, current values, one :func:`~lossgate.model.wording.fact_line`
          each, then whatever else the summary's structured part holds: the fact lines of
          facts this recall did not bring (under a query, those that did not match) and its
          open conflicts (:func:`~lossgate.model.wording.conflict_line`); in raw fallback, the open
          conflicts between the facts returned (:attr:`conflicts`), the same line each. Each
          line once: the summary's own header and the fact lines the recall's facts restate
          are not printed again;
        * the summary's prose: its ``Conversation:``, ``Narrative:`` or ``Periods:`` section
          (:data:`~lossgate.model.wording.SECTION_TITLES`), as recall kept it;
        * ``Events:``, the events under a header per day (:func:`~lossgate.model.wording.day_line`),
          oldest first.

        Untrusted text is marked as a quote (invariant 8). Recall's :attr:`tokens` counts this
        block (:func:`block_parts`): exactly, without a budget; with one, each line with the
        newline that ends it, so one over the block's count at most, and the block is never
        longer than the budget unless what it never trims (critical facts, the summary's
        structured part and narrative, an open conflict's lines) is."""
        return rendered_block(self.tenant_id, self.subject_id, self.summary, self.facts, self.events, self.conflicts)


FACTS_TITLE = "Facts:"
EVENTS_TITLE = "Events:"


def rendered_block(
    tenant_id: str,
    subject_id: str,
    summary: str | None,
    facts: tuple[Fact, ...] | list[Fact],
    events: tuple[Event, ...] | list[Event],
    conflicts: Iterable[Conflict] = (),
) -> str:
    """:meth:`RecallResult.render` of a recall of these: :func:`block_parts` joined by
    newlines where not empty (an attestation rebuilds the block from what is stored)."""
    return "\n".join(part for part in block_parts(tenant_id, subject_id, summary, facts, events, conflicts) if part)


def conflicts_between(conflicts: Iterable[Conflict], facts: Iterable[Fact]) -> tuple[Conflict, ...]:
    """The open ``conflicts`` whose two facts are both among ``facts`` (what a raw-fallback
    recall states beside them: two values of one predicate are never read as settled)."""
    held = {f.fact_id for f in facts}
    return tuple(c for c in conflicts if c.status == "unresolved" and set(c.fact_ids) <= held)


def block_title(subject_id: str, summary: str | None) -> str:
    """The first line of :meth:`RecallResult.render`: whose memory, from a summary or raw memory."""
    return f"Memory of {one_line(subject_id)}" + (
        " (summary)" if summary is not None else " (raw memory: no fresh summary)"
    )


def summary_structure(tenant_id: str, subject_id: str, summary: str | None) -> tuple[list[str], str]:
    """What the block prints of a recalled summary (:func:`~lossgate.model.wording.summary_parts`):
    its structured lines but its header, and its prose."""
    if not summary:
        return [], ""
    structured, prose = summary_parts(summary)
    header = header_line(tenant_id, subject_id)
    return [ln for ln in structured if ln != header], prose


def block_parts(
    tenant_id: str,
    subject_id: str,
    summary: str | None,
    facts: tuple[Fact, ...] | list[Fact],
    events: tuple[Event, ...] | list[Event],
    conflicts: Iterable[Conflict] = (),
) -> tuple[str, str, str]:
    """:meth:`RecallResult.render`'s block in three parts, joined by newlines where not empty:
    the header line with the facts section; the summary's prose (``""`` without one); the
    events section (``""`` without events, or when the prose quotes every one: an event line
    the prose holds is not printed again). Recall counts its tokens by these parts."""
    structured, prose = summary_structure(tenant_id, subject_id, summary)
    lines: list[str] = []
    seen: set[str] = set()
    for line in [
        *(fact_line(f) for f in facts if f.value is not None),
        *structured,
        *(conflict_line(c.predicate, c.fact_ids) for c in conflicts),
    ]:
        if line not in seen:
            seen.add(line)
            lines.append(line)
    head = [block_title(subject_id, summary), *([FACTS_TITLE, *lines] if lines else [])]
    # an event the summary's prose quotes already (a line of its conversation) is said once
    quoted = set(prose.split("\n")) if prose else set()
    tail: list[str] = []
    day = None
    for e in sorted(events, key=lambda e: e.seq):
        line = event_line(e)
        if line in quoted:
            continue
        if day_line(e) != day:
            day = day_line(e)
            tail += [EVENTS_TITLE] if not tail else []
            tail.append(day)
        tail.append(line)
    return "\n".join(head), prose, "\n".join(tail)


class Job(_Record):
    """A queued rebuild of one subject's summary."""

    job_id: int
    tenant_id: str
    subject_id: str
    status: Literal["pending", "running", "done", "review"]
    reason: str
    run_after: datetime
    tries: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None


class LineageView(_Record):
    """An artifact with what it was derived from and the chain of parents behind it (audit view)."""

    artifact: Artifact
    edges: tuple[LineageEdge, ...]
    ancestors: tuple[tuple[str, ArtifactState], ...] = ()
    # The log lines that moved events between tiers under this artifact (op ``tier``) or
    # held them hot because of it (op ``retention``), oldest first (lossgate.ledger.tiers).
    tier_moves: tuple[LedgerEntry, ...] = ()


class DailyMetric(_Record):
    """One figure of a daily fidelity run (:mod:`lossgate.ops.daily`), stored so that a
    trend exists: ``metric`` (``key_facts``, ``key_facts_kept``, ``erroneous_new_fact_rate``,
    ...) of one ``tenant_id`` in the run ``run_id`` for ``day``, under ``dimension`` (``{}``
    for the tenant as a whole, ``{"registry_version": 3}`` for the subjects rebuilt under
    that predicate registry). Counts are stored beside the rates they make, so figures
    over several tenants or days are computed from counts, never by averaging rates.
    ``recorded_at`` is when the run stored it (an instant)."""

    tenant_id: Id
    run_id: Id
    day: date
    metric: str = Field(min_length=1, max_length=200, pattern=r"^[a-z0-9_.:-]+$")
    dimension: dict[str, str | int] = Field(default_factory=dict)
    value: float = Field(allow_inf_nan=False)
    recorded_at: datetime

    @field_validator("recorded_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("recorded_at must carry a UTC offset")
        return value

    @field_validator("dimension")
    @classmethod
    def _dimension(cls, value: dict[str, str | int]) -> dict[str, str | int]:
        for key, item in value.items():
            if not key or "\x00" in key or (isinstance(item, str) and "\x00" in item) or isinstance(item, bool):
                raise ValueError(f"a dimension is a map of names to strings or integers, not {key!r}: {item!r}")
        return dict(sorted(value.items()))
