"""Daily fidelity metrics with blocking rules (``lossgate eval daily``).

Every day, for the tenants named, :func:`run_daily`:

1. **rebuilds a sample of subjects' summaries from the raw layer, publishing nothing.** A
   deterministic sample (``sample`` subjects per tenant, drawn with ``seed``: by default the
   day, so successive days cover other subjects and a rerun of one day draws the same ones)
   is selected in a read transaction on the direct path (every valid event and active fact,
   as :func:`lossgate.consolidate.selection.select` gives them), compressed by the
   compressor under test, parsed and gated (:func:`lossgate.gate.check`) as
   :mod:`lossgate.consolidate.pipeline` does (markers the compressor wrote are dropped, the
   narrative sentences on a topic only the ledger states are left out, or refuse the
   summary under the tenant's ``refuse`` policy, :mod:`lossgate.gate.narrative`, and every
   line stating a superseded value gets lossgate's marker, :mod:`lossgate.gate.superseded`),
   without storing an artifact, an attempt or a job. The pass is one request even for a
   subject the pipeline would consolidate by parts (:mod:`lossgate.consolidate.hierarchy`):
   its token reduction is that of one pass. The outcomes are the deterministic gate's. A
   model judge, when one is given (the CLI: ``LOSSGATE_JUDGE_URL`` and
   ``LOSSGATE_JUDGE_MODEL``), reads what the pipeline's judge reads, the narrative less the
   sentences left out, whatever the gate found: its findings count in step 3's prose drift,
   and a judge that fails on a summary the gate passed makes it an ``error`` (the pipeline
   publishes no unjudged narrative).
2. **looks at what recall would serve**, for every subject of the tenant (not a sample: the
   check reads the clock, the alias, the served artifact and the ids of the subject's
   invalid inputs, and walks the artifact's lineage only when those ids reach it). Recall serves the alias's artifact when it is ``published`` and the alias's
   ``source_epoch`` equals the clock's ``input_epoch`` (:mod:`lossgate.recall.read`; invariant
   2). Such a served artifact is **stale and visible** when it was built at another epoch
   than the clock's (its manifest's ``input_epoch``), or when it derives, directly or
   through other artifacts, from an event no longer valid or a fact no longer active (the
   lineage that :func:`lossgate.lineage.propagation.invalidate` follows). An alias that points at an
   artifact recall does not serve (``raw_fallback``: stale, awaiting its rebuild) is
   counted, and is no failure.
3. **measures**, per tenant, per predicate registry (schema) version and overall (from
   counts, never by averaging rates; rebuilt under several versions, a tenant's figures add
   up the rebuilds under each):

   ======================== ================================================================
   metric                   what it counts
   ======================== ================================================================
   key_fact_recall          must-preserve facts (:mod:`lossgate.gate.preserve`) that the
                            rebuilt artifact carries with their predicate, typed value and
                            polarity, over all must-preserve facts
   erroneous_new_fact_rate  claims with no active fact behind them (unknown, superseded,
                            deleted or revoked), or naming another tenant, subject or
                            predicate, or stating another typed value or polarity, over all
                            claims. Qualifiers and provenance are the gate's to judge
                            (``qualifiers_changed``, ``provenance_missing``): they show in
                            the failure rate
   conflict_retention       unresolved conflicts the artifact carries (same id, same two
                            facts), over all unresolved conflicts
   token_reduction          ``1 - summary / source`` tokens, the source being the fact and
                            event lines the compressor read (:mod:`lossgate.model.wording`), the
                            summary what the pipeline would publish (sentences left out,
                            markers written), summed over subjects
   outcome_*, failure_rate  the gate's outcomes (``clean``, ``acceptable``, ``failed``) and
                            ``error`` (the compressor failed, timed out or wrote output that
                            does not parse); failure rate: failed and error over rebuilt
   stale_visible            served artifacts that are stale (step 2); ``raw_fallback``: the
                            aliases recall does not serve
   prose_drift_rate         rebuilt summaries (``summaries_read``: those that parsed) whose
                            compressor's own prose drifts from the ledger
                            (``summaries_drifted``), over ``summaries_read``. Drift is read
                            in what the compressor wrote, before lossgate leaves anything
                            out or marks anything: a narrative sentence the fence refuses
                            (``narrative_refused``: sentences with a ``narrative_unsupported``
                            violation, left out or not), one the prose diff refuses for
                            what it says (``narrative_unproven``: a number, date, amount,
                            identifier or negation no source supports; left out under the
                            ``omit`` policy, as the pipeline does), a finding of the judge
                            (``judge_findings``), or a line that restates a superseded or
                            revoked value without lossgate's marker (``superseded_unmarked``:
                            :func:`~lossgate.gate.superseded.check_markers` on the raw line;
                            what a line quotes of a valid event verbatim, its whole text or
                            one of its lines of three words or more, is the conversation's
                            word, which lossgate marks, and is not read)
   shadow_refusal_rate      shadow summaries (``shadow_summaries``: subjects whose shadow
                            alias, :mod:`lossgate.policy.rollout`, holds one) the gate refused
                            (``shadow_refused``: published there by the exploratory gate,
                            with ``shadow_violations`` recorded), over shadow summaries;
                            informative, never blocking: recall never serves the shadow alias
   narrative_omission_rate  narrative sentences the narrative rule leaves out
                            (``narrative_omitted``) over the compressor's own narrative
                            sentences (``narrative_sentences``); informative, never blocking:
                            a faithful sentence on a ledger-only topic is left out too
   ======================== ================================================================

   Why a rate of its own, and not folded into the erroneous-new-fact rate: that rate is
   claims over claims, structured and checked field by field, and stays comparable with
   the days stored before; prose has no claim to count against, and a model that writes
   "the user can eat peanuts now" into every summary while its claims are all right must
   show (its sentence never reaches recall, but the model under test is wrong). The unit is
   the summary, not the sentence, because a sentence the fence refuses may also restate a
   superseded value (counted twice as sentences and lines, once as a summary), and so that a
   threshold above 0 reads as a share of summaries. Sentences left out are not drift: the
   rule leaves out a faithful restatement of an allergy too.

4. **blocks**: an erroneous-new-fact rate above 0, any stale artifact visible to recall, or
   a prose-drift rate above ``max_prose_drift_rate`` (0 by default: any drifting summary)
   makes :attr:`DailyReport.blocked` true whatever the averages say (the CLI exits 1).
5. **stores** every count and rate as :class:`~lossgate.model.derived_records.DailyMetric` rows, all
   tenants in one write transaction (unless ``store_results`` is false), so that :func:`trend` reads
   a history back. The tenants are named because a store is read one tenant at a time
   (PostgreSQL's row-level security): there is no listing of every tenant.
"""

