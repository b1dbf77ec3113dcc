"""Hierarchical consolidation: one gated digest per period, rolled up into a gated root.

A subject whose history is larger than one compressor request (``context_tokens``) is not
summarised in one pass, which would keep only the newest turns that fit the budget, nor
truncated. Its events are split into parts (:mod:`lossgate.consolidate.parts`: sessions,
days, weeks or months, and by size within one), and

* **each part** gets an artifact of its own (``path="part"``): the compressor (either one;
  a model receives one part at a time) is given that period's events and the facts drawn
  from them, and writes a digest under the period's title with its dates
  (:func:`~lossgate.model.wording.period_line`), keeping lines with numbers, amounts, dates,
  identifiers and negations first. The gate checks it against that part's own snapshot:
  its events, its facts in every status (a retired value must not come back), the valid
  events those facts cite in other periods, and the open conflicts they are in. Its
  lineage edges are those events and facts.
* **the root** (``path="hierarchical"``, the artifact the alias publishes) carries the
  whole ledger as claims (every active fact, open item and conflict, as a direct
  consolidation does) and, under ``Periods:``, every part's digest in time order, copied
  from the gated parts, never rewritten. Its inputs are its parts and the active facts; it is
  gated against the whole snapshot, like any summary the alias publishes.

The switch publishes the root and its new parts in one transaction. Reuse is by
fingerprint: a part whose inputs (with their statuses), conflicts, compressor and digest
budget are unchanged keeps its artifact. So a tail append rebuilds the last part and the
root; revoking one input makes stale only its part and the root (lineage follows the
edges: :func:`lossgate.lineage.propagation.invalidate`), the siblings stay valid, and the rebuild
redoes that path alone.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lossgate import gate
from lossgate.consolidate.parts import SPLITS, Part, SplitBy, period_key, split
from lossgate.consolidate.selection import Selection, event_refs, fact_refs, input_root
from lossgate.errors import InvalidInput
from lossgate.model.canonical import content_hash
from lossgate.model.derived_records import Artifact, InputRef, PartInfo, TreeSettings
from lossgate.model.records import Conflict, Fact, Snapshot
from lossgate.model.registry import Registry
from lossgate.model.wording import (
    CONVERSATION_TITLE,
    NARRATIVE_TITLE,
    PERIOD_LINE,
    PERIODS_TITLE,
    event_line,
    period_line,
)
from lossgate.publication.upgrades import outdated
from lossgate.store.protocol import ReadTx

__all__ = [
    "HierarchyConfig",
    "PartJob",
    "TreePlan",
    "DEFAULT_CONTEXT_TOKENS",
    "MAX_TOKENS",
    "wanted",
    "plan",
    "part_jobs",
    "digest_lines",
    "digest_budget",
    "rollup_summary",
    "period_blocks",
    "periods_of",
    "period_hash",
]

DEFAULT_CONTEXT_TOKENS = 8000
# The most tokens any budget, context or window may name: beyond every model's context, and
# far inside what a JSON number keeps exactly when a manifest is stored and read back.
MAX_TOKENS = 1_000_000_000
_REUSABLE = ("published", "candidate")


@dataclass(frozen=True)
class HierarchyConfig:
    """When and how a consolidation goes hierarchical.

    ``mode``: ``auto`` (the default) when the subject's events take more than
    ``context_tokens`` or its published summary is already a hierarchy; ``always``;
    ``never`` (one pass, the newest turns that fit the budget). ``split_by``: the periods
    (:mod:`lossgate.consolidate.parts`). ``context_tokens``: the most one compressor
    request carries. A period's digest keeps ``digest_ratio`` of its conversation's tokens,
    at most ``digest_tokens`` and at least 32, besides the facts drawn from that period
    (never dropped). The root inlines the newest digests that fit in ``window_tokens``
    together; the older ones stay its parts (published, in its lineage, reused).

    A setting left ``None`` is the one the subject's current root was built with
    (:class:`~lossgate.model.derived_records.TreeSettings` in its manifest), else the default: session,
    the compressor's ``context_tokens`` attribute or :data:`DEFAULT_CONTEXT_TOKENS`, 200
    tokens, 0.15, a window of 8,000 tokens. So a worker running the defaults keeps what a person chose for a subject
    (``lossgate consolidate --split day``), and rebuilds only what changed."""

    mode: Literal["auto", "always", "never"] = "auto"
    split_by: SplitBy | None = None
    context_tokens: int | None = None
    digest_tokens: int | None = None
    digest_ratio: float | None = None
    window_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("context_tokens", "digest_tokens", "window_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value > MAX_TOKENS):
                raise InvalidInput(f"hierarchy {name} must be an integer of at most {MAX_TOKENS:,}, not {value!r}")
        ratio = self.digest_ratio
        if ratio is not None and (
            isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio)
        ):
            raise InvalidInput(f"hierarchy digest_ratio must be a finite number, not {ratio!r}")
        if isinstance(ratio, int):  # a manifest keeps it as the float it is (1, not 1.0, would read back changed)
            object.__setattr__(self, "digest_ratio", float(ratio))
        if self.mode not in ("auto", "always", "never"):
            raise InvalidInput(f"hierarchy mode must be auto, always or never, not {self.mode!r}")
        if self.split_by is not None and self.split_by not in SPLITS:
            raise InvalidInput(f"hierarchy split must be session, day, week or month, not {self.split_by!r}")
        if self.context_tokens is not None and self.context_tokens < 64:
            raise InvalidInput(f"hierarchy context_tokens must be at least 64, not {self.context_tokens}")
        if self.digest_tokens is not None and self.digest_tokens < 32:
            raise InvalidInput(f"hierarchy digest_tokens must be at least 32, not {self.digest_tokens}")
        if self.window_tokens is not None and self.window_tokens < 64:
            raise InvalidInput(f"hierarchy window_tokens must be at least 64, not {self.window_tokens}")
        if self.digest_ratio is not None and not 0 < self.digest_ratio <= 1:
            raise InvalidInput(f"hierarchy digest_ratio must be in (0, 1], not {self.digest_ratio}")

    def settings(self, previous: TreeSettings | None, compressor: Any) -> TreeSettings:
        """The settings of this job: this config's, else ``previous`` (the current root's),
        else the defaults (see the class docstring)."""
        declared = getattr(compressor, "context_tokens", None)
        default_context = declared if isinstance(declared, int) and declared >= 64 else DEFAULT_CONTEXT_TOKENS
        base = previous or TreeSettings(
            split_by="session", context_tokens=default_context, digest_tokens=200, digest_ratio=0.15
        )
        chosen = {
            k: v
            for k, v in (
                ("split_by", self.split_by),
                ("context_tokens", self.context_tokens),
                ("digest_tokens", self.digest_tokens),
                ("digest_ratio", self.digest_ratio),
                ("window_tokens", self.window_tokens),
            )
            if v is not None
        }
        return base.model_copy(update=chosen)


def digest_budget(settings: TreeSettings, part_tokens: int) -> int:
    """The budget of the conversation lines of a period whose events take ``part_tokens``."""
    return min(settings.digest_tokens, max(32, round(settings.digest_ratio * part_tokens)))


@dataclass(frozen=True)
class PartJob:
    """One part of the tree: what its compressor request and its gate read, and the
    artifact that already digests exactly this (``reuse``), if one is stored."""

    part: Part
    snapshot: Snapshot  # its events (and those its facts cite), its facts in any status, their open conflicts
    facts: tuple[Fact, ...]  # its active facts
    inputs: tuple[InputRef, ...]  # its events and facts (lineage edges)
    input_root: str  # of ``inputs`` (:func:`~lossgate.consolidate.selection.input_root`)
    fingerprint: str
    outdated_event_ids: frozenset[str]
    reuse: Artifact | None
    period: str = ""  # a hash of its period's grouping key (:func:`period_hash`)

    @property
    def info(self) -> PartInfo:
        return PartInfo(
            key=self.part.key,
            first_at=self.part.first_at,
            last_at=self.part.last_at,
            events=len(self.part.events),
            fingerprint=self.fingerprint,
        )

    @property
    def title(self) -> str:
        return period_line(self.part.first_at, self.part.last_at)


@dataclass(frozen=True)
class TreePlan:
    """A hierarchical job's parts, in time order."""

    parts: tuple[PartJob, ...]
    facts: tuple[Fact, ...]  # the root's: every active fact
    settings: TreeSettings
    # A root that extends the published one (:mod:`lossgate.consolidate.tail`): that root,
    # the parts of it this one keeps as they are, and their digest lines in it.
    extends: Artifact | None = None
    carried: tuple[str, ...] = ()
    carried_lines: tuple[str, ...] = ()
    carried_periods: tuple[str, ...] = ()

    @property
    def periods(self) -> tuple[str, ...]:
        """The period hash of every part the root rolls up, in its children's order."""
        return (*self.carried_periods, *(job.period for job in self.parts))

    @property
    def selected_ids(self) -> tuple[str, ...]:
        """What the job reads, recorded before any generation: each reused part's artifact,
        each part to build's events and facts, and the active facts the root carries."""
        ids: list[str] = [self.extends.artifact_id] if self.extends is not None else []
        for job in self.parts:
            ids += [job.reuse.artifact_id] if job.reuse else [r.id for r in job.inputs]
        seen = set(ids)
        return tuple(ids + [f.fact_id for f in self.facts if f.fact_id not in seen])

    @property
    def root_preview(self) -> str:
        """A hash of the parts and facts the root will roll up (its input root once built)."""
        parts = [j.fingerprint for j in self.parts]
        facts = sorted(f.content_hash for f in self.facts)
        if self.extends is None:
            return content_hash([parts, facts])
        return content_hash([self.extends.manifest.input_root, list(self.carried), parts, facts])


