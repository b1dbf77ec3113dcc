"""Administration of a memory: ``memory.admin`` (:class:`Admin`).

What an operator, a worker or the service's key handling calls, and an agent application
does not in its request path: the schema and the predicate registry, API keys, rollout and
review, extraction review, tenant policies (taint, narrative), retention and tiers,
quarantine and recovery, the reads that inspect what consolidation derived and what recall
left behind (artifacts, lineage, attempts, jobs, recall records, the log), and compaction.
The application's calls stay on :class:`~lossgate.Memory`.

An :class:`Admin` holds its memory and runs on its store, its registry cache and its
compressor factory: each write runs in its own transaction, as the memory's do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from lossgate.errors import ConfigError, IdempotencyConflict, InvalidInput, LossgateError, NotFound, crash_reason
from lossgate.ledger.lifecycle import Ledger, in_force
from lossgate.lineage import propagation as lineage
from lossgate.model.canonical import content_hash
from lossgate.model.derived_records import (
    Alias,
    Artifact,
    Attempt,
    GuardResult,
    Job,
    Lane,
    LineageView,
    RecallRecord,
    ResponseRecord,
)
from lossgate.model.instants import before, checked_instant
from lossgate.model.limits import checked_args, shown_id
from lossgate.model.records import (
    Clock,
    EventKind,
    LedgerEntry,
    Proposal,
    TaintOutcome,
    TaintPolicy,
    Trust,
    utcnow,
)
from lossgate.model.registry import Registry, RegistryCache, load_registry, parse_registry, read_registry_document
from lossgate.model.starter import is_starter
from lossgate.store import Store, WriteTx
from lossgate.store.protocol import CompactReport

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from lossgate.consolidate.compressor import Compressor
    from lossgate.consolidate.pipeline import ConsolidationConfig, Consolidator, Hooks
    from lossgate.consolidate.regate import RegateResult
    from lossgate.judge import ModelJudge
    from lossgate.ledger.retention import Expiry, RetentionPolicy, RetentionRule
    from lossgate.ledger.tiers import Demotion, TierPolicy
    from lossgate.model.api_keys import ApiKey
    from lossgate.policy.quarantine import Quarantined
    from lossgate.policy.rollout import Rollout, ShadowRow
    from lossgate.semantic import Embedder, EmbedReport

__all__ = ["Admin"]

ShadowGate = Literal["release", "exploratory"]

# Where a registry loaded over the starter one is refused: how to add to it instead.
_EXTEND_HINT = (
    "to add predicates to the starter registry, extend it (memory.admin.extend_predicates, "
    "lossgate predicates extend FILE.toml)"
)


class _Memory(Protocol):
    """What administration uses of its :class:`~lossgate.Memory` (which imports this module)."""

    store: Store
    embedder: Embedder | None
    registries: RegistryCache
    compressors: Callable[[str], Compressor]

    def transaction(self) -> AbstractContextManager[Ledger]: ...


class Admin:
    """The administration of one memory (``memory.admin``; see the module).

    Its methods take the same ``@checked_args`` checks as :class:`~lossgate.Memory`'s."""

    def __init__(self, memory: _Memory) -> None:
        self.memory = memory

    # -- setup: the schema and the predicate registry --------------------------------
    def migrate(self) -> int:
        """Create or upgrade the schema (idempotent). Returns the schema version."""
        return self.memory.store.migrate()

    @property
    def registry(self) -> Registry | None:
        """The newest stored predicate registry, or ``None``."""
        with self.memory.store.read() as tx:
            return self.memory.registries.current(tx)

    def load_predicates(
        self, source: Registry | str | Path | dict[str, Any], *, tenants: Iterable[str] = ()
    ) -> Registry:
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
        with self.memory.store.write() as tx:
            self._store_registry(tx, registry, tenants)
        return registry

    def extend_predicates(
        self, source: Registry | str | Path | dict[str, Any], *, tenants: Iterable[str] = ()
    ) -> Registry:
        """Load a registry document (a TOML path, a document or a :class:`Registry`) on top of
        the newest stored registry, by :mod:`lossgate.model.registry_overlay`'s rule: its predicates and guard
        rules are added; one the stored registry defines otherwise is a
        :class:`~lossgate.errors.RegistryConflict` unless its table says ``override = true``;
        nothing is removed. The result is stored as the next version (re-gating ``tenants`` as
        :meth:`load_predicates` does) and returned; a document that changes nothing stores
        nothing and returns the stored registry. On a store with no registry, this memory's
        default (the starter registry, from :func:`open`) is stored first and extended."""
        from lossgate.model.registry_overlay import overlay

        data = (
            source.document()
            if isinstance(source, Registry)
            else source
            if isinstance(source, dict)
            else read_registry_document(source)
        )
        with self.memory.store.write() as tx:
            base = self.memory.registries.needed(tx)
            extended = overlay(base, data)
            if extended is None:
                assert base is not None  # overlay changes nothing only where there is a base
                return base
            self._store_registry(tx, extended, tenants)
        return extended

    def _store_registry(self, tx: WriteTx, registry: Registry, tenants: Iterable[str]) -> None:
        """Store ``registry`` in ``tx`` by :meth:`load_predicates`' rules, re-gating ``tenants``."""
        doc = registry.document()
        before = self.memory.registries.current(tx)
        if before is not None and registry.version > before.version:
            dropped = sorted(set(before.document()["predicates"]) - set(doc["predicates"]))
            if dropped:
                # facts of any tenant may use them: a subject holding one could never be
                # consolidated, superseded or recovered again
                raise InvalidInput(
                    f"registry v{registry.version} drops {', '.join(dropped[:5])} of v{before.version}: a "
                    "predicate is never removed (facts may use it); keep it, with a description saying "
                    "it is retired" + ("; " + _EXTEND_HINT if is_starter(before.document()) else "")
                )
        stored = tx.registry_document(registry.version) if before is not None else None
        if stored is not None and content_hash(stored) != content_hash(doc):
            raise IdempotencyConflict(
                f"registry version {registry.version} is already stored with different content"
                + (" (the starter registry); " + _EXTEND_HINT if is_starter(stored) else "")
            )
        tx.save_registry(registry.version, doc, content_hash(doc))
        latest = self.memory.registries.current(tx)
        if latest is not None and latest.version == registry.version and tenants:
            from lossgate.consolidate.regate import regate_tenant  # the gate: loaded on first use

            now = utcnow()
            for tenant_id in dict.fromkeys(tenants):
                regate_tenant(tx, tenant_id, latest, now=now)

    @checked_args
    def regate(self, tenant_id: str, subject_id: str | None = None) -> list[RegateResult]:
        """Re-gate a tenant's summaries (one subject's, with ``subject_id``) gated under a
        registry version the newest one outdated, in one transaction (:mod:`lossgate.consolidate.regate`).
        Returns one result per artifact examined."""
        from lossgate.consolidate.regate import regate_tenant

        with self.memory.store.write() as tx:
            registry = self.memory.registries.current(tx)
            if registry is None:
                raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
            return regate_tenant(
                tx, tenant_id, registry, now=utcnow(), subjects=None if subject_id is None else [subject_id]
            )

    # -- access: the HTTP service's API keys (lossgate.model.api_keys) ---------------
    @checked_args
    def create_api_key(self, tenant_id: str, *, scopes: Sequence[str], name: str = "") -> tuple[ApiKey, str]:
        """A new API key for ``tenant_id`` with ``scopes`` (``read``, ``write``, ``admin``;
        each stands alone). Returns the stored key and its secret: the secret is not stored
        (only its sha256) and cannot be shown again."""
        from pydantic import ValidationError

        from lossgate.model.api_keys import ApiKey, hash_secret, new_secret, parse_scopes

        key_id, secret = new_secret()
        try:
            key = ApiKey(
                tenant_id=tenant_id,
                key_id=key_id,
                key_hash=hash_secret(secret),
                scopes=parse_scopes(scopes),
                name=name,
                created_at=utcnow(),
            )
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            raise InvalidInput(f"API key {'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None
        with self.memory.store.write() as tx:
            tx.insert_api_key(key)
        return key, secret

    @checked_args
    def api_keys(self, tenant_id: str) -> list[ApiKey]:
        """The tenant's API keys, revoked ones included, oldest first."""
        with self.memory.store.read() as tx:
            return tx.api_keys(tenant_id)

    @checked_args
    def revoke_api_key(self, tenant_id: str, key_id: str) -> ApiKey:
        """Revoke one of the tenant's keys (at once: the next request with it is refused);
        revoking a revoked key changes nothing. Raises :class:`~lossgate.errors.NotFound`
        for a key the tenant does not have."""
        with self.memory.store.write() as tx:
            tx.revoke_api_key(tenant_id, key_id, at=utcnow())
            found = [k for k in tx.api_keys(tenant_id) if k.key_id == key_id]
        if not found:
            raise NotFound(f"API key {shown_id(key_id)} does not exist for tenant {tenant_id!r}")
        return found[0]

    def authenticate(self, secret: str) -> ApiKey | None:
        """The active key whose secret is ``secret``, or ``None`` (unknown, malformed or
        revoked). The one read that finds a tenant instead of being given one."""
        from lossgate.model.api_keys import hash_secret, looks_like_secret

        if not isinstance(secret, str) or not looks_like_secret(secret):
            return None
        with self.memory.store.read() as tx:
            key = tx.api_key_by_hash(hash_secret(secret))
        return key if key is not None and key.active else None

    # -- rollout: live, shadow and review (lossgate.policy.rollout) ------------------
    @checked_args
    def rollout(self, tenant_id: str) -> Rollout:
        """The tenant's consolidation configuration: live and shadow compressors, review."""
        from lossgate.policy import rollout

        with self.memory.store.read() as tx:
            return rollout.rollout(tx, tenant_id)

    @checked_args
    def set_rollout(
        self,
        tenant_id: str,
        *,
        live: str | None = None,
        shadow: str | None = None,
        review: bool | None = None,
        clear_shadow: bool = False,
        clear_live: bool = False,
        shadow_gate: str | None = None,
        shadow_registry: Registry | str | Path | dict[str, Any] | None = None,
        clear_shadow_registry: bool = False,
    ) -> Rollout:
        """Change the tenant's configuration: ``live`` or ``shadow`` (compressor specs),
        ``review``, the shadow lane's gate (``release`` or ``exploratory``) and the registry it
        tries (as :meth:`load_predicates` reads one; kept in the rollout, never loaded); an argument left ``None`` keeps its value (``clear_shadow`` /
        ``clear_live`` / ``clear_shadow_registry`` unset one; clearing the shadow clears its
        gate and registry too). Checked by loading each new spec and parsing the registry, so
        a switch never leaves a tenant on a compressor or registry that cannot be made."""
        from pydantic import ValidationError

        from lossgate.policy import rollout

        for cleared, given, what in (
            (clear_live, live is not None, "live"),
            (clear_shadow, shadow is not None or shadow_gate is not None or shadow_registry is not None, "shadow"),
            (clear_shadow_registry, shadow_registry is not None, "shadow registry"),
        ):
            if cleared and given:
                raise InvalidInput(f"set_rollout: clearing the {what} contradicts setting it")
        for spec in (live, shadow):
            if spec is not None:
                self.memory.compressors(rollout.valid_spec(spec))
        tried = _registry_of(shadow_registry) if shadow_registry is not None else None
        with self.memory.store.write() as tx:
            loaded = self.memory.registries.current(tx)
            if (
                tried is not None
                and loaded is not None
                and (gone_from := sorted(set(loaded.predicates) - set(tried.predicates)))
            ):
                # facts may use them: the shadow lane could not consolidate their subjects
                raise InvalidInput(
                    f"shadow registry v{tried.version} drops {', '.join(gone_from[:5])} of the "
                    f"loaded v{loaded.version}: a predicate is never removed (facts may use it)"
                )
            now = rollout.rollout(tx, tenant_id)
            gone = clear_shadow or clear_shadow_registry
            try:
                new = rollout.Rollout(
                    live=None if clear_live else (live if live is not None else now.live),
                    shadow=None if clear_shadow else (shadow if shadow is not None else now.shadow),
                    review=now.review if review is None else review,
                    # a str the model validates: another is the ValidationError below
                    shadow_gate=cast(
                        "ShadowGate",
                        "release" if clear_shadow else (shadow_gate if shadow_gate is not None else now.shadow_gate),
                    ),
                    shadow_registry=None if gone else (tried.document() if tried is not None else now.shadow_registry),
                )
            except ValidationError as exc:
                raise InvalidInput(f"rollout of {tenant_id!r}: {exc.errors()[0]['msg']}") from None
            return rollout.set_rollout(tx, tenant_id, new, now=utcnow())

    @checked_args
    def approve(self, tenant_id: str, subject_id: str, artifact_id: str) -> Attempt | None:
        """Publish a summary waiting for review through the switch; returns its attempt, marked
        ``published`` or ``conflict`` with the switch's reason."""
        from lossgate.policy import rollout

        with self.memory.store.write() as tx:
            published, reason = rollout.approve(tx, tenant_id, subject_id, artifact_id, now=utcnow())
            attempt = next(
                (a for a in reversed(tx.attempts(tenant_id, subject_id)) if a.artifact_id == artifact_id), None
            )
            if attempt is not None:
                attempt = attempt.model_copy(
                    update={
                        "status": "published" if published else "conflict",
                        "reason": "approved" if published else reason,
                        "finished_at": utcnow(),
                    }
                )
                attempt = lineage.save_attempt(tx, attempt)
        return attempt

    @checked_args
    def refuse(self, tenant_id: str, subject_id: str, artifact_id: str, *, reason: str = "") -> None:
        """Refuse a summary waiting for review: kept, never published, never compressor input."""
        from lossgate.policy import rollout

        with self.memory.store.write() as tx:
            rollout.refuse(tx, tenant_id, subject_id, artifact_id, reason=reason, now=utcnow())

    @checked_args
    def shadow_report(self, tenant_id: str) -> list[ShadowRow]:
        """Each subject's latest shadow attempt beside its latest live one (:mod:`lossgate.policy.rollout`)."""
        from lossgate.consolidate.tokens import default_counter
        from lossgate.policy import rollout

        with self.memory.store.read() as tx:
            return rollout.shadow_report(tx, tenant_id, default_counter())

    # -- the workers' calls: a consolidation job, the vectors ------------------------
    def consolidator(
        self,
        *,
        compressor: Compressor | None = None,
        config: ConsolidationConfig | None = None,
        hooks: Hooks | None = None,
        judge: ModelJudge | None = None,
        shadow: bool = False,
        reviewed: bool = False,
        exploratory: bool = False,
        registry: Registry | None = None,
    ) -> Consolidator:
        """A :class:`~lossgate.consolidate.pipeline.Consolidator` bound to this memory's store."""
        from lossgate.consolidate.pipeline import Consolidator

        return Consolidator(
            self.memory.store,
            compressor=compressor,
            config=config,
            hooks=hooks,
            judge=judge,
            registries=self.memory.registries,
            shadow=shadow,
            reviewed=reviewed,
            exploratory=exploratory,
            registry=registry,
        )

    def run_job(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        compressor: Compressor | None = None,
        fallback: Consolidator | None = None,
        config: ConsolidationConfig | None = None,
        judge: ModelJudge | None = None,
    ) -> Attempt:
        """One consolidation job as the tenant's rollout wants it: ``compressor`` if given,
        else the tenant's live one, else ``fallback`` (a worker's own consolidator) or the
        default; then the tenant's shadow configuration, if any (its failures are logged,
        never raised: the live result stands)."""
        from lossgate.policy import rollout

        with self.memory.store.read() as tx:
            plan = rollout.rollout(tx, tenant_id)
        if compressor is None and plan.live is None and fallback is not None:
            attempt = fallback.run(tenant_id, subject_id)
        else:
            chosen = compressor or (self.memory.compressors(plan.live) if plan.live else None)
            attempt = self.consolidator(compressor=chosen, config=config, judge=judge).run(tenant_id, subject_id)
        if plan.shadow:
            try:
                from dataclasses import replace

                from lossgate.consolidate.pipeline import ConsolidationConfig

                # the direct path: the shadow reads the valid inputs, never the live summary
                direct = replace(config or ConsolidationConfig(), incremental=False)
                shadow = self.consolidator(
                    compressor=self.memory.compressors(plan.shadow),
                    config=direct,
                    shadow=True,
                    exploratory=plan.shadow_gate == "exploratory",
                    registry=plan.registry(),
                )
                shadow.run(tenant_id, subject_id)
            except Exception as exc:  # noqa: BLE001 - a shadow's failure never touches the live result
                log.warning(
                    "shadow consolidation of %s/%s with %s failed: %s",
                    tenant_id,
                    subject_id,
                    plan.shadow,
                    exc if isinstance(exc, LossgateError) else crash_reason(exc),
                )
        return attempt

    @checked_args
    def embed(self, tenant_id: str, subject_id: str, *, rebuild: bool = False) -> EmbedReport:
        """Compute the vectors the subject's valid events and active facts lack, with this
        memory's embedder (workers do it after consolidation); with ``rebuild``, drop the
        model's vectors of the subject first and embed everything again. Returns what was
        stored, dropped and skipped (:func:`lossgate.semantic.embed_pending`). Raises
        :class:`~lossgate.errors.ConfigError` when the memory has no embedder."""
        from lossgate.semantic import embed_pending

        if self.memory.embedder is None:
            raise ConfigError(
                "this memory has no embedder: lossgate.open(url, embedder=...) or LOSSGATE_EMBEDDER=local|URL"
            )
        return embed_pending(self.memory.store, self.memory.embedder, tenant_id, subject_id, rebuild=rebuild)

    # -- operations: quarantine and forward recovery ---------------------------------
    @checked_args
    def quarantine(self, tenant_id: str, subject_id: str, artifact_id: str, *, reason: str = "") -> Quarantined:
        """Take a published artifact (the subject's summary, or a part of it) out of recall at
        once; coverage does not move backwards (:mod:`lossgate.policy.quarantine`)."""
        from lossgate.policy.quarantine import quarantine

        with self.memory.store.write() as tx:
            return quarantine(tx, tenant_id, subject_id, artifact_id, reason=reason, now=utcnow())

    @checked_args
    def recover(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        compressor: Compressor | None = None,
        config: ConsolidationConfig | None = None,
    ) -> Attempt:
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

    # -- review of extraction proposals ----------------------------------------------
    @checked_args
    def proposals(self, tenant_id: str, subject_id: str, *, statuses: Sequence[str] | None = None) -> list[Proposal]:
        """The subject's extraction proposals, oldest first (``statuses=["review"]``: waiting for a person)."""
        with self.memory.store.read() as tx:
            return tx.proposals(tenant_id, subject_id, statuses=statuses)

    @checked_args
    def accept_proposal(self, tenant_id: str, subject_id: str, proposal_id: str) -> Proposal:
        """Accept a proposal waiting for review: it becomes a fact (``accepted``, or ``conflict``)."""
        from lossgate.extract import accept_proposal

        with self.memory.transaction() as led:
            return accept_proposal(led, tenant_id, subject_id, proposal_id)

    @checked_args
    def reject_proposal(self, tenant_id: str, subject_id: str, proposal_id: str, *, reason: str = "") -> Proposal:
        """Reject a proposal waiting for review; it is kept with the reason."""
        from lossgate.extract import reject_proposal

        with self.memory.transaction() as led:
            return reject_proposal(led, tenant_id, subject_id, proposal_id, reason=reason)

    # -- tenant policies: taint and narrative ----------------------------------------
    @checked_args
    def set_taint_policy(
        self,
        tenant_id: str,
        policy_id: str,
        *,
        trust: Trust,
        kind: EventKind | None = None,
        actor: str | None = None,
        reason: str = "",
    ) -> TaintOutcome:
        """Set or upgrade a tenant-level taint policy: every event of the tenant of ``kind``
        by ``actor`` (at least one of the two) gets ``trust``, now and when appended later.
        In one transaction: the policy's new version is stored, the matching events change
        trust, facts that now claim more than their sources are recorded again at their
        trust (quoted when untrusted), derived artifacts go stale, rebuilds are queued and
        each subject's log says so (:meth:`lossgate.ledger.lifecycle.Ledger.set_taint_policy`)."""
        with self.memory.transaction() as led:
            return led.set_taint_policy(tenant_id, policy_id, trust=trust, kind=kind, actor=actor, reason=reason)

    @checked_args
    def taint_policies(self, tenant_id: str, *, history: bool = False) -> list[TaintPolicy]:
        """The tenant's taint policies in force (the newest version of each), by policy id;
        with ``history``, every version ever stored."""
        with self.memory.store.read() as tx:
            stored = tx.taint_policies(tenant_id)
        return stored if history else in_force(stored)

    @checked_args
    def narrative_policy(self, tenant_id: str) -> str:
        """What becomes of a model's narrative sentence on a topic only the ledger states
        (:mod:`lossgate.gate.narrative`): ``omit`` (the default) or ``refuse``."""
        from lossgate.consolidate.narrative_policy import narrative_policy

        with self.memory.store.read() as tx:
            return narrative_policy(tx, tenant_id)

    @checked_args
    def set_narrative_policy(self, tenant_id: str, policy: str) -> str:
        """Set the tenant's narrative policy: ``omit`` publishes a narrative without such a
        sentence and keeps it, with why, on the attempt; ``refuse`` fails the attempt."""
        from lossgate.consolidate.narrative_policy import set_narrative_policy

        with self.memory.store.write() as tx:
            return set_narrative_policy(tx, tenant_id, policy, now=utcnow())

    # -- retention and tiers (hot, warm, cold) ---------------------------------------
    @checked_args
    def retention(self, tenant_id: str) -> RetentionPolicy:
        """The tenant's retention policy: how long raw events live, by kind and actor
        (:mod:`lossgate.ledger.retention`; no rule, version 0, if never set)."""
        from lossgate.ledger import retention

        with self.memory.store.read() as tx:
            return retention.policy(tx, tenant_id)

    @checked_args
    def set_retention(
        self, tenant_id: str, events: Sequence[dict[str, Any] | RetentionRule], *, records: timedelta | None = None
    ) -> RetentionPolicy:
        """Set the tenant's retention: ``events``, rules ``{"kind": ..., "actor": ..., "ttl":
        timedelta}`` (the first that matches an event decides; an event none matches is kept),
        and ``records``, how long recall records, guard results and responses live (``None``:
        kept). The policy's version counts up; earlier versions are kept."""
        from lossgate.ledger import retention

        with self.memory.store.write() as tx:
            # set_policy reads each rule as a RetentionRule or as its dict, whichever it is given
            rules = cast("tuple[RetentionRule, ...]", tuple(events))
            return retention.set_policy(tx, tenant_id, rules, records=records, now=utcnow())

    @checked_args
    def expire(self, tenant_id: str, subject_id: str | None = None, *, now: datetime | None = None) -> list[Expiry]:
        """Delete the events of a subject (of every subject of the tenant, if ``None``) past
        their time to live under the tenant's retention policy: each a deletion with all its
        guarantees, logged with the policy's version and rule; a source of an active critical
        fact is kept. One transaction per subject."""
        from lossgate.ledger import retention

        at = checked_instant(now, "now") if now is not None else utcnow()
        with self.memory.store.read() as tx:
            current = retention.policy(tx, tenant_id)
            subjects = [subject_id] if subject_id is not None else tx.subjects(tenant_id)
        out = []
        for s in subjects if current.events or current.records else []:
            with self.memory.transaction() as led:
                due, kept = retention.expiring(led.tx, tenant_id, s, current, at)
                for e, rule in due:
                    led.delete_event(
                        tenant_id,
                        s,
                        e.event_id,
                        reason=f"{retention.EXPIRY_REASON}: policy v{current.version} ({rule.describe()})",
                    )
                forgotten = (
                    led.tx.forget_records(tenant_id, s, before=before(at, current.records)) if current.records else 0
                )
            out.append(retention.Expiry(tenant_id, s, [e.event_id for e, _ in due], kept, forgotten))
        return out

    @checked_args
    def tier_policy(self, tenant_id: str) -> TierPolicy:
        """The tenant's tier clock: its dormancy and cold horizon (defaults if never set)."""
        from lossgate.ledger import tiers

        with self.memory.store.read() as tx:
            return tiers.policy(tx, tenant_id)

    @checked_args
    def set_tier_policy(
        self, tenant_id: str, *, dormancy: timedelta | None = None, cold_after: timedelta | None = None
    ) -> TierPolicy:
        """Set the tenant's dormancy (hot to warm) and cold horizon (warm to cold); an
        argument left ``None`` keeps its current value."""
        from lossgate.ledger import tiers

        with self.memory.store.write() as tx:
            current = tiers.policy(tx, tenant_id)
            new = tiers.TierPolicy(
                dormancy=current.dormancy if dormancy is None else dormancy,
                cold_after=current.cold_after if cold_after is None else cold_after,
            )
            tiers.set_policy(tx, tenant_id, new, now=utcnow())
        return new

    @checked_args
    def demote(self, tenant_id: str, subject_id: str | None = None, *, now: datetime | None = None) -> list[Demotion]:
        """Move the tenant's events (one subject's, with ``subject_id``) between tiers at
        ``now`` (default: the current time): dormant hot events a fresh gated summary
        covers go warm, warm events past the cold horizon go cold, and dormant hot events
        held back by a failed consolidation or a stale summary have their retention
        extended, with the reason in the log (:mod:`lossgate.ledger.tiers`)."""
        from lossgate.ledger import tiers

        at = utcnow() if now is None else checked_instant(now, "now")
        return tiers.demote(self.memory.store, tenant_id, subjects=None if subject_id is None else [subject_id], now=at)

    # -- inspection: what the memory holds beyond the facts and events, for audit and diagnosis ---
    @checked_args
    def subjects(self, tenant_id: str) -> list[str]:
        """Admin listing of a tenant's subjects."""
        with self.memory.store.read() as tx:
            return tx.subjects(tenant_id)

    @checked_args
    def clock(self, tenant_id: str, subject_id: str) -> Clock:
        with self.memory.store.read() as tx:
            return tx.clock(tenant_id, subject_id)

    @checked_args
    def log(self, tenant_id: str, subject_id: str) -> list[LedgerEntry]:
        """The subject's operation log, oldest first (asserts, supersessions, deletions, epochs, publications)."""
        with self.memory.store.read() as tx:
            return tx.log(tenant_id, subject_id)

    @checked_args
    def alias(self, tenant_id: str, subject_id: str, *, lane: Lane = "live") -> Alias:
        """The subject's alias, or with ``lane="shadow"`` its shadow alias (what the tenant's
        shadow lane published last; recall never reads it)."""
        with self.memory.store.read() as tx:
            return tx.alias(tenant_id, subject_id, lane=lane)

    @checked_args
    def artifact(self, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact:
        with self.memory.store.read() as tx:
            found = tx.artifact(tenant_id, subject_id, artifact_id)
        if found is None:
            raise NotFound(
                f"artifact {shown_id(artifact_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}"
            )
        return found

    @checked_args
    def artifacts(self, tenant_id: str, subject_id: str, *, states: Sequence[str] | None = None) -> list[Artifact]:
        with self.memory.store.read() as tx:
            return tx.artifacts(tenant_id, subject_id, states=states)

    @checked_args
    def lineage(self, tenant_id: str, subject_id: str, artifact_id: str) -> LineageView:
        """An artifact (in any state, stale ones included: audit) with its inputs and parent chain."""
        with self.memory.store.read() as tx:
            return lineage.view(tx, tenant_id, subject_id, artifact_id)

    @checked_args
    def attempts(self, tenant_id: str, subject_id: str) -> list[Attempt]:
        """Every consolidation attempt of the subject, failures included."""
        with self.memory.store.read() as tx:
            return tx.attempts(tenant_id, subject_id)

    @checked_args
    def jobs(
        self, tenant_id: str, subject_id: str | None = None, *, statuses: Sequence[str] | None = None
    ) -> list[Job]:
        """Rebuild jobs of a subject, or of the whole tenant with ``subject_id=None``
        (``statuses=["review"]``: the subjects whose consolidation keeps failing)."""
        with self.memory.store.read() as tx:
            return tx.jobs(tenant_id, subject_id, statuses=statuses)

    @checked_args
    def recalls(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[RecallRecord]:
        with self.memory.store.read() as tx:
            return tx.recalls(tenant_id, subject_id, limit=limit)

    @checked_args
    def guard_results(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[GuardResult]:
        """The subject's guard results (:meth:`Memory.guard <lossgate.Memory.guard>`), newest first."""
        with self.memory.store.read() as tx:
            return tx.guard_results(tenant_id, subject_id, limit=limit)

    @checked_args
    def responses(self, tenant_id: str, subject_id: str, *, limit: int = 100) -> list[ResponseRecord]:
        """The subject's response records, newest first."""
        with self.memory.store.read() as tx:
            return tx.responses(tenant_id, subject_id, limit=limit)

    # -- maintenance -----------------------------------------------------------------
    def compact(self) -> CompactReport:
        """Run the maintenance after which deleted text is gone from the database's files,
        not only from its rows (see :meth:`~lossgate.store.protocol.Store.compact`)."""
        return self.memory.store.compact()


def _registry_of(source: Registry | str | Path | dict[str, Any]) -> Registry:
    """A registry given as one, as its document, or as the path of its TOML file."""
    if isinstance(source, Registry):
        return source
    return parse_registry(source) if isinstance(source, dict) else load_registry(source)