from __future__ import annotations

import json
import math
import random
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import date, datetime
from typing import Any

from pydantic import ValidationError

from lossgate import gate
from lossgate.consolidate.compressor import CompressionError, CompressionRequest, Compressor
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.consolidate.narrative_policy import narrative_policy
from lossgate.consolidate.selection import Selection, select
from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.errors import InvalidInput
from lossgate.gate.fence import check_fence, narrative_sentences
from lossgate.gate.narrative import Omitted, speak_for_ledger, touching_violations, without_unproven
from lossgate.gate.outcome import GateResult, Violation, make_result
from lossgate.gate.preserve import MustPreserve, build_must_preserve
from lossgate.gate.prose import structured_lines
from lossgate.gate.superseded import Retired, check_markers, mark, retired_values, strip_markers
from lossgate.gate.typed import typed_value
from lossgate.judge import JudgeError, ModelJudge, judge_violations
from lossgate.model.derived_records import DailyMetric
from lossgate.model.limits import MAX_ID_CHARS, text_problem
from lossgate.model.records import ArtifactBody, Claim, EventState, Fact, FactStatus, Snapshot, utcnow
from lossgate.model.registry import Registry
from lossgate.model.wording import event_line, fact_line, one_line
from lossgate.runtime.caches import epoch_seen
from lossgate.runtime.deadline import Overdue, call_with_deadline
from lossgate.store import Store
from lossgate.store.protocol import ReadTx

__all__ = ["Tally", "Finding", "DailyReport", "DayFigures", "run_daily", "trend", "RATES"]

_INVALID_EVENTS: tuple[EventState, ...] = ("revoked", "deleted")
_INVALID_FACTS: tuple[FactStatus, ...] = ("superseded", "deleted", "revoked")
# What the stale check counts: per tenant only (it rebuilds nothing, under no registry version).
_PER_TENANT = (
    "subjects_checked",
    "stale_visible",
    "raw_fallback",
    "shadow_summaries",
    "shadow_refused",
    "shadow_violations",
)


