"""One consolidation job, end to end.

``prepare`` snapshots and selects (recording the attempt and its selected ids
*before* any generation), runs the compressor under a timeout, parses its raw
output, gates it and stores the artifact with its manifest and lineage.
``publish`` runs the switch. ``run`` does both. Each step commits on its own,
so a crash between them leaves a recorded attempt and at most an unpublished
candidate, which recall never returns; the next run recovers forward.

A failed gate publishes nothing, keeps the sources hot, keeps the attempt with
its violations and raw output, and queues a retry with exponential backoff; after
``max_attempts`` consecutive failures the subject is marked for review (the rules:
:mod:`lossgate.lineage.queue`).

Around those steps:

* a subject larger than one compressor request is consolidated by parts, each gated,
  under a root gated against the whole snapshot (:mod:`lossgate.consolidate.hierarchy`);
* every stored artifact is read back and compared with what was written before it may be
  published (:mod:`lossgate.publication.readback`);
* nothing is stored from a step that finds the subject's epoch moved since the job
  selected its inputs (the clock is locked in that step's transaction), and an attempt
  saved after a deletion purged it stays purged (:func:`lossgate.lineage.propagation.save_attempt`);
* a shadow consolidator stores its artifacts in the ``shadow`` state and never publishes;
  with the tenant's review on, a gated summary waits in ``review`` instead of going to
  the switch (:mod:`lossgate.policy.rollout`).
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from lossgate import gate
from lossgate.consolidate import hierarchy, tail
from lossgate.consolidate.compressor import CompressionError, CompressionRequest, Compressor
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.consolidate.hierarchy import MAX_TOKENS, HierarchyConfig, digest_lines
from lossgate.consolidate.narrative_policy import narrative_policy
from lossgate.consolidate.retired import retired_facts
from lossgate.consolidate.selection import SELECTOR_VERSION, Selection, input_root, select, select_delta, snapshot_at
from lossgate.consolidate.tokens import default_counter
from lossgate.errors import InvalidInput, LossgateError, NotFound, StoreError, crash_reason
from lossgate.gate.fence import narrative_sentences
from lossgate.gate.narrative import without_unproven
from lossgate.gate.outcome import make_result
from lossgate.gate.preserve import MustPreserve, build_must_preserve
from lossgate.gate.prose import dropped_labels, prose_inputs, prose_of, structured_lines
from lossgate.gate.publication import as_published
from lossgate.gate.sources import Extractions, events_holding
from lossgate.gate.superseded import check_markers, mark, retired_values, strip_markers
from lossgate.judge import JudgeError, ModelJudge, judge_violations
from lossgate.lineage import queue
from lossgate.lineage.propagation import purged_lines, save_attempt
from lossgate.model.canonical import content_hash
from lossgate.model.derived_records import Artifact, Attempt, InputRef, LineageEdge, Manifest, PartInfo
from lossgate.model.records import ArtifactBody, utcnow
from lossgate.model.registry import Registry, RegistryCache
from lossgate.model.trusted import trusted
from lossgate.model.values import stored_claims
from lossgate.model.wording import CONVERSATION_TITLE, conflict_line, event_line, fact_line, header_line, section_lines
from lossgate.policy import rollout
from lossgate.publication.readback import divergence, representation_loss, without_values
from lossgate.publication.switch import shadow_switch, switch
from lossgate.runtime.caches import epoch_seen
from lossgate.runtime.collection import collection_held
from lossgate.runtime.deadline import Escaped, Overdue, call_with_deadline
from lossgate.store import Store
from lossgate.store.protocol import WriteTx

__all__ = ["ConsolidationConfig", "Hooks", "Prepared", "Consolidator", "EXTRACTOR_VERSION"]

EXTRACTOR_VERSION = "atoms-v1"
log = logging.getLogger(__name__)
_EDGE_FIELDS = frozenset(LineageEdge.model_fields)
# The traceback of each failure :meth:`Consolidator.crashed` records: for the log of a worker
# or a service; a one-shot command reports the attempt's one line instead (lossgate.cli).
crashes = logging.getLogger("lossgate.crashes")


@dataclass(frozen=True)
class ConsolidationConfig:
    """Knobs of a consolidation job."""

    budget_tokens: int | None = 2000
    timeout_s: float = 60.0
    incremental: bool = True
    max_attempts: int = 5
    backoff_base_s: float = 30.0
    backoff_max_s: float = 3600.0
    hierarchy: HierarchyConfig = field(default_factory=HierarchyConfig)
    # Whether a hierarchy reuses stored parts whose inputs are unchanged (a recovery builds
    # every part again: lossgate.policy.quarantine).
    reuse_parts: bool = True

    def __post_init__(self) -> None:
        def number(name: str, value: Any, low: float, *, integer: bool = False, high: float = math.inf) -> None:
            kinds = (int,) if integer else (int, float)
            if (
                isinstance(value, bool)
                or not isinstance(value, kinds)
                or not math.isfinite(value)
                or not low <= value <= high
            ):
                bounds = f"from {low:g} to {int(high):,}" if math.isfinite(high) else f"of at least {low:g}"
                raise InvalidInput(
                    f"consolidation {name} must be {'an integer' if integer else 'a number'} {bounds}, not {value!r}"
                )

        if self.budget_tokens is not None:
            number("budget_tokens", self.budget_tokens, 1, integer=True, high=MAX_TOKENS)
        number("timeout_s", self.timeout_s, 0.001)
        number("max_attempts", self.max_attempts, 1, integer=True)
        number("backoff_base_s", self.backoff_base_s, 0)
        number("backoff_max_s", self.backoff_max_s, 0)
        if not isinstance(self.hierarchy, HierarchyConfig):
            raise InvalidInput(f"consolidation hierarchy must be a HierarchyConfig, not {self.hierarchy!r}")


@dataclass
class Hooks:
    """Test seams between the steps (crash, revoke or race at the worst moment)."""

    before_compress: Callable[[Selection], None] | None = None
    before_switch: Callable[[Artifact], None] | None = None


@dataclass
class Prepared:
    """The outcome of :meth:`Consolidator.prepare`: an attempt and, if one was built, an artifact."""

    attempt: Attempt
    artifact: Artifact | None = None
    gate_result: gate.GateResult | None = None
    selection: Selection | None = field(default=None, repr=False)


def _must_keep(must: MustPreserve) -> frozenset[str]:
    """What the gate will refuse to lose, so the compressor never chooses to drop it."""
    return frozenset(fid for fid in must.fact_ids() if must.loss_severity(fid) == "critical")


def _moved(tx: WriteTx, attempt: Attempt) -> tuple[str | None, bool]:
    """Whether the subject's epoch moved since ``attempt`` selected its inputs (why, or
    None), and whether one of those inputs was deleted meanwhile. The clock is locked:
    a change committing now waits, so it finds whatever this transaction stores."""
    t, s = attempt.tenant_id, attempt.subject_id
    epoch = tx.lock_clock(t, s).input_epoch
    if epoch == attempt.input_epoch:
        return None, False
    ids = list(attempt.selected_ids)
    erased = any(e.state == "deleted" for e in tx.events(t, s, ids=ids)) or any(
        f.status == "deleted" for f in tx.facts(t, s, ids=ids)
    )
    return f"input_epoch moved from {attempt.input_epoch} to {epoch} while this ran", erased


def _withdrawn(attempt: Attempt, reason: str, erased: bool) -> Attempt:
    """The attempt of a job whose inputs changed before its artifact was stored: nothing is
    stored (a change's invalidation has already run, and would not reach it), the change
    queued its own rebuild, and what may quote deleted content goes."""
    update: dict[str, Any] = {"status": "conflict", "reason": reason, "artifact_id": None, "finished_at": utcnow()}
    if erased:
        update.update(
            raw_output=None,
            details=(),
            violations=purged_lines(attempt.violations),
            losses=purged_lines(attempt.losses),
        )
    return attempt.model_copy(update=update)


def _parent_quotes(sel: Selection) -> frozenset[str]:
    """The lines of the parent's conversation: quotes of events, whether or not a bounded
    snapshot holds them."""
    if sel.parent is None:
        return frozenset()
    return frozenset(section_lines(strip_markers(sel.parent.body.summary), CONVERSATION_TITLE))


def _root_dropped(
    sel: Selection, children: list[Artifact], result: gate.GateResult, read: str, seen: Extractions | None
) -> tuple[str, ...]:
    """What a hierarchical root records as dropped: the events of the parts it brings
    (``children``) that hold an atom its own gate found lost, counting only the parts whose
    digest is in ``read`` (the summary its gate read: the digests outside its window, or a
    parent's carried ones, are not judged again here), and every such part's own. The parts
    it carries from a root it extends keep theirs: recall reads them there."""
    out = {e for c in children for e in c.manifest.dropped}
    labels = dropped_labels(result.losses)
    if labels:
        lines = {strip_markers(line) for line in read.split("\n")}
        inlined = {
            r.id
            for c in children
            if c.manifest.part is not None and digest_lines(c)[0] in lines
            for r in c.manifest.inputs[: c.manifest.part.events]
        }
        out.update(events_holding([e for e in sel.snapshot.events if e.event_id in inlined], labels, seen=seen))
    return tuple(sorted(out))


def _carried_lines(sel: Selection, body: ArtifactBody) -> set[str] | None:
    """The lines of ``body``'s prose (:func:`~lossgate.gate.prose.prose_of`: its structured
    lines blanked) that are lines of the parent's conversation, if every other line is a
    title or quotes an event of the selection; else None."""
    parent = sel.parent
    if parent is None:
        return None
    said = _parent_quotes(sel)
    quoted = {event_line(e) for e in sel.events}
    carried: set[str] = set()
    for line in prose_of(body).split("\n"):
        if not line.strip() or line == CONVERSATION_TITLE or line in quoted:
            continue
        if line not in said:
            return None
        carried.add(line)
    return carried


# What a compressor may write: twice what it was given, plus this much (facts, titles, a narrative).
OUTPUT_SLACK_CHARS = 4 * 1024 * 1024


def _most_output(request: CompressionRequest) -> int:
    """The most characters a compressor's raw output may hold for ``request``."""
    given = sum(len(e.text or "") + len(e.actor or "") for e in request.events)
    given += sum(len(str(f.value)) + 256 for f in request.facts)  # a fact line: its value, predicate, qualifiers
    if request.parent is not None:
        given += len(request.parent.summary)
    return 2 * given + OUTPUT_SLACK_CHARS


def _foreign(fn: Callable[[str], int]) -> Callable[[str], int]:
    """``fn`` (a compressor's own token counter, foreign code called in this thread) with a
    ``SystemExit`` or ``KeyboardInterrupt`` it raises handed on as :class:`Escaped`, an
    ordinary error that fails the attempt instead of stopping the process."""

    def call(text: str) -> int:
        try:
            return fn(text)
        except Exception:
            raise
        except BaseException as exc:
            raise Escaped(exc) from exc

    return call


def _counted_once(count: Callable[[str], int]) -> Callable[[str], int]:
    """``count`` remembering what it counted, for one job: a hierarchy counts each event's
    line to cut its parts, then again to budget its part's digest."""
    counted: dict[str, int] = {}

    def call(text: str) -> int:
        tokens = counted.get(text)
        if tokens is None:
            tokens = counted[text] = count(text)
        return tokens

    return call


def _add(timings: dict[str, float], key: str, seconds: float) -> None:
    timings[key] = timings.get(key, 0.0) + seconds


def _unstorable(value: Any) -> str | None:
    """What in ``value`` (strings, at any depth) no store can keep, or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "NUL (U+0000)"
        try:
            value.encode("utf-8")
        except UnicodeError:
            return "an unpaired surrogate"
        return None
    items = value.items() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    for item in items:
        found = _unstorable(item)
        if found:
            return found
    return None


def _storable(text: str | None) -> str | None:
    """``text`` as every store can keep it: NUL and unpaired surrogates escaped."""
    if text is None:
        return None
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


class Consolidator:
    """Runs consolidation jobs for one store with one compressor."""

    def __init__(
        self,
        store: Store,
        *,
        compressor: Compressor | None = None,
        config: ConsolidationConfig | None = None,
        hooks: Hooks | None = None,
        judge: ModelJudge | None = None,
        registries: RegistryCache | None = None,
        shadow: bool = False,
        reviewed: bool = False,
        exploratory: bool = False,
        registry: Registry | None = None,
    ) -> None:
        """``registries`` shares a parsed predicate registry with the memory that made this
        consolidator (by default it keeps its own); ``registry``, if given, is built and gated
        with instead of the loaded one (a shadow lane trying a new registry). A ``shadow``
        consolidator (a tenant's shadow lane, :mod:`lossgate.policy.rollout`) builds, gates and
        stores its artifacts in the ``shadow`` state and publishes them to the subject's shadow
        alias (:func:`~lossgate.publication.switch.shadow_switch`), which recall never reads; no retry is
        queued. ``exploratory`` (a shadow lane only) blocks nothing: every violation is
        recorded on the attempt, and the summary is still published to the shadow alias (a
        hierarchy's every part is built and gated, whatever an earlier one found). A
        ``reviewed`` consolidator publishes without the tenant's review: an operator's own
        recovery (:mod:`lossgate.policy.quarantine`)."""
        if exploratory and not shadow:
            raise InvalidInput("the exploratory gate publishes only to the shadow alias: a shadow lane's mode")
        self.store = store
        self.shadow = shadow
        self.exploratory = exploratory
        self.registry = registry
        self.reviewed = reviewed
        self._registries = registries or RegistryCache()
        self.compressor = compressor or DeterministicCompressor()
        self.config = config or ConsolidationConfig()
        self.hooks = hooks or Hooks()
        self.judge = judge
        self._schema: int | None = None
        # A hierarchy's root is written by the deterministic compressor whatever writes the
        # parts: it copies their gated digests and renders the ledger (no model call).
        # Parts are split and budgeted with the compressor's own token counter, if it has one.
        own = getattr(self.compressor, "count", None)
        self._count: Callable[[str], int] = _foreign(own) if callable(own) else (lambda text: default_counter()(text))
        self._structure = DeterministicCompressor(self._count)
        writer = getattr(self.compressor, "config", None)
        models = {getattr(writer, "model", None), getattr(writer, "fallback_model", None)} - {None}
        if judge is not None and judge.config.model in models:
            model = judge.config.model
            log.warning(
                "the judge runs the compressor's own model (%s): their mistakes will agree; "
                "configure another model for LOSSGATE_JUDGE_MODEL",
                model,
            )

    # -- the job -------------------------------------------------------------------
    def run(self, tenant_id: str, subject_id: str) -> Attempt:
        """Prepare and, if the gate passed, publish (a shadow consolidator to the shadow
        alias only; an exploratory one whatever the gate found). Returns the final attempt record.

        One subject's input can never stop a worker: whatever a step raises that is not a
        :class:`~lossgate.errors.LossgateError` (a bug, an ``OverflowError``, a
        ``RecursionError``) ends the job as an ``error`` attempt (:meth:`crashed`), retried
        with backoff and then left for review like any failure. Raised: a
        :class:`~lossgate.errors.StoreError` (the infrastructure failed, not the subject),
        and, before any attempt is recorded, :class:`~lossgate.errors.InvalidInput` (no
        registry) or :class:`~lossgate.errors.NotFound` (nothing to consolidate).

        The garbage collector is held off meanwhile (:mod:`lossgate.runtime.collection`)."""
        with collection_held():
            return self._run(tenant_id, subject_id)

    def _run(self, tenant_id: str, subject_id: str) -> Attempt:
        try:
            prepared = self.prepare(tenant_id, subject_id)
        except LossgateError:
            raise
        except Exception as exc:  # noqa: BLE001 - see the docstring: recorded, never raised
            return self.crashed(tenant_id, subject_id, exc)
        status = prepared.attempt.status
        if prepared.artifact is None or not (status == "gated" or (self.exploratory and status == "rejected")):
            return prepared.attempt
        try:
            if self.shadow:
                return self._publish_shadow(prepared)
            return self.publish(prepared)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - as above
            return self.crashed(tenant_id, subject_id, exc, attempt=prepared.attempt)

    def crashed(
        self, tenant_id: str, subject_id: str, exc: BaseException, *, attempt: Attempt | None = None
    ) -> Attempt:
        """Record ``exc``, raised while consolidating the subject, as an ``error`` attempt
        (``attempt``, the one in flight, or a new one when none was recorded yet) whose error
        is :func:`~lossgate.errors.crash_reason` (its kind and place, none of its message),
        and queue the retry or mark it for review (:func:`lossgate.lineage.queue.after_failure`).
        The traceback goes to the log. Returns the saved attempt."""
        reason = exc if isinstance(exc, LossgateError) and not isinstance(exc, StoreError) else None
        error = f"{type(exc).__name__}: {exc}"[:2000] if reason is not None else crash_reason(exc)
        crashes.error("consolidation of %s/%s failed: %s", tenant_id, subject_id, error, exc_info=exc)
        now = utcnow()
        with self.store.write() as tx:
            if attempt is None:
                clock, alias = tx.clock(tenant_id, subject_id), tx.alias(tenant_id, subject_id)
                count, _ = tx.attempt_tail(tenant_id, subject_id)
                attempt = Attempt(
                    attempt_id=f"att-{uuid.uuid4().hex[:16]}",
                    tenant_id=tenant_id,
                    subject_id=subject_id,
                    number=count + 1,
                    status="error",
                    started_at=now,
                    high_water=clock.high_water,
                    input_epoch=clock.input_epoch,
                    expected_alias=alias.expected(),
                    selected_ids=(),
                    input_root="",
                    compressor=self._compressor_label(),
                    lane="shadow" if self.shadow else "live",
                )
            attempt = attempt.model_copy(
                update={
                    "status": "error",
                    "error": error,
                    "reason": error.split(":")[0],
                    "raw_output": None,
                    "finished_at": now,
                }
            )
            attempt = save_attempt(tx, attempt)
            attempt = self._schedule_retry(tx, attempt)
        return attempt

    def prepare(self, tenant_id: str, subject_id: str) -> Prepared:
        """Snapshot, record the attempt, compress, gate and store the artifact (a hierarchy's
        root, after its parts: :mod:`lossgate.consolidate.hierarchy`)."""
        t0 = time.perf_counter()
        now = utcnow()
        counter = _counted_once(self._count)  # this job's
        with self.store.write() as tx:
            registry = self.registry or self._registries.needed(tx)
            if registry is None:
                raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
            extended = self._extend(tx, tenant_id, subject_id, registry, counter)
            tree: hierarchy.TreePlan | None
            if extended is not None:  # a fresh hierarchy grows by its tail: what is new is what it reads
                sel, tree = extended.selection, extended.tree
            else:
                delta = select_delta(tx, tenant_id, subject_id, registry) if self._flat_delta() else None
                sel = delta or select(tx, tenant_id, subject_id, registry, incremental=self.config.incremental)
            epoch_seen(tenant_id, subject_id, sel.snapshot.clock.input_epoch)
            if sel.snapshot.clock.high_water == 0:
                raise NotFound(f"nothing to consolidate for {tenant_id}/{subject_id}: no events or facts")
            count, since_published = tx.attempt_tail(tenant_id, subject_id)
            failures, refused_for = queue.consecutive_failures(since_published)
            if extended is None:
                tree = self._plan_tree(tx, sel, registry, counter)
            # what the job's lines may state of the retired values: looked up by what a tail job reads
            retired = retired_facts(tx, sel, tree, bounded=extended is not None)
            sel = replace(
                sel,
                retired=retired_values([*sel.facts, *retired], sel.snapshot.conflicts),
                narrative_policy=narrative_policy(tx, tenant_id),
            )
            attempt = Attempt(
                attempt_id=f"att-{uuid.uuid4().hex[:16]}",
                tenant_id=tenant_id,
                subject_id=subject_id,
                number=count + 1,
                status="selected",
                started_at=now,
                high_water=sel.snapshot.clock.high_water,
                input_epoch=sel.snapshot.clock.input_epoch,
                expected_alias=sel.expected,
                selected_ids=tree.selected_ids if tree else sel.selected_ids,
                input_root=tree.root_preview if tree else sel.input_root,
                compressor=self._compressor_label(),
                lane="shadow" if self.shadow else "live",
            )
            tx.save_attempt(attempt)  # the selection is on record before any generation
            tx.refresh_search_index()  # keep keyword search warm off the append path
        timings = {"select_s": time.perf_counter() - t0}
        try:
            return self._compress_and_gate(attempt, sel, tree, registry, timings, failures, refused_for, counter)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - the attempt is on record: it ends as an error, never "selected"
            return Prepared(attempt=self.crashed(tenant_id, subject_id, exc, attempt=attempt), selection=sel)

    def _compress_and_gate(
        self,
        attempt: Attempt,
        sel: Selection,
        tree: hierarchy.TreePlan | None,
        registry: Registry,
        timings: dict[str, float],
        failures: int,
        refused_for: tuple[str, ...],
        count: Callable[[str], int],
    ) -> Prepared:
        """Everything ``prepare`` does once the attempt is on record (``count``: the job's token
        counter, :func:`_counted_once`)."""
        tenant_id, subject_id = attempt.tenant_id, attempt.subject_id
        if self.hooks.before_compress:
            self.hooks.before_compress(sel)
        if tree is not None:
            return self._prepare_tree(attempt, sel, tree, registry, timings, failures, refused_for, count)
        must = build_must_preserve(sel.snapshot, registry)  # once: the compressor, the gate and the judge share it
        request = CompressionRequest(
            tenant_id=tenant_id,
            subject_id=subject_id,
            facts=sel.facts,
            predicates={f.predicate: registry.get(f.predicate) for f in sel.facts},
            conflicts=sel.snapshot.conflicts,
            events=sel.events,
            parent=sel.parent.body if sel.parent else None,
            budget_tokens=self.config.budget_tokens,
            outdated_event_ids=sel.outdated_event_ids,
            withdrawn_event_ids=sel.withdrawn_event_ids,
            must_keep=_must_keep(must),
            failures=failures,
            refused_for=refused_for,
        )
        built = self._build(attempt, sel, request, must, registry, timings)
        if isinstance(built, Prepared):
            return built
        body, result, raw_text, judged, omitted, dropped = built
        return self._conclude(
            attempt, sel, body, result, registry, timings, raw_text, judged=judged, omitted=omitted, dropped=dropped
        )

    # -- one artifact: compress, parse, gate, judge --------------------------------------
    def _build(
        self,
        attempt: Attempt,
        sel: Selection,
        request: CompressionRequest,
        must: MustPreserve,
        registry: Registry,
        timings: dict[str, float],
        *,
        label: str = "",
        seen: Extractions | None = None,
    ) -> Prepared | tuple[ArtifactBody, gate.GateResult, str | None, bool, tuple[str, ...], tuple[str, ...]]:
        """The body, the gate's result and the events holding an atom the body dropped
        (:meth:`_gate`) for one request, or the failed attempt (a compressor error, malformed
        output, a judge that failed). ``label`` names a part; ``seen``, the atoms its job
        extracted already (:func:`~lossgate.gate.sources.prose_inputs`)."""
        where = f"part {label}: " if label else ""
        t1 = time.perf_counter()
        raw, error = self._generate(request)
        _add(timings, "compress_s", time.perf_counter() - t1)
        raw_text = raw if isinstance(raw, str) or raw is None else json.dumps(raw, sort_keys=True, default=str)
        raw_text = _storable(raw_text)
        if error is None and raw_text is not None and len(raw_text) > (most := _most_output(request)):
            # Reading it would cost past any deadline (the gate reads every line): refused unread.
            error = f"invalid output: {len(raw_text):,} characters, more than {most:,} for what it was given"
            raw_text = None
        if error is None:
            body, error = self._parse(raw)
        if error is not None:
            return self._finish_error(attempt, sel, raw_text, where + error, timings)
        assert body is not None
        t2 = time.perf_counter()
        # what lossgate publishes of it: the ledger's topics left out, superseded values marked
        published = as_published(
            sel.snapshot,
            body,
            must,
            registry,
            retired=sel.retired,
            policy=sel.narrative_policy,
            quoted=_parent_quotes(sel),
        )
        body, omitted = published.body, published.omitted
        result, dropped = self._gate(sel, body, registry, must, seen)
        if not result.passed and sel.narrative_policy == "omit":
            # under omit, a sentence refused for what it says is left out, and the rest gated again
            pruned = without_unproven(
                sel.snapshot, body, result.violations, retired=sel.retired, quoted=_parent_quotes(sel)
            )
            if pruned is not None:
                again, dropped_again = self._gate(sel, pruned[0], registry, must, seen)
                if again.passed:
                    body, result, dropped, omitted = pruned[0], again, dropped_again, (*omitted, *pruned[1])
        if published.refusals:
            result = make_result([*result.violations, *result.losses, *published.refusals], must)
        _add(timings, "gate_s", time.perf_counter() - t2)
        judged = False
        if self.judge is not None and result.passed:
            t3 = time.perf_counter()
            try:
                judged, result = self._judged(sel, body, must, result)
            except Exception as exc:  # noqa: BLE001 - a judge is foreign code: an unjudged narrative is never published
                _add(timings, "judge_s", time.perf_counter() - t3)
                why = str(exc) if isinstance(exc, JudgeError) else crash_reason(exc)
                return self._finish_error(attempt, sel, raw_text, f"{where}JudgeError: {why}"[:2000], timings)
            _add(timings, "judge_s", time.perf_counter() - t3)
        return body, result, raw_text, judged, tuple(_storable(where + o.line()) or "" for o in omitted), dropped

    def _conclude(
        self,
        attempt: Attempt,
        sel: Selection,
        body: ArtifactBody,
        result: gate.GateResult,
        registry: Registry,
        timings: dict[str, float],
        raw_text: str | None,
        *,
        judged: bool,
        part: PartInfo | None = None,
        tree: hierarchy.TreePlan | None = None,
        omitted: tuple[str, ...] = (),
        dropped: tuple[str, ...] = (),
        failed_parts: Sequence[tuple[str, gate.GateResult]] = (),
    ) -> Prepared:
        """Store the artifact and the attempt's outcome; a failed gate schedules the retry.
        ``omitted``: the narrative sentences left out of it (and of its parts), and why;
        ``dropped``: the events holding an atom it dropped (``Manifest.dropped``);
        ``failed_parts``: an exploratory gate's findings in the parts (the attempt fails with them)."""
        artifact = self._artifact(
            attempt, sel, body, result, registry, timings, judged=judged, part=part, tree=tree, dropped=dropped
        )
        passed = result.passed and not failed_parts
        where = f"part {part.key}: " if part is not None else ""
        found = [(where, result), *((f"part {key}: ", r) for key, r in failed_parts)]
        violations = tuple(w + line for w, r in found for line in r.lines())
        losses = tuple(w + str(v) for w, r in found for v in r.losses)
        if failed_parts:  # the root's gate report holds the whole tree's findings
            artifact = artifact.model_copy(
                update={
                    "gate": {
                        **artifact.gate,
                        "outcome": "failed",
                        "violations": list(violations),
                        "losses": list(losses),
                    }
                }
            )
        attempt = attempt.model_copy(
            update={
                "status": "gated" if passed else "rejected",
                "artifact_id": artifact.artifact_id,
                "gate_outcome": "failed" if failed_parts else result.outcome,
                "violations": violations,
                "details": tuple(_storable(f"{w}{v}: {v.detail}") or "" for w, r in found for v in r.violations)
                + omitted,
                "losses": losses,
                "raw_output": raw_text,
                "covers_through": artifact.manifest.new_covers_through,
                "timings": timings,
                "finished_at": None if passed else utcnow(),
                "reason": None if passed else "gate failed",
            }
        )
        try:
            with self.store.write() as tx:
                moved, erased = _moved(tx, attempt)
                if moved:
                    attempt = _withdrawn(attempt, moved, erased)
                else:
                    tx.insert_artifact(artifact, self._edges(artifact, sel))
                attempt = save_attempt(tx, attempt)
                if not passed and not moved:
                    attempt = self._schedule_retry(tx, attempt)
                now_epoch = tx.clock(attempt.tenant_id, attempt.subject_id).input_epoch
            # a deletion that committed while this ran: what the gate cached of it goes too
            epoch_seen(attempt.tenant_id, attempt.subject_id, now_epoch)
        except StoreError as exc:
            # The store refused what this output holds (a value past an engine's limits, say):
            # the attempt fails as an error, so that the subject retries and escalates instead
            # of repeating the same write forever. If the store is down, this write fails too.
            return self._finish_error(
                attempt.model_copy(update={"artifact_id": None}),
                sel,
                None,
                f"{where}invalid output: the store refused it ({exc})"[:2000],
                timings,
            )
        if attempt.status == "gated":
            refused = self._read_back(attempt, sel, artifact, registry, timings, where=where)
            if refused is not None:
                return refused
        return Prepared(attempt=attempt, artifact=artifact, gate_result=result, selection=sel)

    def _read_back(
        self,
        attempt: Attempt,
        sel: Selection,
        artifact: Artifact,
        registry: Registry,
        timings: dict[str, float],
        *,
        where: str = "",
    ) -> Prepared | None:
        """Read the stored artifact back through the store's read path (:mod:`lossgate.publication.readback`).
        None if it came back as written; else it is failed, never published, the attempt is
        rejected with a ``representation_loss`` violation (and the gate's findings on what came
        back), and a retry is scheduled."""
        t, s = artifact.tenant_id, artifact.subject_id
        t0 = time.perf_counter()
        try:
            with self.store.read() as tx:
                back = tx.artifact(t, s, artifact.artifact_id)
            found = divergence(artifact, back)
        except ValidationError as exc:  # stored, but what comes back is no artifact: the root differs
            error = exc.errors()[0]
            back, found = (
                None,
                (".".join(str(p) for p in ("artifact", *error["loc"])), "a valid record", f"invalid: {error['msg']}"),
            )
        _add(timings, "read_back_s", time.perf_counter() - t0)
        if found is None:
            return None
        loss = representation_loss(found)
        must = build_must_preserve(sel.snapshot, registry)
        findings = [loss]
        if back is not None:
            again = gate.check(sel.snapshot, back.body, registry, must=must, retired=sel.retired)
            findings += [*again.violations, *again.losses]
        result = make_result(findings, must)
        log.error("read-back of %s differs from what was written: %s", artifact.artifact_id, without_values(found))
        attempt = attempt.model_copy(
            update={
                "status": "rejected",
                "gate_outcome": "failed",
                "finished_at": utcnow(),
                "reason": "read-back differs",
                "violations": tuple(where + line for line in result.lines()),
                "details": tuple(_storable(f"{where}{v}: {v.detail}") or "" for v in result.violations),
            }
        )
        with self.store.write() as tx:
            tx.set_artifact_state(
                t,
                s,
                [artifact.artifact_id],
                "failed",
                from_states=["candidate", "shadow"],
                reason=f"read-back: {without_values(found)}"[:2000],
            )
            attempt = save_attempt(tx, attempt)
            attempt = self._schedule_retry(tx, attempt)
        return Prepared(attempt=attempt, artifact=back or artifact, gate_result=result, selection=sel)

    def _flat_delta(self) -> bool:
        """Whether a flat incremental job may read only what is new (:func:`select_delta`): a
        hierarchy in ``auto`` mode must see the whole history's size to know whether to go
        hierarchical, so only ``never`` does."""
        c = self.config
        return c.incremental and c.hierarchy.mode == "never" and not self.shadow

    def _gate(
        self,
        sel: Selection,
        body: ArtifactBody,
        registry: Registry,
        must: MustPreserve,
        seen: Extractions | None = None,
    ) -> tuple[gate.GateResult, tuple[str, ...]]:
        """The gate's result for ``body``, and the valid events of what it read that hold an
        atom the body dropped (its ``atom_missing`` losses, mapped back to the events through
        the atoms the gate extracted: :func:`~lossgate.gate.sources.events_holding`); a
        part's, among its own events only. On a bounded selection, when every line of prose
        it writes is a line of the parent's conversation (gated with the parent, at this
        epoch) or quotes a new event, the gate reads what is new: those quotes and the
        structured part against the bounded snapshot, the parent's lines by reference (and
        the events the parent dropped stay dropped). Otherwise it reads the whole snapshot at
        the same high-water."""
        seen = {} if seen is None else seen

        def dropped(result: gate.GateResult, events: Any, also: tuple[str, ...] = ()) -> tuple[str, ...]:
            labels = dropped_labels(result.losses)
            if not labels:
                return tuple(sorted(set(also)))
            if sel.path == "part":  # its snapshot also shows the events its facts cite elsewhere
                own = {e.event_id for e in sel.events}
                events = [e for e in events if e.event_id in own]
            return tuple(sorted({*events_holding(events, labels, seen=seen), *also}))

        if not sel.bounded:
            result = gate.check(
                sel.snapshot,
                body,
                registry,
                must=must,
                retired=sel.retired,
                prose_inputs=prose_inputs(sel.snapshot, seen=seen),
            )
            return result, dropped(result, sel.snapshot.events)
        carried = _carried_lines(sel, body)
        if carried is not None:
            lines = body.summary.split("\n")
            blanked = "\n".join("" if strip_markers(line) in carried else line for line in lines)
            new_text = prose_inputs(sel.snapshot.model_copy(update={"events": sel.events}), seen=seen)
            result = gate.check(
                sel.snapshot,
                body.model_copy(update={"summary": blanked}),
                registry,
                must=must,
                prose_inputs=new_text,
                retired=sel.retired,
            )
            # the carried lines' markers too: what holds now is read at this epoch, not the parent's
            kept = "\n".join(line if strip_markers(line) in carried else "" for line in lines)
            marks = check_markers(kept, sel.retired, structured_lines(body))
            inherited = sel.parent.manifest.dropped if sel.parent is not None else ()
            if marks:
                result = make_result([*result.violations, *result.losses, *marks], must)
            return result, dropped(result, sel.events, inherited)
        t, s = sel.snapshot.tenant_id, sel.snapshot.subject_id
        with self.store.read() as tx:
            whole = snapshot_at(tx, t, s, registry, through_seq=sel.snapshot.clock.high_water)
        result = gate.check(
            whole,
            body,
            registry,
            must=build_must_preserve(whole, registry),
            retired=sel.retired,
            prose_inputs=prose_inputs(whole, seen=seen),
        )
        return result, dropped(result, whole.events)

    # -- a hierarchy: the parts, then the root ---------------------------------------------
    def _extend(
        self, tx: WriteTx, tenant_id: str, subject_id: str, registry: Registry, count: Callable[[str], int]
    ) -> tail.Tail | None:
        """The job that extends the subject's fresh published root by its tail, if this
        consolidator may take one (:mod:`lossgate.consolidate.tail`)."""
        c = self.config
        if not c.incremental or not c.reuse_parts or c.hierarchy.mode == "never" or self.shadow:
            return None
        return tail.extend(
            tx,
            tenant_id,
            subject_id,
            registry,
            c.hierarchy,
            compressor=self.compressor,
            label=self._compressor_label(),
            count=count,
        )

    def _plan_tree(
        self, tx: WriteTx, sel: Selection, registry: Registry, count: Callable[[str], int]
    ) -> hierarchy.TreePlan | None:
        config = self.config.hierarchy
        if config.mode == "never":
            return None
        alias_id = sel.expected.parent_artifact_id
        t, s = sel.snapshot.tenant_id, sel.snapshot.subject_id
        current = sel.parent or (tx.artifact(t, s, alias_id) if alias_id else None)
        settings = config.settings(current.manifest.tree if current else None, self.compressor)
        if self.shadow:  # a shadow tree reuses the parts of the latest shadow tree, never live ones
            current = next(
                (a for a in tx.artifacts(t, s, states=["shadow"]) if a.manifest.path == "hierarchical"), None
            )
        if not hierarchy.wanted(sel, current, config.mode, settings.context_tokens, count):
            return None
        return hierarchy.plan(
            tx,
            sel,
            current,
            settings,
            compressor=self._compressor_label(),
            registry=registry,
            count=count,
            reuse=self.config.reuse_parts,
            shadow=self.shadow,
        )

    def _prepare_tree(
        self,
        attempt: Attempt,
        sel: Selection,
        tree: hierarchy.TreePlan,
        registry: Registry,
        timings: dict[str, float],
        failures: int,
        refused_for: tuple[str, ...],
        count: Callable[[str], int],
    ) -> Prepared:
        """Build the parts that no stored artifact digests yet (each gated against its own
        snapshot and stored as a candidate), then the root over all of them."""
        children: list[Artifact] = []
        raw_parts: dict[str, str | None] = {}
        left_out: list[str] = []  # the parts' narrative sentences the ledger speaks for
        failed_parts: list[tuple[str, gate.GateResult]] = []  # an exploratory gate's findings in parts
        seen: Extractions = {}  # the atoms of the events gated so far: the root reads them all again
        for job in tree.parts:
            if job.reuse is not None:
                children.append(job.reuse)
                continue
            part_sel = Selection(
                snapshot=job.snapshot,
                expected=sel.expected,
                path="part",
                parent=None,
                events=job.part.events,
                facts=job.facts,
                inputs=job.inputs,
                input_root=job.input_root,
                outdated_event_ids=job.outdated_event_ids,
                withdrawn_event_ids=sel.withdrawn_event_ids,
                retired=sel.retired,
                narrative_policy=sel.narrative_policy,
            )
            must = build_must_preserve(job.snapshot, registry)
            # The digest's budget: its conversation's share, plus what its structure takes (the
            # facts drawn from this period are never dropped for the conversation's sake).
            head = header_line(sel.snapshot.tenant_id, sel.snapshot.subject_id) + "\n" + job.title
            structure = (
                self._count(head)
                + self._count(CONVERSATION_TITLE)
                + 1
                + sum(self._count(fact_line(f)) + 1 for f in job.facts)
                + sum(self._count(conflict_line(c.predicate, c.fact_ids)) + 1 for c in job.snapshot.conflicts)
            )
            said = sum(count(event_line(e)) + 1 for e in job.part.events if e.text)
            request = CompressionRequest(
                tenant_id=sel.snapshot.tenant_id,
                subject_id=sel.snapshot.subject_id,
                facts=job.facts,
                predicates={f.predicate: registry.get(f.predicate) for f in job.facts},
                conflicts=job.snapshot.conflicts,
                events=job.part.events,
                budget_tokens=hierarchy.digest_budget(tree.settings, said) + structure,
                outdated_event_ids=job.outdated_event_ids,
                withdrawn_event_ids=sel.withdrawn_event_ids,
                must_keep=_must_keep(must),
                failures=failures,
                refused_for=refused_for,
                period=job.title,
            )
            built = self._build(attempt, part_sel, request, must, registry, timings, label=job.part.key, seen=seen)
            if isinstance(built, Prepared):
                return built
            body, result, raw_text, judged, omitted, dropped = built
            left_out += omitted
            if not result.passed and not self.exploratory:  # the job fails as a whole: nothing of it is published
                return self._conclude(
                    attempt,
                    part_sel,
                    body,
                    result,
                    registry,
                    timings,
                    raw_text,
                    judged=judged,
                    part=job.info,
                    omitted=tuple(left_out),
                    dropped=dropped,
                )
            if not result.passed:  # exploratory: recorded, and the tree is built on
                failed_parts.append((job.part.key, result))
            artifact = self._artifact(
                attempt, part_sel, body, result, registry, timings, judged=judged, part=job.info, dropped=dropped
            )
            try:
                with self.store.write() as tx:
                    moved, erased = _moved(tx, attempt)
                    if moved:
                        attempt = _withdrawn(attempt, moved, erased)
                        attempt = save_attempt(tx, attempt)
                    else:
                        tx.insert_artifact(artifact, self._edges(artifact, part_sel))
                if moved:
                    return Prepared(attempt=attempt, selection=sel)
            except StoreError as exc:
                return self._finish_error(
                    attempt,
                    part_sel,
                    None,
                    f"part {job.part.key}: invalid output: the store refused it ({exc})"[:2000],
                    timings,
                )
            refused = self._read_back(
                attempt.model_copy(update={"artifact_id": artifact.artifact_id}),
                part_sel,
                artifact,
                registry,
                timings,
                where=f"part {job.part.key}: ",
            )
            if refused is not None:
                return refused
            children.append(artifact)
            raw_parts[job.part.key] = raw_text
        return self._prepare_root(
            attempt, sel, tree, children, raw_parts, registry, timings, tuple(left_out), seen, failed_parts=failed_parts
        )

    def _prepare_root(
        self,
        attempt: Attempt,
        sel: Selection,
        tree: hierarchy.TreePlan,
        children: list[Artifact],
        raw_parts: dict[str, str | None],
        registry: Registry,
        timings: dict[str, float],
        omitted: tuple[str, ...] = (),
        seen: Extractions | None = None,
        failed_parts: list[tuple[str, gate.GateResult]] | None = None,
    ) -> Prepared:
        """The root: the ledger's claims and lines (the deterministic compressor's, under the
        job's budget), then every part's digest, gated against the whole snapshot (``seen``:
        the atoms its parts' gates extracted; ``failed_parts``, an exploratory gate's findings
        in parts, which the attempt records with the root's)."""
        t, s = sel.snapshot.tenant_id, sel.snapshot.subject_id
        must = build_must_preserve(sel.snapshot, registry)
        request = CompressionRequest(
            tenant_id=t,
            subject_id=s,
            facts=tree.facts,
            predicates={f.predicate: registry.get(f.predicate) for f in tree.facts},
            conflicts=sel.snapshot.conflicts,
            budget_tokens=self.config.budget_tokens,
            withdrawn_event_ids=sel.withdrawn_event_ids,
            must_keep=_must_keep(must),
        )
        try:
            structure = self._structure.compress(request)
        except CompressionError as exc:
            return self._finish_error(attempt, sel, None, f"{type(exc).__name__}: {exc}", timings)
        summary, gated = hierarchy.rollup_summary(
            structure["summary"],
            children,
            carried=tree.carried_lines,
            window=tree.settings.window_tokens,
            count=self._count,
        )
        body = ArtifactBody.model_validate({**structure, "summary": summary})
        own = structured_lines(body)  # the digests' lines as what holds now makes them read
        body = body.model_copy(update={"summary": mark(summary, sel.retired, own)})
        gated = mark(gated, sel.retired, own)
        parent = tree.extends
        inputs = tuple(
            (
                [InputRef(kind="artifact", id=parent.artifact_id, content_hash=parent.manifest.input_root)]
                if parent is not None
                else []
            )
            + [InputRef(kind="artifact", id=c.artifact_id, content_hash=c.manifest.input_root) for c in children]
            + [InputRef(kind="fact", id=f.fact_id, content_hash=f.content_hash, seq=f.seq) for f in tree.facts]
        )
        root = input_root(inputs) if parent is None else content_hash([input_root(inputs), list(tree.carried)])
        root_sel = Selection(
            snapshot=sel.snapshot,
            expected=sel.expected,
            path="hierarchical",
            parent=None,
            events=(),
            facts=tree.facts,
            inputs=inputs,
            input_root=root,
            withdrawn_event_ids=sel.withdrawn_event_ids,
            retired=sel.retired,
        )
        t2 = time.perf_counter()
        # A root that extends its parent is gated on what it adds: the parent's digest lines it
        # carries were gated with the parent, against a snapshot this one only extends.
        result = gate.check(
            sel.snapshot,
            body if parent is None else body.model_copy(update={"summary": gated}),
            registry,
            must=must,
            retired=sel.retired,
            prose_inputs=prose_inputs(sel.snapshot, seen=seen),
        )
        _add(timings, "gate_s", time.perf_counter() - t2)
        raw = json.dumps({"parts": raw_parts}, sort_keys=True) if raw_parts else None
        dropped = _root_dropped(sel, children, result, gated if parent is not None else body.summary, seen)
        return self._conclude(
            attempt,
            root_sel,
            body,
            result,
            registry,
            timings,
            raw,
            judged=False,
            tree=tree,
            omitted=omitted,
            dropped=dropped,
            failed_parts=failed_parts or (),
        )

    def _publish_shadow(self, prepared: Prepared) -> Attempt:
        """Offer a shadow lane's stored summary to the shadow alias
        (:func:`~lossgate.publication.switch.shadow_switch`); the attempt says whether it went there, and
        with how many violations. One the fence refuses is abandoned, saying why."""
        artifact, attempt = prepared.artifact, prepared.attempt
        assert artifact is not None
        t, s = artifact.tenant_id, artifact.subject_id
        with self.store.write() as tx:
            stored = tx.artifact_gate(t, s, artifact.artifact_id)
            if stored is None or stored[0] != "shadow":  # failed its read-back: the attempt says why
                return attempt
            result = shadow_switch(tx, artifact, now=utcnow())
            if result.published:
                found = len(attempt.violations)
                reason = result.reason + (f" with {found} violation(s) (exploratory gate)" if found else "")
            else:
                reason = f"not published to the shadow alias: {result.reason}"
                tx.set_artifact_state(
                    t, s, [artifact.artifact_id], "abandoned", from_states=["shadow"], reason=result.reason
                )
            return save_attempt(tx, attempt.model_copy(update={"finished_at": utcnow(), "reason": reason}))

    def publish(self, prepared: Prepared) -> Attempt:
        """Run the switch for a gated artifact. A lost race or a moved input publishes nothing."""
        artifact = prepared.artifact
        if artifact is None or prepared.attempt.status != "gated":
            return prepared.attempt  # only a gated artifact is ever offered to the switch
        if self.hooks.before_switch:
            self.hooks.before_switch(artifact)
        with self.store.write() as tx:
            if not self.reviewed and rollout.review_required(tx, artifact.tenant_id):
                # the tenant wants a person to approve each summary (lossgate.policy.rollout); the
                # newest waiting one replaces those before it, so a reviewer sees one
                t, s = artifact.tenant_id, artifact.subject_id
                waiting = tx.artifacts(t, s, states=["review"])
                older = [a.artifact_id for a in waiting]
                if older:
                    why = f"a newer summary waits for review: {artifact.artifact_id}"
                    tx.set_artifact_state(t, s, older, "abandoned", from_states=["review"], reason=why)
                    # and their parts that the newer one does not stand on
                    parts = {c for a in waiting for c in a.manifest.children} - set(artifact.manifest.children)
                    if parts:
                        tx.set_artifact_state(t, s, sorted(parts), "abandoned", from_states=["candidate"], reason=why)
                tx.set_artifact_state(
                    t, s, [artifact.artifact_id], "review", from_states=["candidate"], reason="awaiting review"
                )
                attempt = prepared.attempt.model_copy(update={"reason": "awaiting review", "finished_at": utcnow()})
                attempt = save_attempt(tx, attempt)
                return attempt
            result = switch(tx, artifact, now=utcnow())
            if result.published:
                attempt = prepared.attempt.model_copy(update={"status": "published", "finished_at": utcnow()})
            else:
                head = tx.artifact_head(artifact.tenant_id, artifact.subject_id, artifact.artifact_id)
                if head is not None and head.state == "candidate":
                    tx.set_artifact_state(
                        artifact.tenant_id,
                        artifact.subject_id,
                        [artifact.artifact_id],
                        "abandoned",
                        reason=result.reason,
                    )
                queue.switch_refused(tx, artifact.tenant_id, artifact.subject_id, result.reason, now=utcnow())
                attempt = prepared.attempt.model_copy(
                    update={"status": "conflict", "reason": result.reason, "finished_at": utcnow()}
                )
            attempt = save_attempt(tx, attempt)
        return attempt

    # -- steps -----------------------------------------------------------------------
    def _judged(
        self, sel: Selection, body: ArtifactBody, must: MustPreserve, result: gate.GateResult
    ) -> tuple[bool, gate.GateResult]:
        """Whether the model judge read a narrative, and the gate's result with its findings.
        The judge's whole exchange runs under its ``timeout_s`` (a server that trickles its
        answer a byte at a time would otherwise pass every per-read timeout)."""
        judge = self.judge
        assert judge is not None
        narrative = "\n".join(raw for raw, _ in narrative_sentences(sel.snapshot, body))
        if not narrative:
            return False, result
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
            for f in sel.snapshot.facts
            if f.status == "active"
        ]
        try:
            statements = call_with_deadline(
                judge.statements,
                sel.snapshot.subject_id,
                facts,
                narrative,
                timeout_s=judge.config.timeout_s,
                name="lossgate-judge",
            )
        except Overdue:
            raise JudgeError(f"timeout: the judge did not answer within {judge.config.timeout_s:g}s") from None
        found = judge_violations(statements, sel.snapshot)
        if not found:
            return True, result
        return True, make_result([*result.violations, *result.losses, *found], must)

    def _compressor_label(self) -> str:
        c = self.compressor
        return f"{c.name}@{c.version}"

    def _generate(self, request: CompressionRequest) -> tuple[Any, str | None]:
        """Run the compressor under the timeout. Returns (raw output, error or None)."""
        try:
            return call_with_deadline(
                self.compressor.compress, request, timeout_s=self.config.timeout_s, name="lossgate-compress"
            ), None
        except Overdue:
            return None, f"timeout: the compressor did not answer within {self.config.timeout_s:g}s"
        except CompressionError as exc:
            return None, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a compressor is foreign code: any failure is a failed attempt
            # its kind and place, not its message (which may quote the inputs); Escaped: a
            # SystemExit or KeyboardInterrupt it raised, no signal to this process
            return None, f"compressor error: {crash_reason(exc)}"

    def _schema_version(self) -> int:
        # Read once per consolidator: on PostgreSQL it is a transaction of its own.
        if self._schema is None:
            self._schema = self.store.schema_version()
        return self._schema

    def _parse(self, raw: Any) -> tuple[ArtifactBody | None, str | None]:
        try:
            data = json.loads(raw) if isinstance(raw, str) else raw
            # each claim value in its type's exact stored form (format 2: lossgate.ops.migrate),
            # when it reads as its type; the gate reads either form the same way
            body = stored_claims(ArtifactBody.model_validate(data))
            # PostgreSQL keeps no NUL in text or jsonb, and no store encodes a lone surrogate:
            # refused here, on every store alike, as any other malformed output
            bad = _unstorable(body.model_dump())
            return (None, f"invalid output: its text holds {bad}, which no store keeps") if bad else (body, None)
        except json.JSONDecodeError as exc:
            return None, f"invalid output: not JSON ({exc})"
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            kind = "missing field" if first["type"] == "missing" else first["msg"]
            return None, f"invalid output: {kind} at {where} ({exc.error_count()} error(s))"

    def _finish_error(
        self, attempt: Attempt, sel: Selection, raw_text: str | None, error: str, timings: dict[str, float]
    ) -> Prepared:
        attempt = attempt.model_copy(
            update={
                "status": "error",
                "error": _storable(error),
                "raw_output": _storable(raw_text),
                "finished_at": utcnow(),
                "timings": timings,
                "reason": error.split(":")[0],
            }
        )
        with self.store.write() as tx:
            _, erased = _moved(tx, attempt)
            if erased:  # what failed may quote what was deleted meanwhile
                attempt = attempt.model_copy(
                    update={
                        "raw_output": None,
                        "error": f"{attempt.reason} (details purged: an input was deleted meanwhile)",
                    }
                )
            attempt = save_attempt(tx, attempt)
            attempt = self._schedule_retry(tx, attempt)
            now_epoch = tx.clock(attempt.tenant_id, attempt.subject_id).input_epoch
        epoch_seen(attempt.tenant_id, attempt.subject_id, now_epoch)
        return Prepared(attempt=attempt, selection=sel)

    def _schedule_retry(self, tx: WriteTx, attempt: Attempt) -> Attempt:
        """Queue the retry of a failed attempt, or mark it for review (:func:`lossgate.lineage.queue.after_failure`).
        A shadow attempt's failure queues nothing: it is what the shadow report compares."""
        if self.shadow:
            return attempt
        c = self.config
        return queue.after_failure(
            tx,
            attempt,
            max_attempts=c.max_attempts,
            backoff_base_s=c.backoff_base_s,
            backoff_max_s=c.backoff_max_s,
            now=utcnow(),
        )

    def _artifact(
        self,
        attempt: Attempt,
        sel: Selection,
        body: ArtifactBody,
        result: gate.GateResult,
        registry: Registry,
        timings: dict[str, float],
        *,
        judged: bool = False,
        part: PartInfo | None = None,
        tree: hierarchy.TreePlan | None = None,
        dropped: tuple[str, ...] = (),
    ) -> Artifact:
        if part is None:
            covers = max(sel.snapshot.clock.high_water, sel.expected.covers_through)
        else:  # a part covers its own events (it is never offered to the alias)
            covers = max(e.seq for e in sel.events)
        artifact_id = f"art-{attempt.subject_id}-{covers:06d}-{uuid.uuid4().hex[:8]}"
        manifest = Manifest(
            artifact_id=artifact_id,
            tenant_id=attempt.tenant_id,
            subject_id=attempt.subject_id,
            new_covers_through=covers,
            input_epoch=sel.snapshot.clock.input_epoch,
            expected_alias=sel.expected,
            inputs=sel.inputs,
            input_root=sel.input_root,
            path=sel.path,
            selector_version=SELECTOR_VERSION,
            prompt_version=(
                self._structure.prompt_version
                if sel.path == "hierarchical"
                else getattr(self.compressor, "prompt_version_used", self.compressor.prompt_version)
            )
            + (f"+{self.judge.name}/{self.judge.prompt_version}" if judged and self.judge else ""),
            compressor=self._structure.name if sel.path == "hierarchical" else self.compressor.name,
            compressor_version=self._structure.version if sel.path == "hierarchical" else self.compressor.version,
            extractor_version=EXTRACTOR_VERSION,
            schema_version=self._schema_version(),
            registry_version=registry.version,
            attempt=attempt.number,
            budget_tokens=self.config.budget_tokens,
            timings=dict(timings),
            part=part,
            tree=tree.settings if tree else None,
            extends=tree.extends.artifact_id if tree and tree.extends else None,
            carried=tree.carried if tree else (),
            periods=tree.periods if tree else (),
            dropped=dropped,
        )
        return Artifact(
            artifact_id=artifact_id,
            tenant_id=attempt.tenant_id,
            subject_id=attempt.subject_id,
            state=(
                "shadow"
                if self.shadow and (result.passed or self.exploratory)
                else "candidate"
                if result.passed
                else "failed"
            ),
            body=body,
            manifest=manifest,
            gate={"outcome": result.outcome, "violations": result.lines(), "losses": [str(v) for v in result.losses]},
            created_at=utcnow(),
        )

    @staticmethod
    def _edges(artifact: Artifact, sel: Selection) -> list[LineageEdge]:
        """One edge per input, from the validated artifact and inputs (not validated again:
        :func:`~lossgate.model.trusted.trusted`; a part has one per event)."""
        t, s, a = artifact.tenant_id, artifact.subject_id, artifact.artifact_id
        return [
            trusted(
                LineageEdge,
                _EDGE_FIELDS,
                {"tenant_id": t, "subject_id": s, "artifact_id": a, "input_kind": ref.kind, "input_id": ref.id},
            )
            for ref in sel.inputs
        ]