def wanted(
    sel: Selection, parent: Artifact | None, mode: str, context_tokens: int, count: Callable[[str], int]
) -> bool:
    """Whether this job consolidates hierarchically (``mode``, see :class:`HierarchyConfig`)."""
    if mode != "auto":
        return mode == "always"
    if parent is not None and parent.manifest.path == "hierarchical" and parent.state in ("published", "stale"):
        return True  # once a hierarchy, always one: the periods stay covered
    lines = [event_line(e) for e in sel.snapshot.events if e.text]
    size = sum(len(line.encode("utf-8")) + 1 for line in lines)
    if size <= context_tokens:  # a token is at least one byte
        return False
    used = 0
    for line in reversed(lines):  # counted until the context is exceeded, not further
        used += count(line) + 1
        if used > context_tokens:
            return True
    return False


def plan(
    tx: ReadTx,
    sel: Selection,
    parent: Artifact | None,
    settings: TreeSettings,
    *,
    compressor: str,
    registry: Registry,
    count: Callable[[str], int],
    reuse: bool = True,
    shadow: bool = False,
) -> TreePlan:
    """Split ``sel``'s authorized events into parts and find the stored artifacts that digest
    them already (the parts of ``parent``, the alias's current artifact, and any gated
    candidate parts a failed job left), unless ``reuse`` is off. A part gated under an older
    registry that the current one outgrew is checked again under it here, and reused only
    if it passes."""
    snap = sel.snapshot
    pool = _reusable(tx, sel, parent, shadow=shadow) if reuse else {}
    parts = split(snap.events, by=settings.split_by, context_tokens=settings.context_tokens, count=count)
    jobs = part_jobs(
        tx, parts, snap, sel.withdrawn_event_ids, settings, compressor=compressor, registry=registry, pool=pool
    )
    return TreePlan(parts=jobs, facts=sel.facts, settings=settings)