@dataclass
class Tally:
    """The counts of one group (a tenant, a tenant's registry version, or all of them)."""

    subjects: int = 0  # rebuilt
    key_facts: int = 0
    key_facts_kept: int = 0
    claims: int = 0
    erroneous_claims: int = 0
    conflicts: int = 0
    conflicts_kept: int = 0
    source_tokens: int = 0
    summary_tokens: int = 0
    outcome_clean: int = 0
    outcome_acceptable: int = 0
    outcome_failed: int = 0
    outcome_error: int = 0
    summaries_read: int = 0  # rebuilt and parsed: what the compressor's prose is read in
    summaries_drifted: int = 0  # with at least one of the next three
    narrative_refused: int = 0  # the compressor's own sentences the fence refuses
    narrative_unproven: int = 0  # ... the prose diff refuses for what they say (left out under omit)
    judge_findings: int = 0
    superseded_unmarked: int = 0  # lines restating a retired value without lossgate's marker
    narrative_sentences: int = 0  # the compressor's own narrative sentences
    narrative_omitted: int = 0  # of them, left out by the narrative rule
    subjects_checked: int = 0  # looked at for stale artifacts visible to recall
    stale_visible: int = 0
    raw_fallback: int = 0
    shadow_summaries: int = 0  # subjects whose shadow alias holds a summary (never served)
    shadow_refused: int = 0  # of them, summaries the gate refused (published by the exploratory gate)
    shadow_violations: int = 0  # the violations recorded on those

    def add(self, other: Tally) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def rates(self) -> dict[str, float | None]:
        """Each rate, ``None`` where nothing was there to count."""

        def share(part: int, whole: int) -> float | None:
            return part / whole if whole else None

        reduction = 1 - self.summary_tokens / self.source_tokens if self.source_tokens else None
        return {
            "key_fact_recall": share(self.key_facts_kept, self.key_facts),
            "erroneous_new_fact_rate": share(self.erroneous_claims, self.claims),
            "conflict_retention": share(self.conflicts_kept, self.conflicts),
            "token_reduction": reduction,
            "failure_rate": share(self.outcome_failed + self.outcome_error, self.subjects),
            "prose_drift_rate": share(self.summaries_drifted, self.summaries_read),
            "shadow_refusal_rate": share(self.shadow_refused, self.shadow_summaries),
            "narrative_omission_rate": share(self.narrative_omitted, self.narrative_sentences),
        }

    def counts(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self) -> dict[str, Any]:
        return {**self.counts(), **self.rates()}

    @classmethod
    def from_metrics(cls, values: dict[str, float]) -> Tally:
        """The tally whose counts are among ``values`` (stored metrics), zero for the rest."""
        return cls(**{f.name: int(values.get(f.name, 0)) for f in fields(cls)})


RATES = tuple(Tally().rates())


@dataclass(frozen=True)
class Finding:
    """Something a person should look at: ``kind`` is ``erroneous_claim``, ``prose_drift``,
    ``stale_visible`` or ``error``; ``detail`` names ids and codes, never memory's text."""

    kind: str
    tenant_id: str
    subject_id: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "tenant_id": self.tenant_id, "subject_id": self.subject_id, "detail": self.detail}


@dataclass
class DailyReport:
    """One run: its figures per tenant (``tenants[t]``), per tenant and registry version
    (``versions[t][v]``) and overall, what to look at, and whether it blocks."""

    run_id: str
    day: date
    recorded_at: datetime
    seed: str
    sample: int
    compressor: str
    registry_versions: tuple[int, ...]
    max_prose_drift_rate: float = 0.0
    tenants: dict[str, Tally] = field(default_factory=dict)
    versions: dict[str, dict[int, Tally]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    stored: bool = False

    @property
    def overall(self) -> Tally:
        return _total(self.tenants.values())

    @property
    def blocking(self) -> list[str]:
        """Why this run blocks (empty: it does not): the rules hold whatever the averages."""
        why = []
        for tenant, t in self.tenants.items():
            if t.erroneous_claims:
                why.append(f"{tenant}: erroneous-new-fact rate {t.erroneous_claims}/{t.claims} claims is above 0")
            drift = t.rates()["prose_drift_rate"]
            if drift is not None and drift > self.max_prose_drift_rate:
                why.append(
                    f"{tenant}: prose-drift rate {t.summaries_drifted}/{t.summaries_read} summaries is above "
                    f"{self.max_prose_drift_rate:g} ({t.narrative_refused} sentence(s) the fence refuses, "
                    f"{t.narrative_unproven} the prose diff refuses, {t.judge_findings} judge finding(s), "
                    f"{t.superseded_unmarked} line(s) restating a superseded value unmarked)"
                )
            if t.stale_visible:
                why.append(f"{tenant}: {t.stale_visible} stale artifact(s) visible to recall")
        return why

    @property
    def blocked(self) -> bool:
        return bool(self.blocking)

    def metrics(self) -> list[DailyMetric]:
        """The rows to store: every count and every defined rate of each tenant (dimension
        ``{}``) and of each of its registry versions (``{"registry_version": v}``; the
        rebuild's figures only: the stale check is per tenant)."""
        rows = []
        for tenant, tally in self.tenants.items():
            groups: list[tuple[dict[str, str | int], Tally]] = [({}, tally)]
            groups += [({"registry_version": v}, t) for v, t in sorted(self.versions.get(tenant, {}).items())]
            for dimension, t in groups:
                values: dict[str, float | None] = {**t.counts(), **t.rates()}
                if dimension:
                    for name in _PER_TENANT:
                        values.pop(name)
                rows += [
                    DailyMetric(
                        tenant_id=tenant,
                        run_id=self.run_id,
                        day=self.day,
                        metric=name,
                        dimension=dimension,
                        value=value,
                        recorded_at=self.recorded_at,
                    )
                    for name, value in values.items()
                    if value is not None
                ]
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "day": self.day.isoformat(),
            "recorded_at": self.recorded_at.isoformat(),
            "seed": self.seed,
            "sample": self.sample,
            "compressor": self.compressor,
            "registry_versions": list(self.registry_versions),
            "stored": self.stored,
            "max_prose_drift_rate": self.max_prose_drift_rate,
            "blocked": self.blocked,
            "blocking": self.blocking,
            "overall": self.overall.to_json(),
            "tenants": {
                t: {
                    **tally.to_json(),
                    "by_registry_version": {
                        str(v): {k: x for k, x in vt.to_json().items() if k not in _PER_TENANT}
                        for v, vt in sorted(self.versions.get(t, {}).items())
                    },
                }
                for t, tally in self.tenants.items()
            },
            "findings": [f.to_json() for f in self.findings],
        }


