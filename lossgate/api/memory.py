"""The Python API: :func:`lossgate.open` returns a :class:`Memory`.

``Memory`` holds a store and, optionally, an embedder (hybrid semantic search) and a reranker.
It has the calls an agent application makes as it serves a request; what an operator
does (keys, rollout, policies, retention, tiers, inspection, maintenance) is on
``memory.admin`` (:class:`~lossgate.api.admin.Admin`). Each write method runs one
lifecycle operation in its own transaction; :meth:`Memory.transaction`
yields a :class:`~lossgate.ledger.lifecycle.Ledger` for several operations that must
commit together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from lossgate.api.admin import Admin
from lossgate.api.tenancy import Added, Found, TenantView, checked_tenant
from lossgate.errors import InvalidInput, NotFound, TenantNotBound
from lossgate.ledger import lifecycle as ledger
from lossgate.ledger.lifecycle import Ledger
from lossgate.lineage import queue
from lossgate.model.derived_records import Attempt, GuardResult, RecallResult, RecallVerification, ResponseRecord
from lossgate.model.limits import checked_args, shown_id
from lossgate.model.messages import ChatMessage
from lossgate.model.records import (
    AppendResult,
    Conflict,
    Event,
    EventState,
    Fact,
    FactHistory,
    FactStatus,
    NewEvent,
    NewFact,
    Proposal,
    Trust,
    utcnow,
)
from lossgate.model.registry import Registry, RegistryCache
from lossgate.model.starter import starter_registry
from lossgate.store import Store, open_store

if TYPE_CHECKING:
    from lossgate.consolidate.compressor import Compressor
    from lossgate.consolidate.pipeline import ConsolidationConfig
    from lossgate.extract import Extractor
    from lossgate.judge import ModelJudge
    from lossgate.semantic import Embedder
    from lossgate.semantic.rerankers import Reranker

__all__ = ["Memory", "open"]

ACTIVE: tuple[FactStatus, ...] = ("active",)


class Memory:
    """Long-term memory for agents, backed by one store.

    The calls of an agent application, in the order a request makes them:

    * one tenant's short path: :meth:`tenant`, :meth:`add`, :meth:`search`;
    * writes: :meth:`append`, :meth:`assert_fact`, :meth:`assert_facts`, :meth:`supersede`,
      :meth:`delete_fact`, :meth:`delete_event`, :meth:`revoke_event`, :meth:`set_trust`,
      :meth:`extract`; several in one transaction: :meth:`transaction`;
    * reads: :meth:`facts`, :meth:`fact`, :meth:`events`, :meth:`conflicts`, :meth:`history`;
    * consolidation and recall: :meth:`consolidate`, :meth:`request_consolidation`, :meth:`recall`;
    * the response boundary: :meth:`guard`, :meth:`respond`, :meth:`verify_recall`.

    Administration: ``memory.admin`` (:class:`~lossgate.api.admin.Admin`): the schema and
    registry, API keys, rollout and review, policies, retention and tiers, workers' calls,
    quarantine and recovery, inspection (artifacts, lineage, attempts, jobs, logs), compaction.

    ``store``, ``embedder``, ``reranker``, ``registries`` and ``compressors`` are what the
    memory was opened with, for code built on lossgate (the workers, the service, a store's
    own tests). They are not a second way in: a write through ``store`` skips what the methods
    do around it (stale marking, the purge of derived copies, the log), so a summary can go on
    stating what such a write removed. Change memory through the methods.

    Methods marked ``@checked_args`` refuse a NUL or a lone surrogate in any string
    argument, a ``tenant_id`` or ``subject_id`` that breaks the id rule, and a ``reason``
    or ``query`` over 4,096 characters, with :class:`~lossgate.errors.InvalidInput` before
    they touch the store (records carry their own checks: :mod:`lossgate.model.limits`). An
    event, fact or artifact id names a stored record and is looked up as given.
    """

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        compressors: Callable[[str], Compressor] | None = None,
        default_registry: Registry | None = None,
        tenant_id: str | None = None,
        reranker: Reranker | None = None,
    ) -> None:
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
        self._admin = Admin(self)

    @property
    def admin(self) -> Admin:
        """The operator's calls on this memory (:class:`~lossgate.api.admin.Admin`)."""
        return self._admin

    @property
    def tenant_id(self) -> str | None:
        """The tenant this memory is bound to (``lossgate.open(url, tenant=...)``), or ``None``."""
        return self._bound.tenant_id if self._bound is not None else None

    # -- the short path: one tenant's view (lossgate.api.tenancy) --------------------------------
    def tenant(self, tenant_id: str) -> TenantView:
        """This memory seen through ``tenant_id``: :meth:`~lossgate.api.tenancy.TenantView.add` and
        :meth:`~lossgate.api.tenancy.TenantView.search` take a subject, never a tenant."""
        return TenantView(self, tenant_id)

    def add(
        self,
        subject_id: str,
        messages: Iterable[str | dict[str, Any] | ChatMessage],
        *,
        extractor: Extractor | None = None,
    ) -> Added:
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
            raise TenantNotBound(
                f"memory.{call} needs a tenant: open the memory with lossgate.open(url, "
                f"tenant=...), or call memory.tenant(TENANT).{call}(...)"
            )
        return self._bound

    # -- writes: each one Ledger operation in its own transaction -------------------------
    # The rules of each are written once, on the Ledger method of the same name; a write
    # here is that method run in a transaction of its own. Several that must commit
    # together are called on the ledger that transaction() yields instead.
    def transaction(self) -> AbstractContextManager[Ledger]:
        """Several lifecycle operations in one transaction: all commit or none do
        (:func:`lossgate.ledger.lifecycle.transaction`). The :class:`Ledger` it yields has
        the write methods below, with the same arguments."""
        return ledger.transaction(self.store, registries=self.registries)

    def append(self, events: Iterable[NewEvent]) -> AppendResult:
        """Append events (a batch may span subjects): :meth:`Ledger.append`."""
        with self.transaction() as led:
            return led.append(events)

    def assert_fact(self, fact: NewFact) -> Fact:
        """Assert one fact (:meth:`Ledger.assert_fact`). Raises on an unknown predicate, a wrong
        type or a missing source."""
        with self.transaction() as led:
            return led.assert_fact(fact)

    def assert_facts(self, facts: Iterable[NewFact]) -> list[Fact]:
        """Assert several facts, all or none (:meth:`Ledger.assert_facts`)."""
        with self.transaction() as led:
            return led.assert_facts(facts)

    @checked_args
    def supersede(self, tenant_id: str, subject_id: str, old_fact_id: str, new: NewFact) -> Fact:
        """Replace an active fact with a newer one; the old one is kept as ``superseded``
        (:meth:`Ledger.supersede`)."""
        with self.transaction() as led:
            return led.supersede(tenant_id, subject_id, old_fact_id, new)

    @checked_args
    def delete_fact(self, tenant_id: str, subject_id: str, fact_id: str, *, reason: str = "") -> Fact:
        """Delete a fact: content purged, tombstone (id, hash) kept (:meth:`Ledger.delete_fact`)."""
        with self.transaction() as led:
            return led.delete_fact(tenant_id, subject_id, fact_id, reason=reason)

    @checked_args
    def delete_event(self, tenant_id: str, subject_id: str, event_id: str, *, reason: str = "") -> Event:
        """Delete an event: content purged, tombstone kept, unsupported facts leave the active set
        (:meth:`Ledger.delete_event`)."""
        with self.transaction() as led:
            return led.delete_event(tenant_id, subject_id, event_id, reason=reason)

    @checked_args
    def revoke_event(self, tenant_id: str, subject_id: str, event_id: str, *, reason: str = "") -> Event:
        """Revoke an event: kept for audit, out of the authorized view (:meth:`Ledger.revoke_event`)."""
        with self.transaction() as led:
            return led.revoke_event(tenant_id, subject_id, event_id, reason=reason)

    @checked_args
    def set_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust, *, reason: str = "") -> Event:
        """Change an event's trust level, moving the epoch (:meth:`Ledger.set_trust`)."""
        with self.transaction() as led:
            return led.set_trust(tenant_id, subject_id, event_id, trust, reason=reason)

    @checked_args
    def extract(self, tenant_id: str, subject_id: str, *, extractor: Extractor | None = None) -> list[Proposal]:
        """Propose facts from the subject's events not read before (default: the deterministic
        :class:`~lossgate.extract.AtomExtractor`) and record the proposals with their outcome:
        asserted at once or kept for review by each predicate's policy (see :mod:`lossgate.extract`)."""
        from lossgate.extract import extract

        registry = self.admin.registry
        if registry is None and self.registries.default is not None:
            with self.store.write() as tx:
                registry = self.registries.needed(tx)
        if registry is None:
            raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
        return extract(self.store, registry, tenant_id, subject_id, extractor=extractor)

    # -- reads -------------------------------------------------------------------------
    @checked_args
    def facts(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        statuses: Sequence[FactStatus] | None = ACTIVE,
        predicate: str | None = None,
    ) -> list[Fact]:
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
    def events(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        states: Sequence[EventState] | None = None,
        after_seq: int | None = None,
        limit: int | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[Event]:
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
                raise NotFound(
                    f"fact {shown_id(fact_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}"
                )
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
    @checked_args
    def consolidate(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        compressor: Compressor | None = None,
        config: ConsolidationConfig | None = None,
        judge: ModelJudge | None = None,
    ) -> Attempt:
        """Build, gate and publish a summary of one subject. Returns the attempt: its status
        (``published``, ``rejected`` by the gate, ``conflict`` at the switch, ``error``),
        gate outcome, violations, artifact id and the manifest's input root. With a
        ``judge`` (:mod:`lossgate.judge`), a model also reads the narrative; if it cannot,
        the attempt is an error and nothing is published.

        Without ``compressor``, the tenant's live configuration chooses it (the
        deterministic compressor if it names none); with a shadow configuration, that one
        also builds its own artifact, never published; with review, a gated summary waits
        for :meth:`Admin.approve <lossgate.api.admin.Admin.approve>` (:mod:`lossgate.policy.rollout`)."""
        return self.admin.run_job(tenant_id, subject_id, compressor=compressor, config=config, judge=judge)

    @checked_args
    def recall(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        query: str | None = None,
        k: int = 20,
        budget: int | None = None,
        context: bool = True,
        loss_aware: bool = True,
    ) -> RecallResult:
        """What an agent should read now: the fresh summary or raw fallback, critical facts always;
        with a query, the most relevant facts and events of every tier (see :mod:`lossgate.recall.read`),
        those the summary dropped a little ahead unless ``loss_aware`` is false."""
        from lossgate.recall.read import recall

        return recall(
            self.store,
            tenant_id,
            subject_id,
            query=query,
            k=k,
            budget=budget,
            context=context,
            embedder=self.embedder,
            loss_aware=loss_aware,
            reranker=self.reranker,
        )

    @checked_args
    def guard(
        self, tenant_id: str, subject_id: str, action: dict[str, Any], *, recall_id: str | None = None
    ) -> GuardResult:
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
            sources = sorted(
                {e for f in facts if any(r.reads(f.predicate) for r in registry.guards) for e in f.source_event_ids}
            )
            low_trust = frozenset(
                e.event_id
                for e in (tx.events(tenant_id, subject_id, ids=sources) if sources else [])
                if e.trust in ("tool", "untrusted")
            )
            result = guard_action(
                tenant_id,
                subject_id,
                action,
                facts,
                tx.conflicts(tenant_id, subject_id, unresolved_only=True),
                registry,
                recall_id=recall_id,
                low_trust=low_trust,
            )
            tx.record_guard(result)
        return result

    @checked_args
    def request_consolidation(self, tenant_id: str, subject_id: str, *, reason: str = "requested") -> bool:
        """Queue a rebuild of one subject for the workers; False if one is already pending."""
        now = utcnow()
        with self.store.write() as tx:
            tx.lock_clock(tenant_id, subject_id)
            return queue.requested(tx, tenant_id, subject_id, reason, now=now)

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
    def respond(
        self,
        tenant_id: str,
        subject_id: str,
        recall_id: str,
        *,
        answer: str | None = None,
        action: dict[str, Any] | None = None,
        guard_id: str | None = None,
    ) -> ResponseRecord:
        """Record what the agent finally answered (``answer``, text) or did (``action``, a JSON
        object), or both, after the recall ``recall_id`` of the subject, and after the guard
        result ``guard_id`` if it checked the action first (:mod:`lossgate.lineage.responses`): the
        evidence a diagnosis needs to tell an agent that ignored memory from memory that
        failed it. One transaction. Raises :class:`NotFound` for a recall or guard result the
        subject does not have, :class:`InvalidInput` for neither an answer nor an action, a
        malformed one, or a guard result checked for another recall. A response on a recall
        whose content was deleted since is stored redacted (its sha256 only)."""
        from lossgate.lineage.responses import respond
        from lossgate.recall.attestation import check_recall

        with self.store.write() as tx:
            recall = tx.recall_record(tenant_id, subject_id, recall_id)
            erased = None
            if recall is not None and recall.redacted is None and check_recall(tx, recall).state == "erased":
                erased = f"recall {recall_id} returned content deleted since"
            return respond(
                tx,
                tenant_id,
                subject_id,
                recall_id,
                answer=answer,
                action=action,
                guard_id=guard_id,
                now=utcnow(),
                erased=erased,
            )

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _no_environment_compressors(spec: str) -> Compressor:
    """A rollout's compressor from its spec, with no environment (see :class:`Memory`)."""
    from lossgate.consolidate.factory import load_compressor

    return load_compressor(spec, environ={})


def open(
    url: str | None = None,
    *,
    migrate: bool = True,
    embedder: Embedder | None = None,
    compressors: Callable[[str], Compressor] | None = None,
    create: bool = True,
    tenant: str | None = None,
    starter: bool = True,
    reranker: Reranker | None = None,
) -> Memory:
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
    memory = Memory(
        open_store(url, create=create),
        embedder=embedder,
        compressors=compressors,
        default_registry=starter_registry() if starter else None,
        tenant_id=tenant,
        reranker=reranker,
    )
    if migrate:
        memory.admin.migrate()
    return memory