def part_jobs(
    tx: ReadTx,
    parts: Sequence[Part],
    snap: Snapshot,
    withdrawn: frozenset[str],
    settings: TreeSettings,
    *,
    compressor: str,
    registry: Registry,
    pool: dict[str, Artifact],
) -> tuple[PartJob, ...]:
    """One :class:`PartJob` per part: its snapshot, inputs and fingerprint, read from ``snap``
    (which holds at least the parts' events, every fact citing them in any status, the valid
    events those facts cite and the open conflicts), and the artifact of ``pool`` (by
    fingerprint) that digests it already, if any."""
    by_source: dict[str, list[Fact]] = {}
    for fact in snap.facts:
        for event_id in fact.source_event_ids:
            by_source.setdefault(event_id, []).append(fact)
    fact_by_id = {f.fact_id: f for f in snap.facts}
    valid = {e.event_id: e for e in snap.events}
    checked: dict[int, bool] = {}
    jobs: list[PartJob] = []
    for part in parts:
        ids = {e.event_id for e in part.events}
        facts = {f.fact_id: f for e in part.events for f in by_source.get(e.event_id, ())}
        # An open conflict travels whole: both sides, wherever the other was said.
        touching = [c for c in snap.conflicts if facts.keys() & set(c.fact_ids)]
        for c in touching:
            facts.update({fid: fact_by_id[fid] for fid in c.fact_ids if fid in fact_by_id})
        conflicts: tuple[Conflict, ...] = tuple(c for c in touching if set(c.fact_ids) <= facts.keys())
        ordered = tuple(sorted(facts.values(), key=lambda f: (f.seq, f.fact_id)))
        # The gate also reads the valid events these facts cite in other periods: a claim
        # cites every source it stands on, and a source the snapshot lacks reads as withdrawn.
        cited = tuple(
            sorted(
                (valid[e] for f in ordered for e in set(f.source_event_ids) if e in valid and e not in ids),
                key=lambda e: e.seq,
            )
        )
        cited = tuple({e.event_id: e for e in cited}.values())
        inputs = tuple(event_refs((*part.events, *cited)) + fact_refs(ordered))
        root = input_root(inputs)
        fingerprint = content_hash(
            {
                "key": part.key,
                "root": root,
                "statuses": [[f.fact_id, f.status] for f in ordered],
                "trust": [[e.event_id, e.trust] for e in (*part.events, *cited)],  # a content hash leaves trust out
                "conflicts": sorted(c.conflict_id for c in conflicts),
                "compressor": compressor,
                "digest": [settings.digest_tokens, settings.digest_ratio],
                "withdrawn": sorted(withdrawn & {e for f in ordered for e in f.source_event_ids}),
            }
        )
        outdated_ids = frozenset(
            e for f in ordered if f.status in ("superseded", "revoked") for e in f.source_event_ids if e in ids
        )
        snapshot = Snapshot(
            tenant_id=snap.tenant_id,
            subject_id=snap.subject_id,
            clock=snap.clock,
            registry_version=snap.registry_version,
            events=(*part.events, *cited),
            facts=ordered,
            conflicts=conflicts,
        )
        reuse = pool.get(fingerprint)
        if reuse is not None and reuse.manifest.registry_version != registry.version:
            version = reuse.manifest.registry_version
            if version not in checked:
                checked[version] = not outdated(tx, version, registry)
            if not checked[version] and not gate.check(snapshot, reuse.body, registry).passed:
                reuse = None
        jobs.append(
            PartJob(
                part=part,
                snapshot=snapshot,
                facts=tuple(f for f in ordered if f.status == "active"),
                inputs=inputs,
                input_root=root,
                fingerprint=fingerprint,
                outdated_event_ids=outdated_ids,
                reuse=reuse,
                period=period_hash(period_key(part.events[0], settings.split_by)),
            )
        )
    return tuple(jobs)


