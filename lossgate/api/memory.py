"""The Python API: :func:`lossgate.open` returns a :class:`Memory`.

``Memory`` holds a store and, optionally, an embedder (hybrid semantic search) and a reranker. Each write method runs one
lifecycle operation in its own transaction; :meth:`Memory.transaction`
yields a :class:`~lossgate.ledger.lifecycle.Ledger` for several operations that must
commit together.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, get_args

from lossgate.ledger import lifecycle as ledger
from lossgate.lineage import propagation as lineage
from lossgate.lineage import queue
from lossgate.model.canonical import content_hash
from lossgate.model.derived_records import (
    Alias, Artifact, Attempt, GuardResult, Job, Lane, LineageView, RecallRecord, RecallResult, RecallVerification,
    ResponseRecord,
)
from lossgate.errors import (
    ConfigError, IdempotencyConflict, InvalidInput, LossgateError, NotFound, TenantNotBound, crash_reason,
)
from lossgate.model.instants import before, checked_instant
from lossgate.ledger.lifecycle import Ledger
from lossgate.model.limits import checked_args, shown_id
from lossgate.model.messages import ChatMessage
from lossgate.model.records import (
    AppendResult, Clock, Conflict, Event, EventKind, EventState, Fact, FactHistory, FactStatus, LedgerEntry,
    NewEvent, NewFact, Proposal, TaintOutcome, TaintPolicy, Trust, utcnow,
)
from lossgate.model.registry import Registry, RegistryCache, load_registry, parse_registry, read_registry_document
from lossgate.model.starter import is_starter, starter_registry
from lossgate.store import Store, WriteTx, open_store
from lossgate.store.protocol import CompactReport
from lossgate.api.tenancy import Added, Found, TenantView, checked_tenant

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from lossgate.model.api_keys import ApiKey
    from lossgate.consolidate.compressor import Compressor
    from lossgate.consolidate.pipeline import ConsolidationConfig, Consolidator, Hooks
    from lossgate.extract import Extractor
    from lossgate.judge import ModelJudge
    from lossgate.policy.quarantine import Quarantined
    from lossgate.policy.rollout import Rollout, ShadowRow
    from lossgate.consolidate.regate import RegateResult
    from lossgate.ledger.retention import Expiry, RetentionPolicy, RetentionRule
    from lossgate.semantic import Embedder, EmbedReport
    from lossgate.semantic.rerankers import Reranker
    from lossgate.ledger.tiers import Demotion, TierPolicy

__all__ = ["Memory", "open"]

ACTIVE: tuple[FactStatus, ...] = ("active",)
# Where a registry loaded over the starter one is refused: how to add to it instead.
_EXTEND_HINT = ("to add predicates to the starter registry, extend it (Memory.extend_predicates, "
                "lossgate predicates extend FILE.toml)")


class Memory:
    """Long-term memory for agents, backed by one store.

    Methods marked ``@checked_args`` refuse a NUL or a lone surrogate in any string
    argument, a ``tenant_id`` or ``subject_id`` that breaks the id rule, and a ``reason``
    or ``query`` over 4,096 characters, with :class:`~lossgate.errors.InvalidInput` before
    they touch the store (records carry their own checks: :mod:`lossgate.model.limits`). An
    event, fact or artifact id names a stored record and is looked up as given.
    """

    def __init__(self, store: Store, *, embedder: "Embedder | None" = None,
                 compressors: "Callable[[str], Compressor] | None" = None,
                 default_registry: Registry | None = None, tenant_id: str | None = None,
                 reranker: "Reranker | None" = None) -> None:
        """``compressors`` makes the compressor a tenant's rollout names
        (:mod:`lossgate.policy.rollout`) from its spec; the default reads no environment, so a
        ``chat`` spec needs the edge's factory (the CLI and workers pass one).
        ``default_registry`` is stored the first time an operation needs a registry on a
        store that has none (:meth:`RegistryCache.needed`; :func:`open` passes the starter
        registry). ``tenant_id`` binds the memory to a tenant, for :meth:`add` and :meth:`search`.
        With a ``reranker`` (:mod:`lossgate.semantic.rerankers`), a query recall reorders the
        top of its first ranking by the reranker's scores."""
        self.store = store
        self.embedder = embedder
        self.reranker = reranker
        # The newest stored predicate registry, parsed once per version, shared with the
        # ledgers and consolidators this memory opens.
        self.registries = RegistryCache(default=default_registry)
        self.compressors = compressors or _no_environment_compressors
        self._bound = TenantView(self, tenant_id) if tenant_id is not None else None

    @property
    def tenant_id(self) -> str | None:
        """The tenant this memory is bound to (``lossgate.open(url, tenant=...)``), or ``None``."""
        return self._bound.tenant_id if self._bound is not None else None

    # -- setup -------------------------------------------------------------------------
    def migrate(self) -> int:
        """Create or upgrade the schema (idempotent). Returns the schema version."""
        return self.store.migrate()

    def load_predicates(self, source: Registry | str | dict, *, tenants: Iterable[str] = ()) -> Registry:
        """Store a predicate registry version (a :class:`Registry`, a TOML path or a document).

        Loading the same version with the same content again is a no-op; the same version
        with other content raises :class:`~lossgate.errors.IdempotencyConflict` (over the
        starter registry, saying to extend it: :meth:`extend_predicates`); a newer
        version that drops a predicate of the newest stored one raises
        :class:`~lossgate.errors.InvalidInput` (facts may use it).

        **Schema upgrades re-gate** (:mod:`lossgate.consolidate.regate`). When the new version adds a
        critical predicate, raises a predicate's criticality or changes its type, then in
        the same transaction, for every subject of each tenant in ``tenants``: the
        published summary gated under an older version is re-checked against the new
        must-preserve set (it stays if it passes; if not it goes ``stale``, recall falls
        back to the raw layer and a rebuild is queued), and candidates gated under an
        older version go ``stale``. The registry is global but the summaries belong to
        tenants (on PostgreSQL a transaction sees one tenant's rows), so the tenants are
        named; :meth:`regate` does the same for a tenant later. Whatever the tenants, the
        switch never publishes a summary gated under a version the upgrade outdated.
        """
        registry = _registry_of(source)
        with self.store.write() as tx:
            self._store_registry(tx, registry, tenants)
        return registry

    def extend_predicates(self, source: Registry | str | dict, *, tenants: Iterable[str] = ()) -> Registry:
        """Load a registry document (a TOML path, a document or a :class:`Registry`) on top of
        the newest stored registry, by :mod:`lossgate.model.registry_overlay`'s rule: its predicates and guard
        rules are added; one the stored registry defines otherwise is a
        :class:`~lossgate.errors.RegistryConflict` unless its table says ``override = true``;
        nothing is removed. The result is stored as the next version (re-gating ``tenants`` as
        :meth:`load_predicates` does) and returned; a document that changes nothing stores
        nothing and returns the stored registry. On a store with no registry, this memory's
        default (the starter registry, from :func:`open`) is stored first and extended."""
        from lossgate.model.registry_overlay import overlay

        data = source.document() if isinstance(source, Registry) else \
            source if isinstance(source, dict) else read_registry_document(source)
        with self.store.write() as tx:
            base = self.registries.needed(tx)
            extended = overlay(base, data)
            if extended is None:
                assert base is not None  # overlay changes nothing only where there is a base
                return base
            self._store_registry(tx, extended, tenants)
        return extended

    def _store_registry(self, tx: "WriteTx", registry: Registry, tenants: Iterable[str]) -> None:
        """Store ``registry`` in ``tx`` by :meth:`load_predicates`' rules, re-gating ``tenants``."""
        doc = registry.document()
        before = self.registries.current(tx)
        if before is not None and registry.version > before.version:
            dropped = sorted(set(before.document()["predicates"]) - set(doc["predicates"]))
            if dropped:
                # facts of any tenant may use them: a subject holding one could never be
                # consolidated, superseded or recovered again
                raise InvalidInput(
                    f"registry v{registry.version} drops {', '.join(dropped[:5])} of v{before.version}: a "
                    "predicate is never removed (facts may use it); keep it, with a description saying "
                    "it is retired" + ("; " + _EXTEND_HINT if is_starter(before.document()) else ""))
        stored = tx.registry_document(registry.version) if before is not None else None
        if stored is not None and content_hash(stored) != content_hash(doc):
            raise IdempotencyConflict(
                f"registry version {registry.version} is already stored with different content"
                + (" (the starter registry); " + _EXTEND_HINT if is_starter(stored) else ""))
        tx.save_registry(registry.version, doc, content_hash(doc))
        latest = self.registries.current(tx)
        if latest is not None and latest.version == registry.version and tenants:
            from lossgate.consolidate.regate import regate_tenant  # the gate: loaded on first use

            now = utcnow()
            for tenant_id in dict.fromkeys(tenants):
                regate_tenant(tx, tenant_id, latest, now=now)

    @checked_args
    def regate(self, tenant_id: str, subject_id: str | None = None) -> "list[RegateResult]":
        """Re-gate a tenant's summaries (one subject's, with ``subject_id``) gated under a
        registry version the newest one outdated, in one transaction (:mod:`lossgate.consolidate.regate`).
        Returns one result per artifact examined."""
        from lossgate.consolidate.regate import regate_tenant

        with self.store.write() as tx:
            registry = self.registries.current(tx)
            if registry is None:
                raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
            return regate_tenant(tx, tenant_id, registry, now=utcnow(),
                                        subjects=None if subject_id is None else [subject_id])

    @property
    def registry(self) -> Registry | None:
        """The newest stored predicate registry, or ``None``."""
        with self.store.read() as tx:
            return self.registries.current(tx)

    # -- the short path: one tenant's view (lossgate.api.tenancy) --------------------------------
    def tenant(self, tenant_id: str) -> TenantView:
        """This memory seen through ``tenant_id``: :meth:`~lossgate.api.tenancy.TenantView.add` and
        :meth:`~lossgate.api.tenancy.TenantView.search` take a subject, never a tenant."""
        return TenantView(self, tenant_id)

    def add(self, subject_id: str, messages: Iterable[str | dict[str, Any] | ChatMessage], *,
            extractor: "Extractor | None" = None) -> Added:
        """Append chat messages to the subject of the memory's tenant, then extract facts from
        them (:meth:`lossgate.api.tenancy.TenantView.add`). Raises
        :class:`~lossgate.errors.TenantNotBound` on a memory opened without ``tenant``."""
        return self._view("add").add(subject_id, messages, extractor=extractor)

    def search(self, subject_id: str, query: str, *, k: int = 20, budget: int | None = None) -> Found:
        """Recall the subject of the memory's tenant for ``query``: the rendered block and the
        hits (:meth:`lossgate.api.tenancy.TenantView.search`). Raises
        :class:`~lossgate.errors.TenantNotBound` on a memory opened without ``tenant``."""
        return self._view("search").search(subject_id, query, k=k, budget=budget)

    def _view(self, call: str) -> TenantView:
        if self._bound is None:
            raise TenantNotBound(f"memory.{call} needs a tenant: open the memory with lossgate.open(url, "
                                 f"tenant=...), or call memory.tenant(TENANT).{call}(...)")
        return self._bound

    # -- writes ------------------------------------------------------------------------
    def transaction(self) -> AbstractContextManager[Ledger]:
        """Several lifecycle operations in one transaction: all commit or none do
        (:func:`lossgate.ledger.lifecycle.transaction`)."""
        return ledger.transaction(self.store, registries=self.registries)

    def append(self, events: Iterable[NewEvent]) -> AppendResult:
        """Append events (a batch may span subjects). See :meth:`Ledger.append`."""
        with self.transaction() as led:
            return led.append(events)

    def assert_fact(self, fact: NewFact) -> Fact:
        """Assert one fact. Raises on an unknown predicate, a wrong type or a missing source."""
        with self.transaction() as led:
            return led.assert_fact(fact)

    def assert_facts(self, facts: Iterable[NewFact]) -> list[Fact]:
        with self.transaction() as led:
            return led.assert_facts(facts)

    @checked_args
    def supersede(self, tenant_id: str, subject_id: str, old_fact_id: str, new: NewFact) -> Fact:
        """Replace an active fact with a newer one; the old one is kept as ``superseded``."""
        with self.transaction() as led:
            return led.supersede(tenant_id, subject_id, old_fact_id, new)

    @checked_args
    def delete_fact(self, tenant_id: str, subject_id: str, fact_id: str, *, reason: str = "") -> Fact:
        """Delete a fact: content purged, tombstone (id, hash) kept."""
        with self.transaction() as led:
            return led.delete_fact(tenant_id, subject_id, fact_id, reason=reason)

    @checked_args
    def delete_event(self, tenant_id: str, subject_id: str, event_id: str, *, reason: str = "") -> Event:
        """Delete an event: content purged, tombstone kept, unsupported facts leave the active set."""
        with self.transaction() as led:
            return led.delete_event(tenant_id, subject_id, event_id, reason=reason)

    @checked_args
    def revoke_event(self, tenant_id: str, subject_id: str, event_id: str, *, reason: str = "") -> Event:
        """Revoke an event: kept for audit, out of the authorized view."""
        with self.transaction() as led:
            return led.revoke_event(tenant_id, subject_id, event_id, reason=reason)

    @checked_args
    def set_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust, *, reason: str = "") -> Event:
        """Change an event's trust level (moves the epoch)."""
        if trust not in get_args(Trust):
            raise InvalidInput(f"trust {trust!r} is not one of {list(get_args(Trust))}")
        with self.transaction() as led:
            return led.set_trust(tenant_id, subject_id, event_id, trust, reason=reason)

    # -- taint policies ----------------------------------------------------------------------
    @checked_args
    def set_taint_policy(self, tenant_id: str, policy_id: str, *, trust: Trust, kind: EventKind | None = None,
                         actor: str | None = None, reason: str = "") -> TaintOutcome:
        """Set or upgrade a tenant-level taint policy: every event of the tenant of ``kind``
        by ``actor`` (at least one of the two) gets ``trust``, now and when appended later.
        In one transaction: the policy's new version is stored, the matching events change
        trust, facts that now claim more than their sources are recorded again at their
        trust (quoted when untrusted), derived artifacts go stale, rebuilds are queued and
        each subject's log says so (:meth:`lossgate.ledger.lifecycle.Ledger.set_taint_policy`)."""
        if trust not in get_args(Trust):
            raise InvalidInput(f"trust {trust!r} is not one of {list(get_args(Trust))}")
        if kind is not None and kind not in get_args(EventKind):
            raise InvalidInput(f"kind {kind!r} is not one of {list(get_args(EventKind))}")
        with self.transaction() as led:
            return led.set_taint_policy(tenant_id, policy_id, trust=trust, kind=kind, actor=actor, reason=reason)

    @checked_args
    def taint_policies(self, tenant_id: str, *, history: bool = False) -> list[TaintPolicy]:
        """The tenant's taint policies in force (the newest version of each), by policy id;
        with ``history``, every version ever stored."""
        with self.store.read() as tx:
            stored = tx.taint_policies(tenant_id)
        if history:
            return stored
        return list({p.policy_id: p for p in stored}.values())

    # -- tiers (hot, warm, cold) ----------------------------------------------------------
    @checked_args
    def tier_policy(self, tenant_id: str) -> "TierPolicy":
        """The tenant's tier clock: its dormancy and cold horizon (defaults if never set)."""
        from lossgate.ledger import tiers

        with self.store.read() as tx:
            return tiers.policy(tx, tenant_id)

    @checked_args
    def set_tier_policy(self, tenant_id: str, *, dormancy: timedelta | None = None,
                        cold_after: timedelta | None = None) -> "TierPolicy":
        """Set the tenant's dormancy (hot to warm) and cold horizon (warm to cold); an
        argument left ``None`` keeps its current value."""
        from lossgate.ledger import tiers

        with self.store.write() as tx:
            current = tiers.policy(tx, tenant_id)
            new = tiers.TierPolicy(dormancy=current.dormancy if dormancy is None else dormancy,
                                   cold_after=current.cold_after if cold_after is None else cold_after)
            tiers.set_policy(tx, tenant_id, new, now=utcnow())
        return new

    @checked_args
    def retention(self, tenant_id: str) -> "RetentionPolicy":
        """The tenant's retention policy: how long raw events live, by kind and actor
        (:mod:`lossgate.ledger.retention`; no rule, version 0, if never set)."""
        from lossgate.ledger import retention

        with self.store.read() as tx:
            return retention.policy(tx, tenant_id)

    @checked_args
    def set_retention(self, tenant_id: str, events: "Sequence[dict[str, Any] | RetentionRule]", *,
                      records: timedelta | None = None) -> "RetentionPolicy":
        """Set the tenant's retention: ``events``, rules ``{"kind": ..., "actor": ..., "ttl":
        timedelta}`` (the first that matches an event decides; an event none matches is kept),
        and ``records``, how long recall records, guard results and responses live (``None``:
        kept). The policy's version counts up; earlier versions are kept."""
        from lossgate.ledger import retention

        with self.store.write() as tx:
            return retention.set_policy(tx, tenant_id, tuple(events), records=records, now=utcnow())

    @checked_args
    def expire(self, tenant_id: str, subject_id: str | None = None, *,
               now: datetime | None = None) -> "list[Expiry]":
        """Delete the events of a subject (of every subject of the tenant, if ``None``) past
        their time to live under the tenant's retention policy: each a deletion with all its
        guarantees, logged with the policy's version and rule; a source of an active critical
        fact is kept. One transaction per subject."""
        from lossgate.ledger import retention

        at = checked_instant(now, "now") if now is not None else utcnow()
        with self.store.read() as tx:
            current = retention.policy(tx, tenant_id)
            subjects = [subject_id] if subject_id is not None else tx.subjects(tenant_id)
        out = []
        for s in subjects if current.events or current.records else []:
            with self.transaction() as led:
                due, kept = retention.expiring(led.tx, tenant_id, s, current, at)
                for e, rule in due:
                    led.delete_event(tenant_id, s, e.event_id,
                                     reason=f"{retention.EXPIRY_REASON}: policy v{current.version} ({rule.describe()})")
                forgotten = led.tx.forget_records(tenant_id, s, before=before(at, current.records)) \
                    if current.records else 0
            out.append(retention.Expiry(tenant_id, s, [e.event_id for e, _ in due], kept, forgotten))
        return out

    @checked_args
    def narrative_policy(self, tenant_id: str) -> str:
        """What becomes of a model's narrative sentence on a topic only the ledger states
        (:mod:`lossgate.gate.narrative`): ``omit`` (the default) or ``refuse``."""
        from lossgate.consolidate.narrative_policy import narrative_policy

        with self.store.read() as tx:
            return narrative_policy(tx, tenant_id)

    @checked_args
    def set_narrative_policy(self, tenant_id: str, policy: str) -> str:
        """Set the tenant's narrative policy: ``omit`` publishes a narrative without such a
        sentence and keeps it, with why, on the attempt; ``refuse`` fails the attempt."""
        from lossgate.consolidate.narrative_policy import set_narrative_policy

        with self.store.write() as tx:
            return set_narrative_policy(tx, tenant_id, policy, now=utcnow())

    @checked_args
    def demote(self, tenant_id: str, subject_id: str | None = None, *,
               now: datetime | None = None) -> "list[Demotion]":
        """Move the tenant's events (one subject's, with ``subject_id``) between tiers at
        ``now`` (default: the current time): dormant hot events a fresh gated summary
        covers go warm, warm events past the cold horizon go cold, and dormant hot events
        held back by a failed consolidation or a stale summary have their retention
        extended, with the reason in the log (:mod:`lossgate.ledger.tiers`)."""
        from lossgate.ledger import tiers

        at = utcnow() if now is None else checked_instant(now, "now")
        return tiers.demote(self.store, tenant_id, subjects=None if subject_id is None else [subject_id], now=at)

    # -- operations: quarantine and forward recovery ----------------------------------------
    @checked_args
    def quarantine(self, tenant_id: str, subject_id: str, artifact_id: str, *, reason: str = "") -> "Quarantined":
        """Take a published artifact (the subject's summary, or a part of it) out of recall at
        once; coverage does not move backwards (:mod:`lossgate.policy.quarantine`)."""
        from lossgate.policy.quarantine import quarantine

        with self.store.write() as tx:
            return quarantine(tx, tenant_id, subject_id, artifact_id, reason=reason, now=utcnow())

    @checked_args
    def recover(self, tenant_id: str, subject_id: str, *, compressor: "Compressor | None" = None,
                config: "ConsolidationConfig | None" = None) -> Attempt:
        """Build and publish a new summary from the currently valid inputs with the given
        compressor (default: the deterministic one) and configuration, from scratch (no
        parent, no reused part), through the compare-and-swap: its coverage is never below
        the alias's. The operator who recovers stands for the tenant's review, if it has one
        (:mod:`lossgate.policy.quarantine`)."""
        from dataclasses import replace

        from lossgate.consolidate.pipeline import ConsolidationConfig

        chosen = replace(config or ConsolidationConfig(), incremental=False, reuse_parts=False)
        # the operator who recovers is the person a tenant's review waits for
        return self.consolidator(compressor=compressor, config=chosen, reviewed=True).run(tenant_id, subject_id)

    # -- extraction ------------------------------------------------------------------------
    @checked_args
    def extract(self, tenant_id: str, subject_id: str, *, extractor: "Extractor | None" = None) -> list[Proposal]:
        """Propose facts from the subject's events not read before (default: the deterministic
        :class:`~lossgate.extract.AtomExtractor`) and record the proposals with their outcome:
        asserted at once or kept for review by each predicate's policy (see :mod:`lossgate.extract`)."""
        from lossgate.extract import extract

        registry = self.registry
        if registry is None and self.registries.default is not None:
            with self.store.write() as tx:
                registry = self.registries.needed(tx)
        if registry is None:
            raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
        return extract(self.store, registry, tenant_id, subject_id, extractor=extractor)

    @checked_args
    def proposals(self, tenant_id: str, subject_id: str, *, statuses: Sequence[str] | None = None) -> list[Proposal]:
        """The subject's extraction proposals, oldest first (``statuses=["review"]``: waiting for a person)."""
        with self.store.read() as tx:
            return tx.proposals(tenant_id, subject_id, statuses=statuses)

    @checked_args
    def accept_proposal(self, tenant_id: str, subject_id: str, proposal_id: str) -> Proposal:
        """Accept a proposal waiting for review: it becomes a fact (``accepted``, or ``conflict``)."""
        from lossgate.extract import accept_proposal

        with self.transaction() as led:
            return accept_proposal(led, tenant_id, subject_id, proposal_id)

    @checked_args
    def reject_proposal(self, tenant_id: str, subject_id: str, proposal_id: str, *, reason: str = "") -> Proposal:
        """Reject a proposal waiting for review; it is kept with the reason."""
        from lossgate.extract import reject_proposal

        with self.transaction() as led:
            return reject_proposal(led, tenant_id, subject_id, proposal_id, reason=reason)

    # -- reads -------------------------------------------------------------------------
    @checked_args
    def clock(self, tenant_id: str, subject_id: str) -> Clock:
        with self.store.read() as tx:
            return tx.clock(tenant_id, subject_id)

    @checked_args
    def facts(self, tenant_id: str, subject_id: str, *, statuses: Sequence[FactStatus] | None = ACTIVE,
              predicate: str | None = None) -> list[Fact]:
        """Facts of one subject; active ones by default, every status with ``statuses=None``."""
        with self.store.read() as tx:
            return tx.facts(tenant_id, subject_id, statuses=statuses, predicate=predicate)

    @checked_args
    def fact(self, tenant_id: str, subject_id: str, fact_id: str) -> Fact:
        with self.store.read() as tx:
            found = tx.facts(tenant_id, subject_id, ids=[fact_id])
        if not found:
            raise NotFound(f"fact {shown_id(fact_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
        return found[0]

    @checked_args
    def events(self, tenant_id: str, subject_id: str, *, states: Sequence[EventState] | None = None,
               after_seq: int | None = None, limit: int | None = None,
               ids: Sequence[str] | None = None) -> list[Event]:
        """Events of one subject in seq order (only ``states``, if given; only ``ids``, if
        given), those after ``after_seq``, at most ``limit``."""
        with self.store.read() as tx:
            return tx.events(tenant_id, subject_id, ids=ids, states=states, after_seq=after_seq, limit=limit)

    @checked_args
    def conflicts(self, tenant_id: str, subject_id: str, *, unresolved_only: bool = True) -> list[Conflict]:
        with self.store.read() as tx:
            return tx.conflicts(tenant_id, subject_id, unresolved_only=unresolved_only)

    @checked_args
    def history(self, tenant_id: str, subject_id: str, fact_id: str) -> FactHistory:
        """The fact's whole supersession chain, oldest first, with conflicts and log lines."""
        with self.store.read() as tx:
            start = tx.facts(tenant_id, subject_id, ids=[fact_id])
            if not start:
                raise NotFound(f"fact {shown_id(fact_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
            chain = [start[0]]
            while chain[0].supersedes:
                chain[:0] = tx.facts(tenant_id, subject_id, ids=[chain[0].supersedes])
            while chain[-1].superseded_by:
                chain += tx.facts(tenant_id, subject_id, ids=[chain[-1].superseded_by])
            ids = [f.fact_id for f in chain]
            conflicts = {c.conflict_id: c for i in ids for c in tx.conflicts(tenant_id, subject_id, fact_id=i)}
            log = tx.log(tenant_id, subject_id, target_ids=ids + list(conflicts))
        return FactHistory(fact_id=fact_id, chain=tuple(chain), conflicts=tuple(conflicts.values()), log=tuple(log))

    # -- consolidation and recall --------------------------------------------------------
    def consolidator(self, *, compressor: "Compressor | None" = None, config: "ConsolidationConfig | None" = None,
                     hooks: "Hooks | None" = None, judge: "ModelJudge | None" = None,
                     shadow: bool = False, reviewed: bool = False, exploratory: bool = False,
                     registry: Registry | None = None) -> "Consolidator":
        """A :class:`~lossgate.consolidate.pipeline.Consolidator` bound to this memory's store."""
        from lossgate.consolidate.pipeline import Consolidator

        return Consolidator(self.store, compressor=compressor, config=config, hooks=hooks, judge=judge,
                            registries=self.registries, shadow=shadow, reviewed=reviewed, exploratory=exploratory,
                            registry=registry)

    @checked_args
    def consolidate(self, tenant_id: str, subject_id: str, *, compressor: "Compressor | None" = None,
                    config: "ConsolidationConfig | None" = None, judge: "ModelJudge | None" = None) -> Attempt:
        """Build, gate and publish a summary of one subject. Returns the attempt: its status
        (``published``, ``rejected`` by the gate, ``conflict`` at the switch, ``error``),
        gate outcome, violations, artifact id and the manifest's input root. With a
        ``judge`` (:mod:`lossgate.judge`), a model also reads the narrative; if it cannot,
        the attempt is an error and nothing is published.

        Without ``compressor``, the tenant's live configuration chooses it (the
        deterministic compressor if it names none); with a shadow configuration, that one
        also builds its own artifact, never published; with review, a gated summary waits
        for :meth:`approve` (:mod:`lossgate.policy.rollout`)."""
        return self.run_job(tenant_id, subject_id, compressor=compressor, config=config, judge=judge)

    def run_job(self, tenant_id: str, subject_id: str, *, compressor: "Compressor | None" = None,
                fallback: "Consolidator | None" = None, config: "ConsolidationConfig | None" = None,
                judge: "ModelJudge | None" = None) -> Attempt:
        """One consolidation job as the tenant's rollout wants it: ``compressor`` if given,
        else the tenant's live one, else ``fallback`` (a worker's own consolidator) or the
        default; then the tenant's shadow configuration, if any (its failures are logged,
        never raised: the live result stands)."""
        from lossgate.policy import rollout

        with self.store.read() as tx:
            plan = rollout.rollout(tx, tenant_id)
        if compressor is None and plan.live is None and fallback is not None:
            attempt = fallback.run(tenant_id, subject_id)
        else:
            chosen = compressor or (self.compressors(plan.live) if plan.live else None)
            attempt = self.consolidator(compressor=chosen, config=config, judge=judge).run(tenant_id, subject_id)
        if plan.shadow:
            try:
                from dataclasses import replace

                from lossgate.consolidate.pipeline import ConsolidationConfig

                # the direct path: the shadow reads the valid inputs, never the live summary
                direct = replace(config or ConsolidationConfig(), incremental=False)
                shadow = self.consolidator(compressor=self.compressors(plan.shadow), config=direct, shadow=True,
                                           exploratory=plan.shadow_gate == "exploratory", registry=plan.registry())
                shadow.run(tenant_id, subject_id)
            except Exception as exc:  # noqa: BLE001 - a shadow's failure never touches the live result
                log.warning("shadow consolidation of %s/%s with %s failed: %s", tenant_id, subject_id, plan.shadow,
                            exc if isinstance(exc, LossgateError) else crash_reason(exc))
        return attempt

    # -- rollout: live, shadow and review (lossgate.policy.rollout) ----------------------------
    @checked_args
    def rollout(self, tenant_id: str) -> "Rollout":
        """The tenant's consolidation configuration: live and shadow compressors, review."""
        from lossgate.policy import rollout

        with self.store.read() as tx:
            return rollout.rollout(tx, tenant_id)

    @checked_args
    def set_rollout(self, tenant_id: str, *, live: str | None = None, shadow: str | None = None,
                    review: bool | None = None, clear_shadow: bool = False, clear_live: bool = False,
                    shadow_gate: str | None = None, shadow_registry: Registry | str | dict | None = None,
                    clear_shadow_registry: bool = False) -> "Rollout":
        """Change the tenant's configuration: ``live`` or ``shadow`` (compressor specs),
        ``review``, the shadow lane's gate (``release`` or ``exploratory``) and the registry it
        tries (as :meth:`load_predicates` reads one; kept in the rollout, never loaded); an argument left ``None`` keeps its value (``clear_shadow`` /
        ``clear_live`` / ``clear_shadow_registry`` unset one; clearing the shadow clears its
        gate and registry too). Checked by loading each new spec and parsing the registry, so
        a switch never leaves a tenant on a compressor or registry that cannot be made."""
        from pydantic import ValidationError

        from lossgate.policy import rollout

        for cleared, given, what in ((clear_live, live is not None, "live"),
                                     (clear_shadow, shadow is not None or shadow_gate is not None
                                      or shadow_registry is not None, "shadow"),
                                     (clear_shadow_registry, shadow_registry is not None, "shadow registry")):
            if cleared and given:
                raise InvalidInput(f"set_rollout: clearing the {what} contradicts setting it")
        for spec in (live, shadow):
            if spec is not None:
                self.compressors(rollout.valid_spec(spec))
        tried = _registry_of(shadow_registry) if shadow_registry is not None else None
        with self.store.write() as tx:
            loaded = self.registries.current(tx)
            if tried is not None and loaded is not None and (gone_from := sorted(set(loaded.predicates)
                                                                                 - set(tried.predicates))):
                # facts may use them: the shadow lane could not consolidate their subjects
                raise InvalidInput(f"shadow registry v{tried.version} drops {', '.join(gone_from[:5])} of the "
                                   f"loaded v{loaded.version}: a predicate is never removed (facts may use it)")
            now = rollout.rollout(tx, tenant_id)
            gone = clear_shadow or clear_shadow_registry
            try:
                new = rollout.Rollout(
                    live=None if clear_live else (live if live is not None else now.live),
                    shadow=None if clear_shadow else (shadow if shadow is not None else now.shadow),
                    review=now.review if review is None else review,
                    shadow_gate="release" if clear_shadow else (shadow_gate if shadow_gate is not None
                                                                else now.shadow_gate),
                    shadow_registry=None if gone else (tried.document() if tried is not None
                                                       else now.shadow_registry))
            except ValidationError as exc:
                raise InvalidInput(f"rollout of {tenant_id!r}: {exc.errors()[0]['msg']}") from None
            return rollout.set_rollout(tx, tenant_id, new, now=utcnow())

    @checked_args
    def approve(self, tenant_id: str, subject_id: str, artifact_id: str) -> Attempt | None:
        """Publish a summary waiting for review through the switch; returns its attempt, marked
        ``published`` or ``conflict`` with the switch's reason."""
        from lossgate.policy import rollout

        with self.store.write() as tx:
            published, reason = rollout.approve(tx, tenant_id, subject_id, artifact_id, now=utcnow())
            attempt = next((a for a in reversed(tx.attempts(tenant_id, subject_id))
                            if a.artifact_id == artifact_id), None)
            if attempt is not None:
                attempt = attempt.model_copy(update={"status": "published" if published else "conflict",
                                                     "reason": "approved" if published else reason,
                                                     "finished_at": utcnow()})
                attempt = lineage.save_attempt(tx, attempt)
        return attempt

    @checked_args
    def refuse(self, tenant_id: str, subject_id: str, artifact_id: str, *, reason: str = "") -> None:
        """Refuse a summary waiting for review: kept, never published, never compressor input."""
        from lossgate.policy import rollout

        with self.store.write() as tx:
            rollout.refuse(tx, tenant_id, subject_id, artifact_id, reason=reason, now=utcnow())

    @checked_args
    def shadow_report(self, tenant_id: str) -> "list[ShadowRow]":
        """Each subject's latest shadow attempt beside its latest live one (:mod:`lossgate.policy.rollout`)."""
        from lossgate.consolidate.tokens import default_counter
        from lossgate.policy import rollout

        with self.store.read() as tx:
            return rollout.shadow_report(tx, tenant_id, default_counter())

    @checked_args
    def recall(self, tenant_id: str, subject_id: str, *, query: str | None = None, k: int = 20,
               budget: int | None = None, context: bool = True, loss_aware: bool = True) -> RecallResult:
        """What an agent should read now: the fresh summary or raw fallback, critical facts always;
        with a query, the most relevant facts and events of every tier (see :mod:`lossgate.recall.read`),
        those the summary dropped a little ahead unless ``loss_aware`` is false."""
        from lossgate.recall.read import recall

        return recall(self.store, tenant_id, subject_id, query=query, k=k, budget=budget, context=context,
                      embedder=self.embedder, loss_aware=loss_aware, reranker=self.reranker)

    @checked_args
    def guard(self, tenant_id: str, subject_id: str, action: dict[str, Any], *,
              recall_id: str | None = None) -> GuardResult:
        """Check an agent's planned ``action`` (a JSON object) against the subject's active facts
        and open conflicts by the registry's guard rules, before the agent carries it out
        (:mod:`lossgate.guard`). The result, allowed or refused with each rule, field and fact
        (its value, qualifiers and sources), is stored, tied to ``recall_id`` when given (the
        recall the agent saw: it must be this subject's). Raises :class:`InvalidInput` for a
        malformed action or when no registry is loaded, :class:`NotFound` for an unknown recall."""
        from lossgate.guard import guard_action

        with self.store.write() as tx:
            registry = self.registries.needed(tx)
            if registry is None:
                raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
            if recall_id is not None and tx.recall_record(tenant_id, subject_id, recall_id) is None:
                raise NotFound(f"no recall {shown_id(recall_id)} of {tenant_id}/{subject_id}")
            facts = tx.facts(tenant_id, subject_id, statuses=ACTIVE)
            # only the sources of facts some guard rule reads can take an authority away
            sources = sorted({e for f in facts if any(r.reads(f.predicate) for r in registry.guards)
                              for e in f.source_event_ids})
            low_trust = frozenset(e.event_id for e in (tx.events(tenant_id, subject_id, ids=sources) if sources else [])
                                  if e.trust in ("tool", "untrusted"))
            result = guard_action(tenant_id, subject_id, action, facts,
                                  tx.conflicts(tenant_id, subject_id, unresolved_only=True), registry,
                                  recall_id=recall_id, low_trust=low_trust)
            tx.record_guard(result)
        return result

    @checked_args
    def embed(self, tenant_id: str, subject_id: str, *, rebuild: bool = False) -> "EmbedReport":
        """Compute the vectors the subject's valid events and active facts lack, with this
        memory's embedder (workers do it after consolidation); with ``rebuild``, drop the
        model's vectors of the subject first and embed everything again. Returns what was
        stored, dropped and skipped (:func:`lossgate.semantic.embed_pending`). Raises
        :class:`~lossgate.errors.ConfigError` when the memory has no embedder."""
        from lossgate.semantic import embed_pending

        if self.embedder is None:
            raise ConfigError("this memory has no embedder: lossgate.open(url, embedder=...) "
                              "or LOSSGATE_EMBEDDER=local|URL")
        return embed_pending(self.store, self.embedder, tenant_id, subject_id, rebuild=rebuild)

    @checked_args
    def alias(self, tenant_id: str, subject_id: str, *, lane: Lane = "live") -> Alias:
        """The subject's alias, or with ``lane="shadow"`` its shadow alias (what the tenant's
        shadow lane published last; recall never reads it)."""
        with self.store.read() as tx:
            return tx.alias(tenant_id, subject_id, lane=lane)

    @checked_args
    def artifact(self, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact:
        with self.store.read() as tx:
            found = tx.artifact(tenant_id, subject_id, artifact_id)
        if found is None:
            raise NotFound(f"artifact {shown_id(artifact_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
        return found

    @checked_args
    def artifacts(self, tenant_id: str, subject_id: str, *, states: Sequence[str] | None = None) -> list[Artifact]:
        with self.store.read() as tx:
            return tx.artifacts(tenant_id, subject_id, states=states)

    @checked_args
    def lineage(self, tenant_id: str, subject_id: str, artifact_id: str) -> LineageView:
        """An artifact (in any state, stale ones included: audit) with its inputs and parent chain."""
        with self.store.read() as tx:
            return lineage.view(tx, tenant_id, subject_id, artifact_id)

    @checked_args
    def attempts(self, tenant_id: str, subject_id: str) -> list[Attempt]:
        """Every consolidation attempt of the subject, failures included."""
        with self.store.read() as tx:
            return tx.attempts(tenant_id, subject_id)

    @checked_args
    def request_consolidation(self, tenant_id: str, subject_id: str, *, reason: str = "requested") -> bool:
        """Queue a rebuild of one subject for the workers; False if one is already pending."""
        now = utcnow()
        with self.store.write() as tx:
            tx.lock_clock(tenant_id, subject_id)
            return queue.requested(tx, tenant_id, subject_id, reason, now=now)

    @checked_args
    def jobs(self, tenant_id: str, subject_id: str | None = None, *,
             statuses: Sequence[str] | None = None) -> list[Job]:
        """Rebuild jobs of a subject, or of the whole tenant with ``subject_id=None``
        (``statuses=["review"]``: the subjects whose consolidation keeps failing)."""
        with self.store.read() as tx:
            return tx.jobs(tenant_id, subject_id, statuses=statuses)

    @checked_args
    def recalls(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[RecallRecord]:
        with self.store.read() as tx:
            return tx.recalls(tenant_id, subject_id, limit=limit)

    @checked_args
    def verify_recall(self, tenant_id: str, subject_id: str, recall_id: str) -> RecallVerification:
        """Whether what the recall ``recall_id`` returned is still what memory says:
        ``unchanged``, ``changed`` (a fact it returned superseded or revoked, its summary no
        longer the live one) or ``erased`` (something it returned deleted since), with each
        change, and whether its rendered block can be rebuilt (:mod:`lossgate.recall.attestation`).
        Raises :class:`NotFound` for a recall the subject does not have."""
        from lossgate.recall.attestation import verify_recall

        with self.store.read() as tx:
            return verify_recall(tx, tenant_id, subject_id, recall_id)

    # -- the response boundary: what the agent did with what it recalled ---------------------
    @checked_args
    def respond(self, tenant_id: str, subject_id: str, recall_id: str, *, answer: str | None = None,
                action: dict[str, Any] | None = None, guard_id: str | None = None) -> ResponseRecord:
        """Record what the agent finally answered (``answer``, text) or did (``action``, a JSON
        object), or both, after the recall ``recall_id`` of the subject, and after the guard
        result ``guard_id`` if it checked the action first (:mod:`lossgate.lineage.responses`): the
        evidence a diagnosis needs to tell an agent that ignored memory from memory that
        failed it. One transaction. Raises :class:`NotFound` for a recall or guard result the
        subject does not have, :class:`InvalidInput` for neither an answer nor an action, a
        malformed one, or a guard result checked for another recall. A response on a recall
        whose content was deleted since is stored redacted (its sha256 only)."""
        from lossgate.recall.attestation import check_recall
        from lossgate.lineage.responses import respond

        with self.store.write() as tx:
            recall = tx.recall_record(tenant_id, subject_id, recall_id)
            erased = None
            if recall is not None and recall.redacted is None and check_recall(tx, recall).state == "erased":
                erased = f"recall {recall_id} returned content deleted since"
            return respond(tx, tenant_id, subject_id, recall_id, answer=answer, action=action, guard_id=guard_id,
                           now=utcnow(), erased=erased)

    @checked_args
    def responses(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[ResponseRecord]:
        """The subject's response records, newest first."""
        with self.store.read() as tx:
            return tx.responses(tenant_id, subject_id, limit=limit)

    @checked_args
    def guard_results(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[GuardResult]:
        """The subject's guard results (:meth:`guard`), newest first."""
        with self.store.read() as tx:
            return tx.guard_results(tenant_id, subject_id, limit=limit)

    @checked_args
    def log(self, tenant_id: str, subject_id: str) -> list[LedgerEntry]:
        """The subject's operation log, oldest first (asserts, supersessions, deletions, epochs, publications)."""
        with self.store.read() as tx:
            return tx.log(tenant_id, subject_id)

    @checked_args
    def subjects(self, tenant_id: str) -> list[str]:
        """Admin listing of a tenant's subjects."""
        with self.store.read() as tx:
            return tx.subjects(tenant_id)

    # -- access: the HTTP service's API keys (lossgate.model.api_keys) -----------------------------
    @checked_args
    def create_api_key(self, tenant_id: str, *, scopes: Sequence[str], name: str = "") -> "tuple[ApiKey, str]":
        """A new API key for ``tenant_id`` with ``scopes`` (``read``, ``write``, ``admin``;
        each stands alone). Returns the stored key and its secret: the secret is not stored
        (only its sha256) and cannot be shown again."""
        from lossgate.model.api_keys import ApiKey, hash_secret, new_secret, parse_scopes

        from pydantic import ValidationError

        key_id, secret = new_secret()
        try:
            key = ApiKey(tenant_id=tenant_id, key_id=key_id, key_hash=hash_secret(secret),
                         scopes=parse_scopes(scopes), name=name, created_at=utcnow())
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            raise InvalidInput(f"API key {'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None
        with self.store.write() as tx:
            tx.insert_api_key(key)
        return key, secret

    @checked_args
    def api_keys(self, tenant_id: str) -> "list[ApiKey]":
        """The tenant's API keys, revoked ones included, oldest first."""
        with self.store.read() as tx:
            return tx.api_keys(tenant_id)

    @checked_args
    def revoke_api_key(self, tenant_id: str, key_id: str) -> "ApiKey":
        """Revoke one of the tenant's keys (at once: the next request with it is refused);
        revoking a revoked key changes nothing. Raises :class:`~lossgate.errors.NotFound`
        for a key the tenant does not have."""
        with self.store.write() as tx:
            tx.revoke_api_key(tenant_id, key_id, at=utcnow())
            found = [k for k in tx.api_keys(tenant_id) if k.key_id == key_id]
        if not found:
            raise NotFound(f"API key {shown_id(key_id)} does not exist for tenant {tenant_id!r}")
        return found[0]

    def authenticate(self, secret: str) -> "ApiKey | None":
        """The active key whose secret is ``secret``, or ``None`` (unknown, malformed or
        revoked). The one read that finds a tenant instead of being given one."""
        from lossgate.model.api_keys import hash_secret, looks_like_secret

        if not isinstance(secret, str) or not looks_like_secret(secret):
            return None
        with self.store.read() as tx:
            key = tx.api_key_by_hash(hash_secret(secret))
        return key if key is not None and key.active else None

    def compact(self) -> CompactReport:
        """Run the maintenance after which deleted text is gone from the database's files,
        not only from its rows (see :meth:`~lossgate.store.protocol.Store.compact`)."""
        return self.store.compact()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _no_environment_compressors(spec: str) -> "Compressor":
    """A rollout's compressor from its spec, with no environment (see :class:`Memory`)."""
    from lossgate.consolidate.factory import load_compressor

    return load_compressor(spec, environ={})


def open(url: str | None = None, *, migrate: bool = True,  # noqa: A001 - mirrors sqlite3.connect/open
         embedder: "Embedder | None" = None, compressors: "Callable[[str], Compressor] | None" = None,
         create: bool = True, tenant: str | None = None, starter: bool = True,
         reranker: "Reranker | None" = None) -> Memory:
    """Open lossgate memory at ``url`` (default ``sqlite:///lossgate.db``).

    A SQLite file that does not exist is created, as :func:`sqlite3.connect` does; with
    ``create=False`` it is a :class:`~lossgate.errors.ConfigError` naming the path instead.
    The schema is created or upgraded on open unless ``migrate=False``. With an
    ``embedder`` (:mod:`lossgate.semantic`), recall ranks queries by meaning as well; with a
    ``reranker``, it reorders the top of a query's hits by the reranker's scores.
    ``compressors`` makes a tenant rollout's compressors (see :class:`Memory`).

    ``tenant`` binds the memory to one tenant, for :meth:`Memory.add` and
    :meth:`Memory.search`. On a store with no predicate registry, the starter registry
    (:mod:`lossgate.model.starter`) is stored the first time an operation needs one (asserting a
    fact, extraction, consolidation, a guard check), unless a registry is loaded before;
    ``starter=False`` leaves such a store without one. A store that has a registry keeps it.
    """
    if tenant is not None:
        checked_tenant(tenant)  # before the store is opened
    memory = Memory(open_store(url, create=create), embedder=embedder, compressors=compressors,
                    default_registry=starter_registry() if starter else None, tenant_id=tenant, reranker=reranker)
    if migrate:
        memory.migrate()
    return memory


def _registry_of(source: Registry | str | dict) -> Registry:
    """A registry given as one, as its document, or as the path of its TOML file."""
    if isinstance(source, Registry):
        return source
    return parse_registry(source) if isinstance(source, dict) else load_registry(source)
