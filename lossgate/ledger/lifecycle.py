"""Lifecycle rules of the raw layer and the fact ledger.

A :class:`Ledger` wraps one open write transaction. Each method is one
complete lifecycle operation; several methods called on one ledger commit or
roll back together (``lossgate ingest`` runs a whole file this way).
:func:`transaction` opens one: it reads the predicate registry only if an
operation needs it (an append does not), and once a transaction that erased
content commits, this process's caches of text forget it (:mod:`lossgate.runtime.caches`).

The clock rules: appending events or asserting facts at the tail
moves only ``high_water``. Supersession, deletion, revocation, a trust change
or a newly detected conflict moves ``input_epoch``, which fences every
artifact built before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple, get_args

from lossgate.errors import IdempotencyConflict, InvalidInput, LifecycleError, NotFound
from lossgate.lineage import propagation as lineage
from lossgate.lineage import queue
from lossgate.model.canonical import content_hash
from lossgate.model.limits import shown_id
from lossgate.model.records import (
    AUTHORITY_FOR_TRUST,
    TRUST_RANK,
    AppendResult,
    Clock,
    Conflict,
    Event,
    EventKind,
    EventRef,
    Fact,
    FactStatus,
    NewEvent,
    NewFact,
    TaintOutcome,
    TaintPolicy,
    Trust,
    effective_trust,
    fact_hash_content,
    utcnow,
)
from lossgate.model.registry import Registry, RegistryCache
from lossgate.model.values import canonical_value
from lossgate.runtime.caches import forget_text
from lossgate.store.protocol import Store, WriteTx

__all__ = ["Ledger", "in_force", "transaction"]


class _Identity(NamedTuple):
    """What a new fact is, before it is stored (:meth:`Ledger._identity`)."""

    fact_id: str  # the caller's, or one derived from the content
    content_hash: str
    value: Any  # coerced to the predicate's type
    canonical: Any  # the form conflicts and idempotency compare


def _check_choice(name: str, value: object, choices: Any) -> None:
    """``value`` is one of the ``Literal`` type ``choices``, or :class:`InvalidInput`."""
    if value not in get_args(choices):
        raise InvalidInput(f"{name} {value!r} is not one of {list(get_args(choices))}")


def _short_hash(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:20]


@contextmanager
def transaction(
    store: Store, *, registry: Registry | None = None, registries: RegistryCache | None = None
) -> Iterator[Ledger]:
    """A :class:`Ledger` over a new write transaction of ``store``: every operation on it
    commits when the block ends, or none does if it raises. The registry is ``registry``,
    or else the newest stored one, read (through ``registries``, a cache shared across
    transactions) when an operation first needs it. After a commit that erased content,
    :func:`lossgate.runtime.caches.forget_text`."""
    if registry is None and registries is None:
        registries = RegistryCache()
    with store.write() as tx:
        ledger = Ledger(tx, registry, registries=registries, forget_on_commit=True)
        yield ledger
    if ledger.erased:
        forget_text()


def in_force(policies: Iterable[TaintPolicy]) -> list[TaintPolicy]:
    """The newest version of each policy of ``policies`` (stored versions, in the order
    :meth:`~lossgate.store.protocol.ReadTx.taint_policies` gives them: the last of a
    policy's versions is the one in force)."""
    return list({p.policy_id: p for p in policies}.values())


class Ledger:
    """Lifecycle operations inside one write transaction: the transaction-level API.

    ``memory.transaction()`` yields one, for several operations that must commit together
    (``lossgate ingest`` runs a whole file in one, the service a batch). Each write of
    :class:`~lossgate.Memory` with the same name (``append``, ``assert_fact``,
    ``assert_facts``, ``supersede``, ``delete_fact``, ``delete_event``, ``revoke_event``,
    ``set_trust``) and ``memory.admin.set_taint_policy`` runs one of these in its own
    transaction: that is the call for a single change. The rules are written here, once."""

    def __init__(
        self,
        tx: WriteTx,
        registry: Registry | None = None,
        *,
        registries: RegistryCache | None = None,
        now: datetime | None = None,
        rebuild_after: int = queue.REBUILD_AFTER,
        forget_on_commit: bool = False,
    ) -> None:
        """``forget_on_commit``: the caller (:func:`transaction`) empties the text caches once
        the transaction commits; otherwise a ledger empties them as it erases, having no
        commit to wait for."""
        self.tx = tx
        self._forget_now = not forget_on_commit
        # Queue a rebuild once this many inputs sit beyond the published summary's coverage.
        self.rebuild_after = rebuild_after
        self._registry = registry
        self._registries = registries
        self.now = now or utcnow()
        self._clocks: dict[tuple[str, str], Clock] = {}
        # The subjects whose input epoch this transaction moved, and for which it queued a
        # rebuild (:meth:`_invalidate`).
        self._moved: set[tuple[str, str]] = set()
        # Facts whose state changed in this operation: their descendants go stale.
        self._touched: dict[tuple[str, str], set[str]] = {}
        # The taint policies in force, per tenant, read on a tenant's first append.
        self._policies: dict[str, list[TaintPolicy]] = {}
        # Facts recorded again at their sources' trust in this operation: (old, new).
        self._demoted: list[tuple[Fact, Fact]] = []
        # Whether an operation purged content (an event's text, a fact's value): once the
        # transaction commits, this process's caches of text must forget it.
        self.erased = False

    # -- clock -------------------------------------------------------------------------
    def _clock(self, tenant_id: str, subject_id: str) -> Clock:
        key = (tenant_id, subject_id)
        if key not in self._clocks:
            self._clocks[key] = self.tx.lock_clock(tenant_id, subject_id)
        return self._clocks[key]

    def _advance(self, tenant_id: str, subject_id: str, *, seqs: int = 0, epoch: bool = False) -> Clock:
        clock = self._clock(tenant_id, subject_id)
        clock = clock.model_copy(
            update={
                "high_water": clock.high_water + seqs,
                "input_epoch": clock.input_epoch + int(epoch),
            }
        )
        self._clocks[(tenant_id, subject_id)] = clock
        self.tx.save_clock(clock)
        return clock

    def _invalidate(
        self, tenant_id: str, subject_id: str, op: str, target_id: str, erased: Sequence[str] = ()
    ) -> list[str]:
        """Move the epoch, mark every artifact derived from a changed input stale (purging
        deleted content from them) and queue a rebuild, all in this transaction (invariant
        6; :mod:`lossgate.lineage.propagation`, :mod:`lossgate.lineage.queue`)."""
        key = (tenant_id, subject_id)
        # The epoch moves once a transaction, whatever it changes: no reader sees the subject
        # between two of its changes, and after the commit the epoch differs from every snapshot
        # taken before. Moving it again for each change rewrote the clock row and the queued job
        # as often, and on PostgreSQL each rewrite of a row in one transaction leaves a version
        # the next one walks past: 15,000 revocations in one transaction took 441 s.
        clock = self._clock(tenant_id, subject_id) if key in self._moved else self._advance(*key, epoch=True)
        changed = {target_id, *erased} | self._touched.pop(key, set())
        cause = f"{op} {target_id}"
        stale = lineage.invalidate(
            self.tx, tenant_id, subject_id, changed, cause=cause, erase=op.startswith("delete"), now=self.now
        )
        self._log(
            tenant_id,
            subject_id,
            "epoch",
            target_id,
            {"cause": op, "input_epoch": clock.input_epoch, "stale_artifacts": stale},
        )
        if key not in self._moved:
            queue.input_changed(self.tx, tenant_id, subject_id, cause, now=self.now)
            self._moved.add(key)
        return stale

    def _touch(self, fact: Fact) -> None:
        self._touched.setdefault((fact.tenant_id, fact.subject_id), set()).add(fact.fact_id)

    def _log(
        self, tenant_id: str, subject_id: str, op: str, target_id: str, detail: dict[str, Any] | None = None
    ) -> None:
        self.tx.add_log(tenant_id, subject_id, at=self.now, op=op, target_id=target_id, detail=detail or {})

    @property
    def registry(self) -> Registry:
        """The predicate registry (read on first use; on a store with none, the memory's default
        stored now: :meth:`~lossgate.model.registry.RegistryCache.needed`); raises
        :class:`InvalidInput` if there is neither."""
        if self._registry is None and self._registries is not None:
            self._registry = self._registries.needed(self.tx)
        if self._registry is None:
            raise InvalidInput("no predicate registry is loaded (lossgate init --predicates FILE)")
        return self._registry

    # -- raw layer ---------------------------------------------------------------------
    def append(self, events: Iterable[NewEvent]) -> AppendResult:
        """Append a batch of events, idempotently.

        An id already stored with the same content and trust is a no-op (listed in
        ``duplicates``); with other content it raises :class:`IdempotencyConflict`
        and, as the whole transaction rolls back, nothing from the batch is written.
        """
        # The append hot path: the timestamp is formatted once, for the hash and the row.
        # by (tenant, id): an event id is one tenant's, and two tenants may both use it
        fresh: dict[tuple[str, str], tuple[NewEvent, str, str]] = {}
        by_tenant: dict[str, list[str]] = {}
        for ev in events:
            policies = self.policies_in_force(ev.tenant_id)
            if policies:
                # A taint policy in force sets the trust of a new event it matches (trust is
                # not hashed: a replay of the event gets the same trust and stays a no-op).
                imposed = effective_trust(policies, ev.kind, ev.actor)
                if imposed is not None and imposed != ev.trust:
                    ev = ev.model_copy(update={"trust": imposed})
            iso = ev.occurred_at.isoformat()
            h = ev.content_hash(iso)
            seen = fresh.get((ev.tenant_id, ev.event_id))
            if seen is not None:
                if seen[1] != h or seen[0].trust != ev.trust:
                    raise IdempotencyConflict(f"event {ev.event_id}: appears twice in the batch with different content")
                continue
            fresh[(ev.tenant_id, ev.event_id)] = (ev, h, iso)
            by_tenant.setdefault(ev.tenant_id, []).append(ev.event_id)

        # Lock the clocks first (in a stable order, so concurrent batches cannot deadlock): a
        # retry racing its original then waits, and finds the ids taken instead of colliding.
        for key in sorted({(ev.tenant_id, ev.subject_id) for ev, _, _ in fresh.values()}):
            self._clock(*key)
        duplicates: list[str] = []
        for tenant_id, ids in by_tenant.items():
            for event_id, (subject_id, stored_hash, trust) in self.tx.taken_event_ids(tenant_id, ids).items():
                ev, h, _ = fresh.pop((tenant_id, event_id))
                if stored_hash != h and subject_id == ev.subject_id and "occurred_at" not in ev.model_fields_set:
                    # A retry that named the id but not the time: the time defaulted to now on
                    # each try, so the retry is compared at the stored event's time.
                    (stored,) = self.tx.events(tenant_id, subject_id, ids=[event_id])
                    h = ev.content_hash(stored.occurred_at.isoformat())
                if subject_id != ev.subject_id or stored_hash != h or trust != ev.trust:
                    raise IdempotencyConflict(
                        f"event {event_id}: already stored with different content "
                        f"(stored {stored_hash[:19]}, got {h[:19]})"
                    )
                duplicates.append(event_id)

        # The hot path: plain tuples, no per-event model construction or clock copies.
        items: list[tuple[NewEvent, int, str, str]] = []
        appended: list[EventRef] = []
        high: dict[tuple[str, str], int] = {}
        for ev, h, iso in fresh.values():
            key = (ev.tenant_id, ev.subject_id)
            seq = high.get(key)
            if seq is None:
                seq = self._clock(*key).high_water
            seq += 1
            high[key] = seq
            appended.append(EventRef(ev.tenant_id, ev.subject_id, ev.event_id, seq, h))
            items.append((ev, seq, h, iso))
        if items:
            self.tx.insert_events(items, recorded_at=self.now)
        for key, seq in high.items():
            self._clocks[key] = self._clocks[key].model_copy(update={"high_water": seq})
            self.tx.save_clock(self._clocks[key])
            queue.tail_grew(self.tx, *key, high_water=seq, now=self.now, threshold=self.rebuild_after)
        return AppendResult(
            appended=tuple(appended),
            duplicates=tuple(duplicates),
            clocks=tuple(self._clocks[k] for k in high),
        )

    def _event(self, tenant_id: str, subject_id: str, event_id: str) -> Event:
        found = self.tx.events(tenant_id, subject_id, ids=[event_id])
        if not found:
            raise NotFound(
                f"event {shown_id(event_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}"
            )
        return found[0]

    def delete_event(self, tenant_id: str, subject_id: str, event_id: str, *, reason: str = "") -> Event:
        """Delete an event: its text and payload are purged, its id and hash stay as a tombstone.
        Facts resting only on deleted or revoked events leave the active set. Idempotent."""
        ev = self._event(tenant_id, subject_id, event_id)
        if ev.state == "deleted":
            return ev
        self.tx.set_event_state(tenant_id, subject_id, event_id, "deleted", purge=True)
        self._erasing()
        self._log(tenant_id, subject_id, "delete_event", event_id, {"reason": reason, "content_hash": ev.content_hash})
        self._reassess(tenant_id, subject_id, [event_id], cause="source_deleted")
        self._invalidate(tenant_id, subject_id, "delete_event", event_id)
        return self._event(tenant_id, subject_id, event_id)

    def revoke_event(self, tenant_id: str, subject_id: str, event_id: str, *, reason: str = "") -> Event:
        """Revoke an event: its content stays for audit but leaves the authorized view."""
        ev = self._event(tenant_id, subject_id, event_id)
        if ev.state != "valid":
            return ev  # revoked already, or deleted (which is stronger): nothing more to do
        self.tx.set_event_state(tenant_id, subject_id, event_id, "revoked", purge=False)
        self._log(tenant_id, subject_id, "revoke_event", event_id, {"reason": reason})
        self._reassess(tenant_id, subject_id, [event_id], cause="source_revoked")
        self._invalidate(tenant_id, subject_id, "revoke_event", event_id)
        return self._event(tenant_id, subject_id, event_id)

    def set_trust(self, tenant_id: str, subject_id: str, event_id: str, trust: Trust, *, reason: str = "") -> Event:
        """Change an event's trust. Facts whose authority now exceeds their sources' trust are revoked.
        A trust that is not one of :data:`~lossgate.model.records.Trust`'s raises :class:`InvalidInput`."""
        _check_choice("trust", trust, Trust)
        ev = self._event(tenant_id, subject_id, event_id)
        if ev.trust == trust:
            return ev
        if ev.state != "valid":
            raise LifecycleError(f"event {shown_id(event_id)} is {ev.state}; its trust cannot change")
        self.tx.set_event_trust(tenant_id, subject_id, event_id, trust)
        self._log(tenant_id, subject_id, "set_trust", event_id, {"from": ev.trust, "to": trust, "reason": reason})
        self._reassess(tenant_id, subject_id, [event_id], cause="source_trust_changed")
        self._invalidate(tenant_id, subject_id, "set_trust", event_id)
        return self._event(tenant_id, subject_id, event_id)

    # -- taint policies ----------------------------------------------------------------
    def policies_in_force(self, tenant_id: str) -> list[TaintPolicy]:
        """The newest version of each of the tenant's taint policies (read once per ledger)."""
        if tenant_id not in self._policies:
            self._policies[tenant_id] = in_force(self.tx.taint_policies(tenant_id))
        return self._policies[tenant_id]

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
        """Set (or upgrade) a tenant's taint policy and apply it, all in this transaction.

        The policy's next version is stored (setting the same match and trust again is a
        no-op, ``changed=False``). Then, subject by subject (each locked in bytewise order),
        every valid event it matches takes the trust the policies in force give it (the
        lowest of those that match, :func:`~lossgate.model.records.effective_trust`), each change
        logged as a ``set_trust``; facts resting on those events are re-checked, and an
        active fact whose authority now exceeds its sources' trust is revoked and recorded
        again at that trust (as ``quoted`` when its sources are untrusted); the subject's
        epoch moves, every artifact derived from the changed events or facts goes stale and
        a rebuild is queued (:meth:`_invalidate`); one ``taint_policy`` line in the subject's
        log says which policy version did it. Events appended later get the policy's trust
        as they are appended (:meth:`append`). Events a new version no longer matches keep
        the trust they have. A trust or kind that is not one of their type's raises
        :class:`InvalidInput`."""
        _check_choice("trust", trust, Trust)
        if kind is not None:
            _check_choice("kind", kind, EventKind)
        current = {p.policy_id: p for p in self.policies_in_force(tenant_id)}
        previous = current.get(policy_id)
        policy = TaintPolicy(
            tenant_id=tenant_id,
            policy_id=policy_id,
            actor=actor,
            kind=kind,
            trust=trust,
            reason=reason,
            version=previous.version + 1 if previous else 1,
            created_at=self.now,
        )
        if previous is not None and previous.same_rule(policy):
            return TaintOutcome(policy=previous, changed=False)
        self.tx.save_taint_policy(policy)
        current[policy_id] = policy
        policies = self._policies[tenant_id] = list(current.values())
        changed: list[tuple[str, str]] = []
        stale: list[tuple[str, str]] = []
        demoted: list[tuple[str, str, str]] = []
        label = f"{policy_id} v{policy.version}"
        for subject_id in self.tx.subjects(tenant_id):
            self._clock(tenant_id, subject_id)  # lock the subject before reading its events
            moved: list[str] = []
            for event_id, ev_kind, ev_actor, ev_trust in self.tx.events_matching(
                tenant_id, subject_id, kind=kind, actor=actor
            ):
                target = effective_trust(policies, ev_kind, ev_actor)
                if target is None or target == ev_trust:
                    continue
                self.tx.set_event_trust(tenant_id, subject_id, event_id, target)
                self._log(
                    tenant_id,
                    subject_id,
                    "set_trust",
                    event_id,
                    {"from": ev_trust, "to": target, "reason": f"taint policy {label}"},
                )
                moved.append(event_id)
            if not moved:
                continue
            self._log(
                tenant_id,
                subject_id,
                "taint_policy",
                policy_id,
                {
                    "version": policy.version,
                    "kind": kind,
                    "actor": actor,
                    "trust": trust,
                    "reason": reason,
                    "events": moved,
                },
            )
            self._demoted = []
            self._reassess(tenant_id, subject_id, moved, cause="source_trust_changed", demote=True)
            demoted += [(subject_id, old.fact_id, new.fact_id) for old, new in self._demoted]
            # The changed events are inputs too: what was derived from them goes stale.
            gone = self._invalidate(tenant_id, subject_id, "taint_policy", policy_id, erased=moved)
            changed += [(subject_id, e) for e in moved]
            stale += [(subject_id, a) for a in gone]
        return TaintOutcome(
            policy=policy, events=tuple(changed), stale_artifacts=tuple(stale), demoted_facts=tuple(demoted)
        )

    def _demote(self, fact: Fact, standing: list[Event]) -> None:
        """Revoke ``fact``, whose authority exceeds its standing sources' trust, and record it
        again at that trust: as ``quoted`` when they are untrusted (an untrusted source is
        never asserted; invariant 8). The log links the two."""
        self._leave(fact, "revoked", cause="authority_exceeds_sources")
        authority = AUTHORITY_FOR_TRUST[max((e.trust for e in standing), key=TRUST_RANK.__getitem__)]
        modality = "quoted" if authority == "untrusted" else fact.modality
        again = self._assert(
            NewFact(
                tenant_id=fact.tenant_id,
                subject_id=fact.subject_id,
                predicate=fact.predicate,
                value=fact.encoded_value(),
                qualifiers=fact.qualifiers,
                polarity=fact.polarity,
                modality=modality,
                authority=authority,
                source_event_ids=tuple(e.event_id for e in standing),
                valid_from=fact.valid_from,
            ),
            supersedes=None,
        )
        self._log(
            fact.tenant_id,
            fact.subject_id,
            "demote",
            fact.fact_id,
            {"to": again.fact_id, "authority": authority, "modality": modality},
        )
        self._demoted.append((fact, again))

    def _erased_with_facts(self, tenant_id: str, subject_id: str, event_ids: Sequence[str]) -> set[str]:
        """Those of ``event_ids`` whose text was erased with a deleted fact drawn from them."""
        wanted = set(event_ids)
        # Only deleted facts: reading every fact citing a popular event made each assert cost
        # the subject's size (a bulk import of 2,000 facts took 386 s on PostgreSQL).
        return {
            e
            for f in self.tx.facts_citing(tenant_id, subject_id, list(wanted), statuses=["deleted"])
            for e in f.source_event_ids
            if e in wanted
        }

    def _standing(self, fact: Fact) -> tuple[list[Event], list[Event]]:
        """``(all sources, standing sources)`` of a fact. A fact *stands on* those of its source
        events that are still in the authorized view: valid, and not erased with a deleted fact
        drawn from them. The same rule decides selection (what a compressor may cite), the gate
        (``provenance_missing`` and ``stale_input``) and recall."""
        t, s = fact.tenant_id, fact.subject_id
        sources = self.tx.events(t, s, ids=list(fact.source_event_ids))
        erased = self._erased_with_facts(t, s, [e.event_id for e in sources if e.state == "valid"])
        return sources, [e for e in sources if e.state == "valid" and e.event_id not in erased]

    def _withdraw_proposals(self, tenant_id: str, subject_id: str, event_ids: set[str], *, erase: bool) -> None:
        """Extraction proposals drawn from events that left the view: those waiting for review
        are rejected, and when the events were deleted every one loses its value (a proposal
        quotes its source)."""
        changed = []
        for p in self.tx.proposals(tenant_id, subject_id):
            if not event_ids & set(p.source_event_ids):
                continue
            update: dict[str, Any] = {}
            if p.status == "review":
                update.update(status="rejected", reason="a source left the authorized view")
            if erase and p.value is not None:
                update.update(value=None, qualifiers=())
                self._erasing()
            if update:
                changed.append(p.model_copy(update=update))
        if changed:
            self.tx.save_proposals(changed)

    def _reassess(
        self, tenant_id: str, subject_id: str, event_ids: Sequence[str], *, cause: str, demote: bool = False
    ) -> None:
        """Re-check every fact citing ``event_ids`` after those events changed (deleted, revoked,
        erased with a deleted fact, trust changed). The rule a fact stands on
        (``docs/invariants.md``):

        * a fact left with no standing source leaves the active set: ``deleted`` (value purged)
          if any source was deleted, else ``revoked``;
        * an active fact whose standing sources no longer reach its authority is ``revoked``
          (invariant 8: a fact never claims more than what it rests on); with ``demote`` (a
          taint policy), it is also recorded again at its sources' trust (:meth:`_demote`);
        * otherwise an active fact stands on its remaining sources, and its history records
          which sources it lost (``source_lost``). Its descendants go stale all the same.
        """
        changed = set(event_ids)
        if cause in ("source_deleted", "source_erased", "source_revoked"):
            self._withdraw_proposals(tenant_id, subject_id, changed, erase=cause != "source_revoked")
        for fact in self.tx.facts_citing(tenant_id, subject_id, list(changed)):
            if fact.status == "deleted":
                continue
            sources, standing = self._standing(fact)
            if not standing:
                if any(e.state == "deleted" for e in sources):
                    self._leave(fact, "deleted", cause=cause, purge=True)
                elif fact.status != "revoked":
                    self._leave(fact, "revoked", cause=cause)
                continue
            if fact.status not in ("active", "superseded"):
                continue
            if TRUST_RANK[fact.authority] > max(TRUST_RANK[e.trust] for e in standing):
                if demote and fact.status == "active":
                    self._demote(fact, standing)
                else:
                    self._leave(fact, "revoked", cause="authority_exceeds_sources")
                continue
            lost = changed & (set(fact.source_event_ids) - {e.event_id for e in standing})
            if lost and fact.status == "active":
                self._touch(fact)
                self._log(
                    tenant_id,
                    subject_id,
                    "source_lost",
                    fact.fact_id,
                    {"cause": cause, "lost": sorted(lost), "standing": [e.event_id for e in standing]},
                )

    def _erasing(self) -> None:
        """This transaction erases content: the text caches forget it after the commit
        (:func:`transaction`), or now for a ledger over a bare store transaction."""
        self.erased = True
        if self._forget_now:
            forget_text()

    def _leave(self, fact: Fact, status: FactStatus, *, cause: str, purge: bool = False) -> None:
        self._touch(fact)
        self.tx.update_fact(
            fact.tenant_id,
            fact.subject_id,
            fact.fact_id,
            status=status,
            purge=purge,
            terms=_value_terms(fact) if status in ("superseded", "revoked") and not purge else (),
        )
        if purge:
            self._erasing()
        self._log(fact.tenant_id, fact.subject_id, status, fact.fact_id, {"cause": cause, "previous": fact.status})
        self._resolve_conflicts(fact, f"{fact.fact_id} {status} ({cause})")

    def _resolve_conflicts(self, fact: Fact, resolution: str) -> None:
        for c in self.tx.conflicts(fact.tenant_id, fact.subject_id, unresolved_only=True, fact_id=fact.fact_id):
            self.tx.resolve_conflict(fact.tenant_id, fact.subject_id, c.conflict_id, at=self.now, resolution=resolution)
            self._log(fact.tenant_id, fact.subject_id, "resolve_conflict", c.conflict_id, {"resolution": resolution})

    # -- facts -------------------------------------------------------------------------
    def assert_fact(self, new: NewFact) -> Fact:
        """Assert a fact. Same id and content again is a no-op; other content raises."""
        return self._assert(new, supersedes=None)

    def assert_facts(self, facts: Iterable[NewFact]) -> list[Fact]:
        return [self._assert(f, supersedes=None) for f in facts]

    def supersede(self, tenant_id: str, subject_id: str, old_fact_id: str, new: NewFact) -> Fact:
        """Replace an active fact with a newer one of the same predicate. The old fact
        becomes ``superseded`` and points at its replacement; its conflicts resolve.
        Replaying the same supersession is a no-op that returns the replacement."""
        if (new.tenant_id, new.subject_id) != (tenant_id, subject_id):
            raise InvalidInput(f"fact {new.fact_id}: a fact can only supersede a fact of the same tenant and subject")
        twin = self.stored_twin(new, supersedes=old_fact_id)
        if twin is not None:
            return twin
        old = self.fact(tenant_id, subject_id, old_fact_id)
        if old.status != "active":
            raise LifecycleError(f"fact {shown_id(old_fact_id)} is {old.status}; only an active fact can be superseded")
        if new.predicate != old.predicate:
            raise LifecycleError(
                f"fact {old_fact_id} has predicate {old.predicate!r}; it cannot be superseded by {new.predicate!r}"
            )
        return self._assert(new, supersedes=old)

    def delete_fact(self, tenant_id: str, subject_id: str, fact_id: str, *, reason: str = "") -> Fact:
        """Delete a fact: value and qualifiers purged, id and hash kept, and the events it was
        drawn from deleted with it (their text states the value). Idempotent."""
        fact = self.fact(tenant_id, subject_id, fact_id)
        if fact.status == "deleted":
            return fact
        self._leave(fact, "deleted", cause=reason or "deleted", purge=True)
        # The text of its source events states the deleted value: it is erased with the fact
        # (purged, tombstones kept), and the other facts drawn from those events stand on
        # what they have left.
        for ev in self.tx.events(tenant_id, subject_id, ids=list(fact.source_event_ids)):
            if ev.state != "deleted":
                self.tx.set_event_state(tenant_id, subject_id, ev.event_id, "deleted", purge=True)
                self._erasing()
                self._log(
                    tenant_id,
                    subject_id,
                    "delete_event",
                    ev.event_id,
                    {"reason": f"erased with fact {fact_id}", "content_hash": ev.content_hash},
                )
        self._reassess(tenant_id, subject_id, fact.source_event_ids, cause="source_erased")
        self._invalidate(tenant_id, subject_id, "delete_fact", fact_id, erased=fact.source_event_ids)
        return self.fact(tenant_id, subject_id, fact_id)

    def fact(self, tenant_id: str, subject_id: str, fact_id: str) -> Fact:
        found = self.tx.facts(tenant_id, subject_id, ids=[fact_id])
        if not found:
            raise NotFound(f"fact {shown_id(fact_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
        return found[0]

    def _identity(self, new: NewFact, supersedes: str | None) -> _Identity:
        """The id, content hash, coerced value and canonical value of a new fact.
        Raises on an unknown predicate or a value of the wrong type."""
        pred = self.registry.get(new.predicate)
        value = self.registry.check(new)
        canon = canonical_value(pred.value_type, value)
        body = fact_hash_content(
            tenant_id=new.tenant_id,
            subject_id=new.subject_id,
            fact_id="",
            predicate=pred.name,
            value_type=pred.value_type,
            canonical=canon,
            qualifiers=new.qualifiers,
            polarity=new.polarity,
            modality=new.modality,
            authority=new.authority,
            source_event_ids=new.source_event_ids,
            valid_from=new.valid_from,
            supersedes=supersedes,
        )
        fact_id = new.fact_id or "f-" + content_hash(body)[7:27]
        return _Identity(fact_id, content_hash({**body, "fact_id": fact_id}), value, canon)

    def stored_twin(self, new: NewFact, *, supersedes: str | None = None) -> Fact | None:
        """The stored fact identical to ``new`` (same id and content hash), if any.

        Raises :class:`IdempotencyConflict` if the id is stored with other content."""
        identity = self._identity(new, supersedes)
        fact_id, h = identity.fact_id, identity.content_hash
        taken = self.tx.taken_fact_ids(new.tenant_id, [fact_id]).get(fact_id)
        if taken is None:
            return None
        if taken[0] != new.subject_id or taken[1] != h:
            raise IdempotencyConflict(f"fact {fact_id}: already stored with different content")
        return self.fact(new.tenant_id, new.subject_id, fact_id)

    def _assert(self, new: NewFact, *, supersedes: Fact | None) -> Fact:
        t, s = new.tenant_id, new.subject_id
        # Idempotency first: replaying a fact whose source was deleted since is still a no-op.
        twin = self.stored_twin(new, supersedes=supersedes.fact_id if supersedes else None)
        if twin is not None:
            return twin
        pred = self.registry.get(new.predicate)
        fact_id, h, value, canon = self._identity(new, supersedes.fact_id if supersedes else None)
        label = new.fact_id or f"({new.predicate})"

        sources = self.tx.events(t, s, ids=list(new.source_event_ids))
        missing = sorted(set(new.source_event_ids) - {e.event_id for e in sources})
        if missing:
            raise NotFound(f"fact {label}: source event(s) {missing} do not exist for tenant {t!r}, subject {s!r}")
        gone = [e.event_id for e in sources if e.state != "valid"]
        if gone:
            raise LifecycleError(f"fact {label}: source event(s) {gone} are deleted or revoked")
        erased = sorted(self._erased_with_facts(t, s, new.source_event_ids))
        if erased:
            raise LifecycleError(
                f"fact {label}: the text of source event(s) {erased} was erased "
                "with a deleted fact; it can no longer support a fact"
            )
        best = max(TRUST_RANK[e.trust] for e in sources)
        if TRUST_RANK[new.authority] > best:
            raise InvalidInput(
                f"fact {label}: authority {new.authority!r} exceeds the trust of its sources "
                f"({sorted({e.trust for e in sources})}); a fact can never claim more authority than what it rests on"
            )
        if new.authority == "untrusted" and new.modality == "asserted":
            raise InvalidInput(f"fact {label}: an untrusted fact must be 'quoted' or 'speculative', not 'asserted'")
        if new.authority == "untrusted" and pred.category in ("instruction", "preference") and new.modality != "quoted":
            # Invariant 8: untrusted text never becomes an instruction or a preference; the gate
            # refuses any summary that states one, so the ledger must not hold one either.
            raise InvalidInput(f"fact {label}: an untrusted {pred.category} can only be recorded as 'quoted'")

        clock = self._advance(t, s, seqs=1)
        fact = Fact(
            tenant_id=t,
            subject_id=s,
            fact_id=fact_id,
            seq=clock.high_water,
            predicate=pred.name,
            registry_version=self.registry.version,
            value_type=pred.value_type,
            value=value,
            qualifiers=new.qualifiers,
            polarity=new.polarity,
            modality=new.modality,
            authority=new.authority,
            source_event_ids=new.source_event_ids,
            supersedes=supersedes.fact_id if supersedes else None,
            valid_from=new.valid_from,
            recorded_at=self.now,
            content_hash=h,
            criticality=pred.criticality,
        )
        self.tx.insert_facts([fact])
        self._log(t, s, "assert", fact_id, {"predicate": pred.name, "seq": fact.seq})
        if supersedes is not None:
            self.tx.update_fact(
                t, s, supersedes.fact_id, status="superseded", superseded_by=fact_id, terms=_value_terms(supersedes)
            )
            self._touch(supersedes)
            self._log(t, s, "supersede", supersedes.fact_id, {"by": fact_id})
            self._resolve_conflicts(supersedes, f"superseded by {fact_id}")

        new_conflict = False
        if pred.cardinality == "one" and fact.modality == "asserted":
            new_conflict = self._detect_conflicts(fact, canon)
        if supersedes is not None or new_conflict:
            self._invalidate(t, s, "supersede" if supersedes is not None else "conflict", fact_id)
        return fact

    def _detect_conflicts(self, fact: Fact, canon: object) -> bool:
        """Two active asserted values of a cardinality-one predicate disagree: record it."""
        found = False
        mine = (canon, fact.polarity, fact.qualifiers)
        for other in self.tx.facts(fact.tenant_id, fact.subject_id, statuses=["active"], predicate=fact.predicate):
            if other.fact_id == fact.fact_id or other.modality != "asserted":
                continue
            if (other.canonical_value(), other.polarity, other.qualifiers) == mine:
                continue  # the same statement again corroborates; it does not conflict
            pair = (other.fact_id, fact.fact_id) if other.fact_id < fact.fact_id else (fact.fact_id, other.fact_id)
            conflict = Conflict(
                tenant_id=fact.tenant_id,
                subject_id=fact.subject_id,
                conflict_id="c-" + _short_hash(fact.tenant_id, fact.subject_id, *pair),
                predicate=fact.predicate,
                fact_ids=pair,
                detected_at=self.now,
            )
            self.tx.insert_conflict(conflict)
            self._touch(other)
            self._log(fact.tenant_id, fact.subject_id, "conflict", conflict.conflict_id, {"facts": list(pair)})
            found = True
        return found


def _value_terms(fact: Fact) -> tuple[str, ...]:
    """The terms a retired value is looked up by (:func:`lossgate.gate.superseded.value_terms`),
    imported on first use: the gate is heavy, and ``import lossgate`` leaves it for consolidation."""
    from lossgate.gate.superseded import value_terms

    return value_terms(fact)