# -- the run ------------------------------------------------------------------------------


def run_daily(
    store: Store,
    tenants: Sequence[str],
    *,
    day: date | None = None,
    sample: int = 50,
    seed: str | None = None,
    compressor: Compressor | None = None,
    registry_versions: Sequence[int] | None = None,
    budget_tokens: int | None = 2000,
    timeout_s: float = 60.0,
    store_results: bool = True,
    counter: TokenCounter | None = None,
    progress: Callable[[int, int], None] | None = None,
    judge: ModelJudge | None = None,
    max_prose_drift_rate: float = 0.0,
) -> DailyReport:
    """Measure the named tenants (see the module). ``registry_versions``: rebuild under these
    stored predicate registry versions (default: the newest). ``progress(done, total)`` is
    called after each subject rebuilt. ``judge``: a model judge that also reads each rebuilt
    summary's narrative (its findings count as prose drift). ``max_prose_drift_rate``: the
    share of rebuilt summaries a tenant's prose may drift in before the run blocks (0: any).
    Raises :class:`~lossgate.errors.InvalidInput` for bad arguments (no tenant, a sample
    below 1, a threshold outside 0 to 1, a registry version never stored, no registry at
    all) before anything is read or written; with ``store_results`` the figures are stored
    in one write transaction at the end (all tenants or none)."""
    names = list(dict.fromkeys(tenants))
    if not names:
        raise InvalidInput("name at least one tenant: a store is read one tenant at a time")
    for name in names:
        if not isinstance(name, str) or not _TENANT.fullmatch(name) or text_problem(name) is not None:
            raise InvalidInput(f"tenant {name!r} is not a tenant id (1 to {MAX_ID_CHARS} characters, no whitespace)")
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, (int, float))
        or not math.isfinite(timeout_s)
        or timeout_s <= 0
    ):
        raise InvalidInput(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
    if budget_tokens is not None and not isinstance(budget_tokens, int):
        raise InvalidInput(f"budget_tokens must be a whole number, not {budget_tokens!r}")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise InvalidInput(f"sample must be a whole number of subjects, at least 1, not {sample!r}")
    if budget_tokens is not None and (isinstance(budget_tokens, bool) or budget_tokens < 1):
        raise InvalidInput(f"budget_tokens must be at least 1, not {budget_tokens!r}")
    if (
        isinstance(max_prose_drift_rate, bool)
        or not isinstance(max_prose_drift_rate, (int, float))
        or not 0 <= max_prose_drift_rate <= 1
    ):
        raise InvalidInput(f"max_prose_drift_rate must be a share from 0 to 1, not {max_prose_drift_rate!r}")
    chosen = compressor or DeterministicCompressor()
    day = day or utcnow().date()
    seed = day.isoformat() if seed is None else seed
    count = counter or default_counter()
    with store.read() as tx:
        registries = _registries(tx, registry_versions)
        plan = {t: _sample(tx.subjects(t), sample, seed, t) for t in names}
    report = DailyReport(
        run_id=f"daily-{uuid.uuid4().hex[:16]}",
        day=day,
        recorded_at=utcnow(),
        seed=seed,
        sample=sample,
        compressor=f"{chosen.name}@{chosen.version}",
        registry_versions=tuple(r.version for r in registries),
        max_prose_drift_rate=float(max_prose_drift_rate),
    )
    total, done = sum(len(s) for s in plan.values()) * len(registries), 0
    for tenant in names:
        tally = report.tenants.setdefault(tenant, Tally())
        _check_served(store, tenant, tally, report.findings)
        by_version = report.versions.setdefault(tenant, {})
        for registry in registries:
            group = by_version.setdefault(registry.version, Tally())
            for subject in plan[tenant]:
                _rebuild(
                    store,
                    registry,
                    tenant,
                    subject,
                    chosen,
                    budget_tokens,
                    timeout_s,
                    count,
                    group,
                    report.findings,
                    judge,
                )
                done += 1
                if progress:
                    progress(done, total)
            tally.add(group)
    if store_results:
        rows = report.metrics()
        with store.write() as wtx:
            for tenant in names:
                wtx.save_daily_metrics(tenant, [r for r in rows if r.tenant_id == tenant])
        report.stored = True
    return report


def _total(tallies: Iterable[Tally]) -> Tally:
    """The tallies added up (every figure is a count, so the sum's rates are the overall ones)."""
    total = Tally()
    for tally in tallies:
        total.add(tally)
    return total


_QUOTE_WORDS = 3  # a shorter "quote" ("Europe/Paris") is as likely the model's own words
_TENANT = re.compile(rf"[^\s\x00]{{1,{MAX_ID_CHARS}}}")


def _registries(tx: ReadTx, versions: Sequence[int] | None) -> list[Registry]:
    newest = tx.latest_registry_version()
    if newest is None:
        raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
    out = []
    for version in dict.fromkeys(versions or [newest]):
        document = tx.registry_document(version)
        if document is None:
            raise InvalidInput(f"registry version {version} was never stored (the newest is {newest})")
        out.append(Registry.model_validate(document))
    return out


def _sample(subjects: list[str], n: int, seed: str, tenant: str) -> list[str]:
    """``n`` of the tenant's subjects (all when it has fewer), the same for the same seed and
    subjects in any process, in bytewise order."""
    if len(subjects) <= n:
        return list(subjects)
    return sorted(random.Random(f"{seed}\0{tenant}").sample(sorted(subjects), n))


# -- what recall would serve ----------------------------------------------------------------


def _check_served(store: Store, tenant: str, tally: Tally, findings: list[Finding]) -> None:
    with store.read() as tx:
        for subject in tx.subjects(tenant):
            tally.subjects_checked += 1
            clock, alias, head = tx.recall_head(tenant, subject)
            _count_shadow(tx, tenant, subject, tally)
            if alias.artifact_id is None:
                continue
            # recall's freshness rule (lossgate/recall/read.py): what it would serve now
            served = head is not None and head.state == "published" and alias.source_epoch == clock.input_epoch
            if not served:
                tally.raw_fallback += 1
                continue
            why = _stale_because(tx, tenant, subject, alias.artifact_id, clock.input_epoch)
            if why:
                tally.stale_visible += 1
                findings.append(Finding("stale_visible", tenant, subject, f"{alias.artifact_id}: {why}"))


def _count_shadow(tx: ReadTx, tenant: str, subject: str, tally: Tally) -> None:
    """What the subject's shadow alias holds: a summary of the tenant's shadow lane, and,
    under the exploratory gate, the violations it was published with (informative: recall
    never serves it, so nothing here blocks)."""
    on_alias = tx.alias(tenant, subject, lane="shadow").artifact_id
    found = tx.artifact_gate(tenant, subject, on_alias) if on_alias is not None else None
    if on_alias is None or found is None:
        return
    tally.shadow_summaries += 1
    if found[1] == "failed":  # only then the whole artifact, for its violations (its manifest grows with history)
        art = tx.artifact(tenant, subject, on_alias)
        tally.shadow_refused += 1
        tally.shadow_violations += len(art.gate.get("violations", ())) if art else 0


def _stale_because(tx: ReadTx, tenant: str, subject: str, artifact_id: str, epoch: int) -> str | None:
    artifact = tx.artifact(tenant, subject, artifact_id)
    if artifact is None:
        return "the alias names an artifact that is not stored"
    if artifact.manifest.input_epoch != epoch:
        return f"built at input_epoch {artifact.manifest.input_epoch}, served at {epoch}"
    events = {e.event_id for e in tx.events(tenant, subject, states=_INVALID_EVENTS)}
    facts = {f.fact_id for f in tx.facts(tenant, subject, statuses=_INVALID_FACTS)}
    # descendants() matches ids of any kind (an event and a fact may share one): a cheap
    # first look, then the artifact's own lineage, kind by kind, only when it is suspect
    if not (events or facts) or artifact_id not in tx.descendants(tenant, subject, sorted(events | facts)):
        return None
    gone = _invalid_inputs(tx, tenant, subject, artifact_id, events, facts)
    return f"derived from inputs no longer valid ({', '.join(gone[:5])})" if gone else None


def _invalid_inputs(
    tx: ReadTx, tenant: str, subject: str, artifact_id: str, events: set[str], facts: set[str]
) -> list[str]:
    """The invalid events and facts ``artifact_id`` derives from, directly or through the
    artifacts it was built on (its parent, a root's parts), as ``kind:id``."""
    found: set[str] = set()
    todo, seen = [artifact_id], {artifact_id}
    while todo:
        current = todo.pop()
        art = tx.artifact(tenant, subject, current)
        # A hierarchy's part reads the retired facts of its period on purpose (so that their
        # values never come back): such an input is stale only if the part still claims it.
        claimed = {c.fact_id for c in art.body.claims} if art is not None and art.manifest.path == "part" else None
        for edge in tx.lineage(tenant, subject, current):
            if edge.input_kind == "artifact" and edge.input_id not in seen:
                seen.add(edge.input_id)
                todo.append(edge.input_id)
            elif (edge.input_kind == "event" and edge.input_id in events) or (
                edge.input_kind == "fact" and edge.input_id in facts and (claimed is None or edge.input_id in claimed)
            ):
                found.add(f"{edge.input_kind} {edge.input_id}")
    return sorted(found)


# -- one subject rebuilt ------------------------------------------------------------------


def _rebuild(
    store: Store,
    registry: Registry,
    tenant: str,
    subject: str,
    compressor: Compressor,
    budget: int | None,
    timeout_s: float,
    count: TokenCounter,
    tally: Tally,
    findings: list[Finding],
    judge: ModelJudge | None = None,
) -> None:
    with store.read() as tx:
        sel = select(tx, tenant, subject, registry, incremental=False)
        policy = narrative_policy(tx, tenant)
    epoch_seen(tenant, subject, sel.snapshot.clock.input_epoch)  # the gate caches text: see lossgate.runtime.caches
    if sel.snapshot.clock.high_water == 0:
        return
    unknown = sorted({f.predicate for f in sel.facts if f.predicate not in registry.predicates})
    if unknown:  # facts of a predicate this (older) version does not define: not rebuilt under it
        tally.outcome_error += 1
        findings.append(
            Finding(
                "error",
                tenant,
                subject,
                f"registry v{registry.version} does not define {', '.join(unknown[:3])}: not rebuilt under it",
            )
        )
        return
    must = build_must_preserve(sel.snapshot, registry)
    request = CompressionRequest(
        tenant_id=tenant,
        subject_id=subject,
        facts=sel.facts,
        predicates={f.predicate: registry.get(f.predicate) for f in sel.facts},
        conflicts=sel.snapshot.conflicts,
        events=sel.events,
        budget_tokens=budget,
        outdated_event_ids=sel.outdated_event_ids,
        withdrawn_event_ids=sel.withdrawn_event_ids,
        must_keep=frozenset(f for f in must.fact_ids() if must.loss_severity(f) == "critical"),
    )
    tally.subjects += 1
    raw, error = _generate(compressor, request, timeout_s)
    if raw is None:
        tally.outcome_error += 1
        findings.append(Finding("error", tenant, subject, f"registry v{registry.version}: {error}"))
        return
    # As the pipeline builds what it would publish (lossgate.consolidate.pipeline._build): the
    # compressor's markers dropped, the sentences on a ledger-only topic left out (or refusing
    # the summary), lossgate's markers written, then the gate.
    retired = retired_values(sel.snapshot.facts, sel.snapshot.conflicts)  # the direct path's snapshot holds every fact
    bare = raw.model_copy(update={"summary": strip_markers(raw.summary)})
    spoken, omitted = speak_for_ledger(sel.snapshot, bare, must, registry)
    refuse = bool(omitted) and policy == "refuse"
    body = bare if refuse else spoken
    body = body.model_copy(update={"summary": mark(body.summary, retired, structured_lines(body))})
    result = gate.check(sel.snapshot, body, registry, must=must, retired=retired)
    if refuse:
        result = make_result([*result.violations, *result.losses, *touching_violations(omitted)], must)
    unproven: tuple[Omitted, ...] = ()
    if not result.passed and policy == "omit":  # a sentence refused for what it says is left out
        pruned = without_unproven(sel.snapshot, body, result.violations, retired=retired)
        again = None if pruned is None else gate.check(sel.snapshot, pruned[0], registry, must=must, retired=retired)
        if pruned is not None and again is not None and again.passed:
            body, result, unproven, spoken = pruned[0], again, pruned[1], pruned[0]
    outcome: str = result.outcome
    drift = _drift(sel.snapshot, raw, bare, spoken, omitted, result, must, registry, retired, judge)
    drift.unproven = sum(not any(v.detail.endswith(f": {o.sentence[:300]!r}") for v in drift.refused) for o in unproven)
    if drift.judge_error is not None:
        if result.passed:  # the pipeline publishes no unjudged narrative
            outcome = "error"
        findings.append(Finding("error", tenant, subject, f"registry v{registry.version}: {drift.judge_error}"))
    setattr(tally, f"outcome_{outcome}", getattr(tally, f"outcome_{outcome}") + 1)
    drift.count(tally)
    if drift.drifted:
        findings.append(Finding("prose_drift", tenant, subject, f"registry v{registry.version}: {drift.detail()}"))
    _measure(sel, body, must, count, tally, findings, registry.version)


@dataclass
class _Drift:
    """What one rebuilt summary's own prose says against the ledger (see the module)."""

    sentences: int = 0
    omitted: int = 0
    refused: list[Violation] = field(default_factory=list)  # one per sentence (its first topic)
    unproven: int = 0  # sentences left out for what the prose diff refuses in them
    judged: list[Violation] = field(default_factory=list)
    unmarked: list[Violation] = field(default_factory=list)  # one per line (its first value)
    judge_error: str | None = None

    @property
    def drifted(self) -> bool:
        return bool(self.refused or self.unproven or self.judged or self.unmarked)

    def count(self, tally: Tally) -> None:
        tally.summaries_read += 1
        tally.summaries_drifted += int(self.drifted)
        tally.narrative_refused += len(self.refused)
        tally.narrative_unproven += self.unproven
        tally.judge_findings += len(self.judged)
        tally.superseded_unmarked += len(self.unmarked)
        tally.narrative_sentences += self.sentences
        tally.narrative_omitted += self.omitted

    def detail(self) -> str:
        """Counts, codes and ids: never the sentences themselves."""

        def ids(found: list[Violation]) -> str:
            return f" ({', '.join(sorted({f'{v.code} {v.subject}' for v in found})[:5])})" if found else ""

        return (
            f"{len(self.refused)} sentence(s) the fence refuses{ids(self.refused)}, "
            f"{self.unproven} the prose diff refuses, "
            f"{len(self.judged)} judge finding(s){ids(self.judged)}, "
            f"{len(self.unmarked)} line(s) restating a superseded value unmarked{ids(self.unmarked)}; "
            f"{self.omitted} of {self.sentences} narrative sentence(s) left out"
        )


def _drift(
    snapshot: Snapshot,
    raw: ArtifactBody,
    bare: ArtifactBody,
    spoken: ArtifactBody,
    omitted: tuple[Omitted, ...],
    result: GateResult,
    must: MustPreserve,
    registry: Registry,
    retired: tuple[Retired, ...],
    judge: ModelJudge | None,
) -> _Drift:
    """The compressor's own prose read before lossgate left anything out or marked anything:
    ``raw`` as it wrote it, ``bare`` without its markers (what the narrative rule and the
    fence read). The judge reads what the pipeline lets it read: ``spoken``, the narrative
    less the sentences left out (whatever the gate found: a drift count is wanted of each)."""
    own = narrative_sentences(snapshot, bare)
    drift = _Drift(sentences=len(own), omitted=len(omitted))
    if omitted:  # the gate read the summary without them: the fence reads what the model wrote
        refusals = check_fence(snapshot, bare, must, registry)
    else:
        refusals = [v for v in result.violations if v.code == "narrative_unsupported"]
    for sentence, _ in dict.fromkeys(own):  # each refused sentence once, whatever its topics
        quoted = f": {sentence[:300]!r}"
        hit = next((v for v in refusals if v.detail.endswith(quoted)), None)
        if hit is not None:
            drift.refused.append(hit)
    drift.unmarked = _unmarked(snapshot, raw, retired)
    told = narrative_sentences(snapshot, spoken) if omitted else own
    if judge is not None and told:
        try:
            drift.judged = _judged(snapshot, "\n".join(sentence for sentence, _ in told), judge)
        except Exception as exc:  # noqa: BLE001 - a judge is foreign code: its failure is an error outcome
            drift.judge_error = (
                f"JudgeError: {exc}" if isinstance(exc, JudgeError) else f"judge error: {type(exc).__name__}"
            )[:2000]
    return drift


def _judged(snapshot: Snapshot, narrative: str, judge: ModelJudge) -> list[Violation]:
    """The judge's findings on ``narrative``, as the pipeline asks it (one deadline for the
    whole exchange)."""
    facts = [
        {
            "fact_id": f.fact_id,
            "predicate": f.predicate,
            "value": f.value,
            "polarity": f.polarity,
            "modality": f.modality,
            "authority": f.authority,
            "qualifiers": dict(f.qualifiers),
        }
        for f in snapshot.facts
        if f.status == "active"
    ]
    try:
        statements = call_with_deadline(
            judge.statements,
            snapshot.subject_id,
            facts,
            narrative,
            timeout_s=judge.config.timeout_s,
            name="lossgate-daily-judge",
        )
    except Overdue:
        raise JudgeError(f"timeout: the judge did not answer within {judge.config.timeout_s:g}s") from None
    return judge_violations(statements, snapshot)


def _unmarked(snapshot: Snapshot, raw: ArtifactBody, retired: tuple[Retired, ...]) -> list[Violation]:
    """``superseded_unmarked`` for each line of the compressor's raw summary (its markers as it
    wrote them) that restates a retired value without lossgate's marker, one per line. What a
    line quotes of a valid event verbatim (its whole text, or one of its lines, of three words
    or more) is left out of the reading: the old value there is the conversation's word,
    which lossgate marks (lossgate.gate.superseded)."""
    if not retired:
        return []
    own = structured_lines(raw)
    quotes = sorted(
        {
            q
            for e in snapshot.events
            if e.state == "valid" and e.text
            for q in (one_line(e.text), *(one_line(ln) for ln in e.text.splitlines()))
            if len(q.split()) >= _QUOTE_WORDS
        },
        key=len,
        reverse=True,
    )
    out = []
    for line in raw.summary.split("\n"):
        if not line.strip() or line in own:
            continue
        for q in quotes:
            if q in line:
                line = re.sub(rf"(?<!\w){re.escape(q)}(?!\w)", " ", line)
        found = [v for v in check_markers(line, retired, own) if v.code == "superseded_unmarked"]
        if found:
            out.append(found[0])
    return out


def _generate(compressor: Compressor, request: CompressionRequest, timeout_s: float) -> tuple[ArtifactBody | None, str]:
    """The compressor's parsed output, or ``None`` and why (one line, no output quoted)."""
    try:
        raw = call_with_deadline(compressor.compress, request, timeout_s=timeout_s, name="lossgate-daily")
        data = json.loads(raw) if isinstance(raw, str) else raw
        return ArtifactBody.model_validate(data), ""
    except Overdue:
        return None, f"timeout: the compressor did not answer within {timeout_s:g}s"
    except CompressionError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    except (json.JSONDecodeError, ValidationError) as exc:
        return None, f"invalid output: {type(exc).__name__}"
    except Exception as exc:  # noqa: BLE001 - a compressor is foreign code: any failure is an error outcome
        return None, f"compressor error: {type(exc).__name__}"


def _measure(
    sel: Selection,
    body: ArtifactBody,
    must: MustPreserve,
    count: TokenCounter,
    tally: Tally,
    findings: list[Finding],
    version: int,
) -> None:
    snap = sel.snapshot
    facts = {f.fact_id: f for f in snap.facts}
    claims = {c.fact_id: c for c in body.claims}
    for fact_id in must.fact_ids():
        tally.key_facts += 1
        kept = claims.get(fact_id)
        tally.key_facts_kept += int(kept is not None and _wrong(kept, facts[fact_id]) is None)
    for claim in body.claims:
        tally.claims += 1
        why = _wrong(claim, facts.get(claim.fact_id))
        if why is None:
            continue
        tally.erroneous_claims += 1
        findings.append(
            Finding(
                "erroneous_claim", snap.tenant_id, snap.subject_id, f"registry v{version}: claim {claim.fact_id}: {why}"
            )
        )
    carried = {c.conflict_id: frozenset(c.fact_ids) for c in body.unresolved_conflicts}
    for conflict in snap.conflicts:
        tally.conflicts += 1
        tally.conflicts_kept += int(carried.get(conflict.conflict_id) == frozenset(conflict.fact_ids))
    tally.source_tokens += sum(count(fact_line(f)) + 1 for f in sel.facts)
    tally.source_tokens += sum(count(event_line(e)) + 1 for e in sel.events if e.text)
    tally.summary_tokens += count(body.summary)


def _wrong(claim: Claim, fact: Fact | None) -> str | None:
    """What makes ``claim`` state something the ledger does not (``None``: it states ``fact``)."""
    if fact is None or fact.status != "active":
        return "no such fact" if fact is None else f"the fact is {fact.status}"
    if (claim.tenant_id, claim.subject_id, claim.predicate) != (fact.tenant_id, fact.subject_id, fact.predicate):
        return "another tenant, subject or predicate"
    if claim.polarity != fact.polarity:
        return "polarity changed"
    if not typed_value(claim.value_type, claim.value).matches(typed_value(fact.value_type, fact.value)):
        return "value changed" + (
            f" ({fact.value_type} became {claim.value_type})" if fact.value_type != claim.value_type else ""
        )
    return None


# -- the trend ------------------------------------------------------------------------------


@dataclass
class DayFigures:
    """One day of the trend: each tenant's last run of that day (by ``recorded_at``), and
    all of them summed."""

    day: date
    tenants: dict[str, Tally] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)  # tenant -> the run whose figures these are

    @property
    def overall(self) -> Tally:
        return _total(self.tenants.values())


def trend(
    store: Store, tenants: Sequence[str], *, since: date | None = None, until: date | None = None
) -> list[DayFigures]:
    """The stored daily figures of the named tenants, one :class:`DayFigures` per day that has
    any, oldest first. A tenant's figures of a day are its last run's (dimension ``{}``)."""
    days: dict[date, DayFigures] = {}
    with store.read() as tx:
        for tenant in dict.fromkeys(tenants):
            runs: dict[tuple[date, str], dict[str, float]] = {}  # stored oldest first: the last run wins
            for m in tx.daily_metrics(tenant, since=since, until=until):
                if not m.dimension:
                    runs.setdefault((m.day, m.run_id), {})[m.metric] = m.value
            for (day, run_id), values in runs.items():
                figures = days.setdefault(day, DayFigures(day))
                figures.tenants[tenant] = Tally.from_metrics(values)
                figures.runs[tenant] = run_id
    return [days[d] for d in sorted(days)]