def _reusable(tx: ReadTx, sel: Selection, parent: Artifact | None, *, shadow: bool = False) -> dict[str, Artifact]:
    """Parts a job may reuse, by fingerprint: the parts of ``parent`` and gated candidate
    parts; for a shadow job, the parts of the subject's latest shadow tree that passed
    their gate, and only those (a shadow part is never live, a live part never reused by a
    shadow, and a part an exploratory gate let through is built and gated again)."""
    t, s = sel.snapshot.tenant_id, sel.snapshot.subject_id
    found: list[Artifact] = []
    if parent is not None:
        for child_id in parent.manifest.children:
            child = tx.artifact(t, s, child_id)
            if child is not None:
                found.append(child)
    if not shadow:
        found += [a for a in tx.artifacts(t, s, states=["candidate"]) if a.manifest.path == "part"]
    states = ("shadow",) if shadow else _REUSABLE
    pool: dict[str, Artifact] = {}
    for art in found:
        if art.manifest.part is not None and art.state in states and art.gate.get("outcome") != "failed":
            pool.setdefault(art.manifest.part.fingerprint, art)
    return pool


def digest_lines(child: Artifact) -> list[str]:
    """What a part contributes to its root: its period's title and the lines under its
    conversation or narrative title (its fact lines are the root's own claims)."""
    part = child.manifest.part
    assert part is not None
    lines = child.body.summary.split("\n")
    body: list[str] = []
    titles = (CONVERSATION_TITLE, NARRATIVE_TITLE, PERIODS_TITLE)
    for i, line in enumerate(lines):
        if line in (CONVERSATION_TITLE, NARRATIVE_TITLE):
            # a model's narrative may write a line that reads as a title: it never becomes one
            body = [ln for ln in lines[i + 1 :] if ln.strip() and ln not in titles and not PERIOD_LINE.fullmatch(ln)]
            break
    return [period_line(part.first_at, part.last_at), *body]


def period_hash(key: str) -> str:
    """A period's grouping key (:func:`~lossgate.consolidate.parts.period_key`) as a root's
    manifest keeps it: hashed, since a session's label is content."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def period_blocks(lines: Sequence[str]) -> list[list[str]]:
    """The lines under a root's ``Periods:`` title, cut into one block per period (each
    starts with its title, :data:`~lossgate.model.wording.PERIOD_LINE`)."""
    blocks: list[list[str]] = []
    for line in lines:
        if PERIOD_LINE.fullmatch(line) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return blocks


def periods_of(summary: str) -> list[str]:
    """The lines under a root summary's ``Periods:`` title (none if it has no such title)."""
    lines = summary.split("\n")
    return lines[lines.index(PERIODS_TITLE) + 1 :] if PERIODS_TITLE in lines else []


def rollup_summary(
    structure: str,
    children: Sequence[Artifact],
    *,
    carried: Sequence[str] = (),
    window: int | None = None,
    count: Callable[[str], int] | None = None,
) -> tuple[str, str]:
    """The root's summary: its structured lines, then the period digests, oldest first:
    ``carried`` (a parent root's digest lines, kept as they were gated) and every child's.
    With a ``window`` (tokens), only the newest digests that fit in it together are inlined
    (at least the newest one); the older ones stay the root's parts. Returns the summary and
    the same without ``carried``: what the gate reads of a root that extends its parent."""
    blocks = period_blocks(carried) + [digest_lines(child) for child in children]
    own = len(blocks) - len(period_blocks(carried))
    kept = len(blocks)
    if window is not None and count is not None:
        used, kept = 0, 0
        for block in reversed(blocks):
            used += sum(count(line) + 1 for line in block)
            if kept and used > window:
                break
            kept += 1
    chosen = blocks[len(blocks) - kept :]
    fresh = blocks[len(blocks) - min(own, kept) :] if own else []
    whole = [structure, PERIODS_TITLE, *(line for block in chosen for line in block)]
    gated = [structure, PERIODS_TITLE, *(line for block in fresh for line in block)]
    return "\n".join(whole), "\n".join(gated)
