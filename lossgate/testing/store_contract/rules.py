"""The rules across the tiers (:mod:`lossgate.store.protocol`): every primitive with its exact
signature, the scope rule (every read and write of a subject, given three scopes), the subject
locked on its first touch by every primitive that touches one, instants with other UTC offsets,
creation order breaking ties, and a script over the derived layer, the evidence and the queue
with each answer stated. These need every tier: run them once the store has them all."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from lossgate.model.derived_records import Alias, Attempt, ExpectedAlias, LineageEdge
from lossgate.model.records import ArtifactBody, Clock
from lossgate.store.protocol import ArtifactDocument, FactFilter, ReadTx, Store, WriteTx, primitives, touch_of
from lossgate.testing.store_contract.support import (
    NOW,
    Contract,
    Handoff,
    S,
    T,
    _attempt,
    _conflict,
    _epoch_after_holding,
    _ids,
    _proposal,
    _touching,
    append,
    artifact,
    check_signatures,
    event,
    fact,
    guard_result,
    in_threads,
    recall_record,
    refusal,
    response_record,
)

__all__ = ["RulesContract"]


# A first touch of the subject by every primitive that touches one (its own, a record's,
# each record's, or the lock itself), reading or writing. The first-touch test runs each
# after a setup that appended e1 and asserted f1 and f2 (citing e1) to the subject.
FIRST_TOUCHES: dict[str, Callable[[WriteTx], object]] = {
    # ledger
    "clock": lambda tx: tx.clock(T, S),
    "events": lambda tx: tx.events(T, S, ids=["e1"]),
    "facts": lambda tx: tx.facts(T, S),
    "fact_sets": lambda tx: tx.fact_sets(T, S, [FactFilter()]),
    "facts_citing": lambda tx: tx.facts_citing(T, S, ["e1"]),
    "events_matching": lambda tx: tx.events_matching(T, S, kind="message", actor=None),
    "tier_events": lambda tx: tx.tier_events(T, S, "hot", recorded_through=NOW),
    "tier_oldest": lambda tx: tx.tier_oldest(T, S),
    "conflicts": lambda tx: tx.conflicts(T, S),
    "log": lambda tx: tx.log(T, S),
    "lock_clock": lambda tx: tx.lock_clock(T, S),
    "save_clock": lambda tx: tx.save_clock(Clock(tenant_id=T, subject_id=S, high_water=1)),
    "insert_events": lambda tx: tx.insert_events([(event("e9"), 9, "sha256:e9", NOW.isoformat())], recorded_at=NOW),
    "set_event_state": lambda tx: tx.set_event_state(T, S, "e1", "revoked", purge=False),
    "set_event_trust": lambda tx: tx.set_event_trust(T, S, "e1", "tool"),
    "insert_facts": lambda tx: tx.insert_facts([fact("f9", 1, ("e1",))]),
    "update_fact": lambda tx: tx.update_fact(T, S, "f1", status="superseded", superseded_by="f2"),
    "retired_terms_kept": lambda tx: tx.retired_terms_kept(T, S),
    "retired_facts_stating": lambda tx: tx.retired_facts_stating(T, S, ["num=5"], through_seq=9),
    "keep_retired_terms": lambda tx: tx.keep_retired_terms(T, S, {"f1": ["num=5"]}),
    "insert_conflict": lambda tx: tx.insert_conflict(_conflict("c1", "f1", "f2")),
    "resolve_conflict": lambda tx: tx.resolve_conflict(T, S, "c9", at=NOW, resolution="none"),
    "add_log": lambda tx: tx.add_log(T, S, at=NOW, op="assert", target_id="f1", detail={}),
    # derived
    "alias": lambda tx: tx.alias(T, S),
    "artifact": lambda tx: tx.artifact(T, S, "a1"),
    "recall_head": lambda tx: tx.recall_head(T, S),
    "artifact_head": lambda tx: tx.artifact_head(T, S, "a1"),
    "artifact_gate": lambda tx: tx.artifact_gate(T, S, "a1"),
    "artifact_drops": lambda tx: tx.artifact_drops(T, S, ["a1"]),
    "artifacts": lambda tx: tx.artifacts(T, S),
    "lineage": lambda tx: tx.lineage(T, S, "a1"),
    "descendants": lambda tx: tx.descendants(T, S, ["e1"]),
    "attempts": lambda tx: tx.attempts(T, S),
    "attempt_tail": lambda tx: tx.attempt_tail(T, S),
    "attempt": lambda tx: tx.attempt(T, S, "at1"),
    "recalls": lambda tx: tx.recalls(T, S),
    "recalls_touching": lambda tx: tx.recalls_touching(T, S, ["e1"]),
    "recall_record": lambda tx: tx.recall_record(T, S, "r1"),
    "guard_result": lambda tx: tx.guard_result(T, S, "g1"),
    "guard_results": lambda tx: tx.guard_results(T, S),
    "guard_results_touching": lambda tx: tx.guard_results_touching(T, S, ["e1"]),
    "responses": lambda tx: tx.responses(T, S),
    "responses_touching": lambda tx: tx.responses_touching(T, S, ["e1"]),
    "proposals": lambda tx: tx.proposals(T, S),
    "extracted_through": lambda tx: tx.extracted_through(T, S),
    "lock_alias": lambda tx: tx.lock_alias(T, S),
    "cas_alias": lambda tx: tx.cas_alias(
        T,
        S,
        expected=ExpectedAlias(parent_artifact_id="a9", source_epoch=0, covers_through=0),
        artifact_id="a1",
        source_epoch=0,
        covers_through=1,
        at=NOW,
    ),
    "insert_artifact": lambda tx: tx.insert_artifact(artifact("a1", Alias(tenant_id=T, subject_id=S)), []),
    "set_artifact_state": lambda tx: tx.set_artifact_state(T, S, ["a1"], "retired", reason="test"),
    "save_attempt": lambda tx: tx.save_attempt(_attempt("at1", 1, "rejected")),
    "replace_artifact_body": lambda tx: tx.replace_artifact_body(T, S, "a1", ArtifactBody(tenant_id=T, subject_id=S)),
    "replace_recall": lambda tx: tx.replace_recall(recall_record("r1")),
    "record_guard": lambda tx: tx.record_guard(guard_result("g1")),
    "replace_guard": lambda tx: tx.replace_guard(guard_result("g1")),
    "record_response": lambda tx: tx.record_response(response_record("rs1", "r1")),
    "replace_response": lambda tx: tx.replace_response(response_record("rs1", "r1")),
    "replace_artifact_documents": lambda tx: tx.replace_artifact_documents(
        [(ArtifactDocument(T, S, "a1", "candidate", "{}", "{}"), "{}", "{}")]
    ),
    "forget_records": lambda tx: tx.forget_records(T, S, before=NOW),
    "set_tier": lambda tx: tx.set_tier(T, S, through_seq=1, tier="cold"),
    "save_proposals": lambda tx: tx.save_proposals([_proposal("p1", "e1")]),
    "set_extracted_through": lambda tx: tx.set_extracted_through(T, S, 1),
    # queue
    "enqueue_job": lambda tx: tx.enqueue_job(T, S, reason="test", run_after=NOW, at=NOW),
    "finish_job": lambda tx: tx.finish_job(T, S, 999, owner="w", status="done", at=NOW),
    "cancel_pending_jobs": lambda tx: tx.cancel_pending_jobs(T, S, at=NOW, reason="test"),
    # search
    "search_events": lambda tx: tx.search_events(T, S, "text", limit=5),
    "search_facts": lambda tx: tx.search_facts(T, S, "seats", limit=5),
    "search_backlog": lambda tx: tx.search_backlog(T, S),
    "vectors": lambda tx: tx.vectors(T, S, "m", "event"),
    "vector_size": lambda tx: tx.vector_size(T, S, "m"),
    "vectors_version": lambda tx: tx.vectors_version(T, S),
    "unembedded": lambda tx: tx.unembedded(T, S, "m", "event", after_seq=0, limit=5),
    "put_vectors": lambda tx: tx.put_vectors(T, S, "m", [("event", "e1", b"\0\0\0\0")]),
    "drop_vectors": lambda tx: tx.drop_vectors(T, S, "m"),
}


# -- the scope rule: three scopes, each primitive asked for one ---------------------------

# (prefix of every id, tenant, subject, how many events), in the order they are written:
# the subject under test last, and the others' ids sorting before its own, so that a
# statement that forgets its subject (or tenant) meets another's row first, in creation
# order and in key order alike.
SCOPES = (("sib", T, "u0", 3), ("oth", "aardvark", S, 4), ("own", T, S, 2))
_PREFIXES = [p for p, *_ in SCOPES]


def _all(suffix: str) -> list[str]:
    """The id ``<prefix>-<suffix>`` of every scope."""
    return [f"{p}-{suffix}" for p in _PREFIXES]


def _write_scope(tx: WriteTx, p: str, t: str, s: str, n: int) -> None:
    """A subject with something in every table, every id prefixed with ``p``; ``n`` (the
    number of events) sets each number a primitive reports, and when its events were
    recorded (``n`` days before NOW: the other scopes' events are older)."""
    append(
        tx,
        *(event(f"{p}-e{i}", f"refund {p} request {i}", subject=s, tenant=t) for i in range(1, n + 1)),
        recorded_at=NOW - timedelta(days=n),
    )
    tx.insert_facts(
        [
            fact(f"{p}-f1", 1, (f"{p}-e1",), tenant=t, subject=s),
            fact(f"{p}-f2", 2, (f"{p}-e2",), value=6, tenant=t, subject=s),
        ]
    )
    tx.update_fact(t, s, f"{p}-f2", status="superseded", superseded_by=f"{p}-f1", terms=("num=6", "@refund"))
    tx.insert_conflict(_conflict(f"{p}-c1", f"{p}-f1", f"{p}-f2", tenant=t, subject=s))
    tx.add_log(t, s, at=NOW, op="assert", target_id=f"{p}-f1", detail={"n": n})
    alias = tx.lock_alias(t, s)
    tx.insert_artifact(
        artifact(f"{p}-a1", alias),
        [LineageEdge(tenant_id=t, subject_id=s, artifact_id=f"{p}-a1", input_kind="event", input_id=f"{p}-e1")],
    )
    tx.insert_artifact(
        artifact(f"{p}-a2", alias),
        [LineageEdge(tenant_id=t, subject_id=s, artifact_id=f"{p}-a2", input_kind="artifact", input_id=f"{p}-a1")],
    )
    assert (
        tx.cas_alias(t, s, expected=alias.expected(), artifact_id=f"{p}-a1", source_epoch=0, covers_through=n, at=NOW)
        is True
    )
    tx.set_artifact_state(t, s, [f"{p}-a1"], "published", reason=p)
    for i in range(1, n):
        tx.save_attempt(_attempt(f"{p}-at{i}", i, "rejected", tenant=t, subject=s))
    tx.insert_recall(recall_record(f"{p}-r1", candidates=(f"{p}-e1",), tenant=t, subject=s))
    tx.record_guard(
        guard_result(
            f"{p}-g1",
            recall_id=f"{p}-r1",
            tenant=t,
            subject=s,
            refusals=(refusal(fact_id=f"{p}-f1", sources=(f"{p}-e1",)),),
        )
    )
    tx.record_guard(guard_result(f"{p}-g2", tenant=t, subject=s))
    tx.record_response(response_record(f"{p}-rs1", f"{p}-r1", guard_id=f"{p}-g1", tenant=t, subject=s))
    tx.save_proposals([_proposal(f"{p}-p1", f"{p}-e1", tenant=t, subject=s)])
    tx.set_extracted_through(t, s, n)
    for i in range(1, n):  # one call each: the vectors' version counts n - 1 changes
        tx.put_vectors(t, s, "m", [("event", f"{p}-e{i}", b"\0" * 4 * n)])
    tx.enqueue_job(t, s, reason=p, run_after=NOW, at=NOW)


def _recall_head(clock: Clock, alias: Alias, head: Any) -> tuple[int, str | None, str | None]:
    return clock.high_water, alias.artifact_id, None if head is None else head.artifact_id


def _attempt_tail(count: int, tail: list[Attempt]) -> tuple[int, list[str]]:
    return count, _ids(tail, "attempt_id")


# Every read of one subject, asked for scope (t, s), naming the ids of every scope where it
# takes ids; and what it must answer for the subject under test ("own", 2 events). A
# statement that forgot its subject (or its tenant) answers with another scope's ids or
# numbers. search_backlog is left out: SQLite's index is one for the file (its backlog is
# the file's, as the protocol says).
SCOPED_READS: dict[str, tuple[Callable[[Any, str, str], object], object]] = {
    "clock": (lambda tx, t, s: tx.clock(t, s).high_water, 2),
    "events": (
        lambda tx, t, s: [
            [(e.event_id, e.state, e.trust, e.tier) for e in tx.events(t, s)],
            _ids(tx.events(t, s, ids=_all("e1")), "event_id"),
            _ids(tx.events(t, s, seqs=[1, 2, 3, 4]), "event_id"),
        ],
        [
            [("own-e1", "valid", "authenticated_user", "hot"), ("own-e2", "valid", "authenticated_user", "hot")],
            ["own-e1"],
            ["own-e1", "own-e2"],
        ],
    ),
    "facts": (
        lambda tx, t, s: [
            [(f.fact_id, f.status) for f in tx.facts(t, s)],
            _ids(tx.facts(t, s, ids=_all("f1")), "fact_id"),
        ],
        [[("own-f1", "active"), ("own-f2", "superseded")], ["own-f1"]],
    ),
    "fact_sets": (
        lambda tx, t, s: [
            _ids(f, "fact_id")
            for f in tx.fact_sets(t, s, [FactFilter(), FactFilter(ids=_all("f2")), FactFilter(statuses=["active"])])
        ],
        [["own-f1", "own-f2"], ["own-f2"], ["own-f1"]],
    ),
    "facts_citing": (
        lambda tx, t, s: _ids(tx.facts_citing(t, s, _all("e1") + _all("e2")), "fact_id"),
        ["own-f1", "own-f2"],
    ),
    "retired_terms_kept": (lambda tx, t, s: tx.retired_terms_kept(t, s), True),
    "retired_facts_stating": (
        lambda tx, t, s: _ids(tx.retired_facts_stating(t, s, ["num=6"], through_seq=9), "fact_id"),
        ["own-f1", "own-f2"],
    ),
    "events_matching": (
        lambda tx, t, s: [e[0] for e in tx.events_matching(t, s, kind="message", actor="user")],
        ["own-e1", "own-e2"],
    ),
    "tier_events": (
        lambda tx, t, s: [
            _ids(tx.tier_events(t, s, "hot", recorded_through=NOW), "event_id"),
            _ids(tx.tier_events(t, s, "hot", recorded_through=NOW - timedelta(days=2)), "event_id"),
            _ids(tx.tier_events(t, s, "warm", recorded_through=NOW), "event_id"),
        ],
        [["own-e1", "own-e2"], ["own-e1", "own-e2"], []],
    ),
    "tier_oldest": (lambda tx, t, s: tx.tier_oldest(t, s), {"hot": NOW - timedelta(days=2)}),
    "conflicts": (
        lambda tx, t, s: [
            [(c.conflict_id, c.status) for c in tx.conflicts(t, s)],
            _ids(tx.conflicts(t, s, fact_id="sib-f1"), "conflict_id"),
        ],
        [[("own-c1", "unresolved")], []],
    ),
    "log": (
        lambda tx, t, s: [
            [(e.op, e.target_id) for e in tx.log(t, s)],
            [e.target_id for e in tx.log(t, s, target_ids=_all("f1"))],
        ],
        [[("assert", "own-f1")], ["own-f1"]],
    ),
    "alias": (lambda tx, t, s: (tx.alias(t, s).artifact_id, tx.alias(t, s).covers_through), ("own-a1", 2)),
    "artifact": (
        lambda tx, t, s: [None if (a := tx.artifact(t, s, i)) is None else a.artifact_id for i in _all("a1")],
        [None, None, "own-a1"],
    ),
    "recall_head": (lambda tx, t, s: _recall_head(*tx.recall_head(t, s)), (2, "own-a1", "own-a1")),
    "artifact_head": (
        lambda tx, t, s: [
            None if (h := tx.artifact_head(t, s, i)) is None else (h.artifact_id, h.summary) for i in _all("a2")
        ],
        [None, None, ("own-a2", "summary own-a2")],
    ),
    "artifact_gate": (
        lambda tx, t, s: [tx.artifact_gate(t, s, i) for i in _all("a1")],
        [None, None, ("published", "clean")],
    ),
    "artifact_drops": (lambda tx, t, s: tx.artifact_drops(t, s, _all("a1")), {"own-a1": (("e1",), ())}),
    "artifacts": (
        lambda tx, t, s: [
            [(a.artifact_id, a.state) for a in tx.artifacts(t, s)],
            _ids(tx.artifacts(t, s, states=["published"]), "artifact_id"),
        ],
        [[("own-a1", "published"), ("own-a2", "candidate")], ["own-a1"]],
    ),
    "lineage": (lambda tx, t, s: [[e.input_id for e in tx.lineage(t, s, i)] for i in _all("a1")], [[], [], ["own-e1"]]),
    "descendants": (lambda tx, t, s: tx.descendants(t, s, _all("e1")), ["own-a1", "own-a2"]),
    "attempts": (lambda tx, t, s: _ids(tx.attempts(t, s), "attempt_id"), ["own-at1"]),
    "attempt_tail": (lambda tx, t, s: _attempt_tail(*tx.attempt_tail(t, s)), (1, ["own-at1"])),
    "attempt": (
        lambda tx, t, s: [None if (a := tx.attempt(t, s, i)) is None else a.attempt_id for i in _all("at1")],
        [None, None, "own-at1"],
    ),
    "recalls": (lambda tx, t, s: _ids(tx.recalls(t, s), "recall_id"), ["own-r1"]),
    "recalls_touching": (lambda tx, t, s: _ids(tx.recalls_touching(t, s, _all("e1")), "recall_id"), ["own-r1"]),
    "recall_record": (
        lambda tx, t, s: [None if (r := tx.recall_record(t, s, i)) is None else r.recall_id for i in _all("r1")],
        [None, None, "own-r1"],
    ),
    "guard_result": (
        lambda tx, t, s: [None if (g := tx.guard_result(t, s, i)) is None else g.guard_id for i in _all("g1")],
        [None, None, "own-g1"],
    ),
    "guard_results": (lambda tx, t, s: _ids(tx.guard_results(t, s), "guard_id"), ["own-g2", "own-g1"]),
    "guard_results_touching": (
        lambda tx, t, s: [_ids(tx.guard_results_touching(t, s, _all(x)), "guard_id") for x in ("e1", "f1")],
        [["own-g1"], ["own-g1"]],
    ),
    "responses": (lambda tx, t, s: _ids(tx.responses(t, s), "response_id"), ["own-rs1"]),
    "responses_touching": (lambda tx, t, s: _ids(tx.responses_touching(t, s, _all("e1")), "response_id"), ["own-rs1"]),
    "proposals": (
        lambda tx, t, s: [
            _ids(tx.proposals(t, s), "proposal_id"),
            _ids(tx.proposals(t, s, ids=_all("p1")), "proposal_id"),
        ],
        [["own-p1"], ["own-p1"]],
    ),
    "extracted_through": (lambda tx, t, s: tx.extracted_through(t, s), 2),
    "search_events": (
        lambda tx, t, s: sorted(tx.search_events(t, s, "refund sib oth own", limit=20)),
        ["own-e1", "own-e2"],
    ),
    "search_facts": (lambda tx, t, s: tx.search_facts(t, s, "seats", limit=20), ["own-f1"]),
    "vectors": (lambda tx, t, s: [(i, len(v)) for i, v in tx.vectors(t, s, "m", "event")], [("own-e1", 8)]),
    "vector_size": (lambda tx, t, s: tx.vector_size(t, s, "m"), 8),
    "vectors_version": (lambda tx, t, s: tx.vectors_version(t, s), 2),  # n - 1 stores, one superseded fact
    "unembedded": (
        lambda tx, t, s: [
            [i for i, _, _ in tx.unembedded(t, s, "m", kind, after_seq=0, limit=20)] for kind in ("event", "fact")
        ],
        [["own-e2"], ["own-f1"]],
    ),
    "jobs": (lambda tx, t, s: [j.reason for j in tx.jobs(t, s)], ["own"]),
}
SCOPE_EXEMPT = {"search_backlog": "SQLite's full-text index is one for the whole file; so is its backlog"}


def _read_scope(tx: Any, t: str, s: str) -> dict[str, object]:
    return {name: read(tx, t, s) for name, (read, _) in SCOPED_READS.items()}


class RulesContract(Contract):
    """The rules across the tiers (see the module)."""

    def test_every_protocol_primitive_is_implemented_with_its_exact_signature(self, store: Store) -> None:
        assert check_signatures(store) == []

    def test_every_read_of_a_subject_answers_with_that_subjects_rows_only(self, store: Store) -> None:
        """Three subjects with something in every table (another subject of the tenant, the same
        subject id in another tenant, then the subject under test); every read primitive that
        names a subject, asked for the last, answers what it holds and nothing of the others,
        before the search index takes the events and after."""
        reads = {name for name, fn in primitives(ReadTx).items() if touch_of(fn).kind == "subject"}
        assert sorted(reads - set(SCOPED_READS) - set(SCOPE_EXEMPT)) == [], "a read primitive the scope test lacks"
        with store.write() as tx:
            for p, t, s, n in SCOPES:
                _write_scope(tx, p, t, s, n)
        expected = {name: want for name, (_, want) in SCOPED_READS.items()}

        def wrong(got: dict[str, object]) -> dict[str, tuple[object, object]]:
            return {name: (value, expected[name]) for name, value in got.items() if value != expected[name]}

        with store.read() as tx:
            bad = wrong(_read_scope(tx, T, S))
            assert bad == {}, f"(got, expected) of each read that answered wrong: {bad}"
        with store.write() as tx:
            for _, t, s, _ in SCOPES:
                tx.lock_clock(t, s)  # PostgreSQL indexes the subjects a transaction has locked
            tx.refresh_search_index()
            bad = wrong(_read_scope(tx, T, S))  # indexed, and inside a write transaction
            assert bad == {}, f"(got, expected) of each read that answered wrong: {bad}"

    def test_writes_to_a_subject_leave_every_other_subject_as_it_was(self, store: Store) -> None:
        """Every write primitive that names a subject, given the subject under test and another
        scope's ids: the other scopes read the same after, and each answer is the subject's own."""
        with store.write() as tx:
            for p, t, s, n in SCOPES:
                _write_scope(tx, p, t, s, n)
        with store.write() as tx:
            job = tx.claim_job(owner="w", lease_seconds=600, now=NOW)
            assert job is not None and (job.tenant_id, job.subject_id) == (T, "u0")  # queued first
            assert tx.enqueue_job(T, "u0", reason="sib-again", run_after=NOW, at=NOW) is True

        def others() -> dict[tuple[str, str], dict[str, object]]:
            with store.read() as tx:
                return {(t, s): _read_scope(tx, t, s) for p, t, s, _ in SCOPES if p != "own"}

        before = others()
        with store.write() as tx:
            assert tx.lock_clock(T, S).high_water == 2
            assert tx.lock_alias(T, S).artifact_id == "own-a1"
            tx.save_clock(Clock(tenant_id=T, subject_id=S, high_water=2, input_epoch=1))
            tx.set_event_state(T, S, "sib-e1", "deleted", purge=True)
            tx.set_event_trust(T, S, "sib-e2", "tool")
            tx.update_fact(T, S, "sib-f1", status="deleted", purge=True)
            tx.resolve_conflict(T, S, "sib-c1", at=NOW, resolution="not this subject's")
            assert (
                tx.cas_alias(
                    T,
                    S,
                    expected=ExpectedAlias(parent_artifact_id="sib-a1", source_epoch=0, covers_through=3),
                    artifact_id="own-a2",
                    source_epoch=0,
                    covers_through=3,
                    at=NOW,
                )
                is False
            )
            assert tx.set_artifact_state(T, S, _all("a1"), "retired", reason="test") == ["own-a1"]
            tx.replace_artifact_body(T, S, "sib-a2", ArtifactBody(tenant_id=T, subject_id=S, summary="[purged]"))
            (sib_a2,) = tx.artifact_documents(T, ["sib-a2"])  # the sibling's, as read, said to be this subject's
            assert tx.replace_artifact_documents([(dataclasses.replace(sib_a2, subject_id=S), "{}", "{}")]) == []
            tx.replace_recall(recall_record("sib-r1", candidates=()))
            tx.replace_guard(guard_result("sib-g1"))  # the sibling's id, said to be this subject's
            tx.replace_response(response_record("sib-rs1", "sib-r1"))
            assert tx.set_tier(T, S, through_seq=9, tier="cold") == 2
            tx.set_extracted_through(T, S, 9)
            assert tx.put_vectors(T, S, "m", [("event", "sib-e2", b"\0" * 8)]) == 0  # not this subject's event
            assert tx.drop_vectors(T, S, "m") == 1
            assert tx.finish_job(T, S, job.job_id, owner="w", status="done", at=NOW) is False  # another's job
            assert tx.cancel_pending_jobs(T, S, at=NOW, reason="test") == 1
            tx.add_log(T, S, at=NOW, op="note", target_id="sib-f1", detail={})
        after = others()
        changed = {
            (scope, name): (before[scope][name], after[scope][name])
            for scope in before
            for name in before[scope]
            if before[scope][name] != after[scope][name]
        }
        assert changed == {}, f"another scope's reads changed (before, after): {changed}"
        with store.read() as tx:
            assert tx.clock(T, S).input_epoch == 1 and tx.extracted_through(T, S) == 9
            assert [e.tier for e in tx.events(T, S)] == ["cold", "cold"] and tx.vectors(T, S, "m", "event") == []
            assert [(j.reason, j.status) for j in tx.jobs(T, S)] == [("own (test)", "done")]
            assert [e.target_id for e in tx.log(T, S)] == ["own-f1", "sib-f1"]

    def test_the_first_touch_test_covers_every_primitive_that_touches_a_subject(self) -> None:
        assert sorted(FIRST_TOUCHES) == _touching(("subject", "subjects", "own"))

    @pytest.mark.parametrize("touch", sorted(FIRST_TOUCHES))
    def test_a_write_transaction_locks_the_subject_on_first_touch(self, store: Store, touch: str) -> None:
        """The first writer touches the subject, then holds its transaction; a second writer of
        the subject must wait, and then see what the first committed."""
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_facts([fact("f1", 1, ("e1",)), fact("f2", 1, ("e1",), value=6)])
        seen = _epoch_after_holding(store, FIRST_TOUCHES[touch])
        assert seen == [1], f"a writer got the subject while another held it since its first touch ({touch})"

    @pytest.mark.parametrize("touch", sorted(set(FIRST_TOUCHES) & set(primitives(ReadTx))))
    def test_the_first_touch_locks_a_subject_never_written(self, store: Store, touch: str) -> None:
        """The subject has no row anywhere yet: a read of it still locks it, so a rival cannot
        append to it before this transaction ends."""
        handoff, seen = Handoff(), []

        def first() -> None:
            with store.write() as tx:
                FIRST_TOUCHES[touch](tx)
                handoff.hold()
                seen.append([e.event_id for e in tx.events(T, S)])

        def second() -> None:
            handoff.rival_starts()
            with store.write() as tx:
                append(tx, event("e1"))

        assert in_threads(first, second) == []
        assert seen == [[]], f"a rival wrote the subject inside a transaction that had read it ({touch})"
        with store.read() as tx:
            assert [e.event_id for e in tx.events(T, S)] == ["e1"]

    def test_instants_with_another_utc_offset_order_as_time(self, store: Store) -> None:
        plus2 = timezone(timedelta(hours=2))
        half_past_eleven = datetime(2026, 3, 14, 13, 30, tzinfo=plus2)  # 11:30 UTC, before NOW (12:00 UTC)
        with store.write() as tx:
            append(tx, event("e1"))
            alias = tx.lock_alias(T, S)
            tx.insert_artifact(artifact("a-noon", alias, created_at=NOW), [])
            tx.insert_artifact(artifact("a-1130", alias, created_at=half_past_eleven), [])
            tx.insert_recall(recall_record("r-noon", at=NOW))
            tx.insert_recall(recall_record("r-1130", at=half_past_eleven))
            tx.enqueue_job(
                T, S, reason="due at 11:00 UTC", run_after=datetime(2026, 3, 14, 13, 0, tzinfo=plus2), at=NOW
            )
        with store.read() as tx:
            assert [a.artifact_id for a in tx.artifacts(T, S)] == ["a-1130", "a-noon"]
            assert [r.recall_id for r in tx.recalls(T, S)] == ["r-noon", "r-1130"]  # newest first
            a = tx.artifact(T, S, "a-1130")
            assert a is not None and a.created_at == half_past_eleven  # the same instant
        with store.write() as tx:
            assert tx.claim_job(owner="w", lease_seconds=30, now=NOW - timedelta(minutes=75)) is None  # 10:45 UTC
        with store.write() as tx:
            job = tx.claim_job(owner="w", lease_seconds=30, now=NOW - timedelta(minutes=45))  # 11:15 UTC: due
            assert job is not None and job.run_after == datetime(2026, 3, 14, 11, 0, tzinfo=UTC)

    def test_ties_on_time_are_broken_by_creation_order(self, store: Store) -> None:
        later = NOW + timedelta(seconds=1)
        with store.write() as tx:
            append(tx, event("e1"))
            alias = tx.lock_alias(T, S)
            for aid, at in (("a-z", NOW), ("a-m", later), ("a-a", NOW)):  # ids in the other order
                tx.insert_artifact(artifact(aid, alias, created_at=at), [])
            for rid in ("r-z", "r-a", "r-m"):
                tx.insert_recall(recall_record(rid))
            for sid in ("z", "a"):
                tx.enqueue_job(T, sid, reason="test", run_after=NOW, at=NOW)
        with store.read() as tx:
            assert [a.artifact_id for a in tx.artifacts(T, S)] == ["a-z", "a-a", "a-m"]
            assert [r.recall_id for r in tx.recalls(T, S)] == ["r-m", "r-a", "r-z"]
            assert [r.recall_id for r in tx.recalls(T, S, limit=2)] == ["r-m", "r-a"]
            assert [r.recall_id for r in tx.recalls_touching(T, S, ["e1"])] == ["r-z", "r-a", "r-m"]
            assert [j.subject_id for j in tx.jobs(T, None)] == ["z", "a"]
        with store.write() as tx:
            claimed = tx.claim_job(owner="w1", lease_seconds=30, now=NOW)
            assert claimed is not None and claimed.subject_id == "z"  # the same run_after: created first

    def test_derived_primitives_give_the_expected_answers(self, store: Store) -> None:
        """One script over the derived layer and the queue, each answer stated."""
        later = NOW + timedelta(seconds=5)
        with store.write() as tx:
            clock = tx.lock_clock(T, S)
            tx.insert_events(
                [
                    (event("e1", "refund of 50 dollars approved"), 1, "sha256:1", NOW.isoformat()),
                    (event("e2", "the customer prefers the aisle seat"), 2, "sha256:2", NOW.isoformat()),
                    (event("e3", "refund refund"), 3, "sha256:3", NOW.isoformat()),
                ],
                recorded_at=NOW,
            )
            tx.save_clock(clock.model_copy(update={"high_water": 3}))
            assert tx.lock_alias(T, S) == Alias(tenant_id=T, subject_id=S)

        with store.write() as tx:
            alias = tx.lock_alias(T, S)
            tx.insert_artifact(
                artifact("a1", alias),
                [
                    LineageEdge(tenant_id=T, subject_id=S, artifact_id="a1", input_kind="event", input_id="e1"),
                    LineageEdge(tenant_id=T, subject_id=S, artifact_id="a1", input_kind="event", input_id="e2"),
                ],
            )
            tx.insert_artifact(
                artifact("a2", alias),
                [LineageEdge(tenant_id=T, subject_id=S, artifact_id="a2", input_kind="artifact", input_id="a1")],
            )
            assert (
                tx.cas_alias(
                    T, S, expected=alias.expected(), artifact_id="a1", source_epoch=0, covers_through=3, at=NOW
                )
                is True
            )
            assert (
                tx.cas_alias(
                    T, S, expected=alias.expected(), artifact_id="a2", source_epoch=0, covers_through=3, at=NOW
                )
                is False
            )  # a stale expectation
            assert tx.set_artifact_state(
                T, S, ["a1", "a2", "nope"], "published", reason="gate clean", from_states=["candidate"]
            ) == ["a1", "a2"]
            assert tx.set_artifact_state(T, S, ["a2"], "candidate", reason="back", from_states=["stale"]) == []
            assert tx.set_artifact_state(T, S, ["a2"], "candidate", reason="back") == ["a2"]
            attempt = Attempt(
                attempt_id="at1",
                tenant_id=T,
                subject_id=S,
                number=1,
                status="selected",
                started_at=NOW,
                high_water=3,
                input_epoch=0,
                expected_alias=alias.expected(),
                selected_ids=("e1",),
                input_root="sha256:r",
                compressor="det",
                timings={"select": 0.5},
            )
            tx.save_attempt(attempt)
            tx.save_attempt(attempt.model_copy(update={"status": "published", "artifact_id": "a1"}))
            assert tx.attempt_tail(T, S) == (1, [])  # nothing after the publication
            for n, status in ((2, "rejected"), (3, "error")):
                tx.save_attempt(attempt.model_copy(update={"attempt_id": f"at{n}", "number": n, "status": status}))
            count, tail = tx.attempt_tail(T, S)
            assert count == 3 and [(a.attempt_id, a.status) for a in tail] == [("at2", "rejected"), ("at3", "error")]
            assert tx.attempt_tail(T, "nobody") == (0, [])
            tx.insert_recall(recall_record("r0"))
            tx.insert_recall(recall_record("r1"))
            assert tx.set_tier(T, S, through_seq=2, tier="cold") == 2
            assert tx.set_tier(T, S, through_seq=2, tier="cold") == 0
            assert tx.enqueue_job(T, S, reason="revoke", run_after=NOW, at=NOW) is True
            assert tx.enqueue_job(T, S, reason="again", run_after=NOW, at=NOW) is False  # one pending per subject
            assert (
                tx.enqueue_job("globex", "u7", reason="other tenant", run_after=NOW + timedelta(seconds=1), at=NOW)
                is True
            )

        with store.write() as tx:
            job = tx.claim_job(owner="w1", lease_seconds=30, now=later)
            job2 = tx.claim_job(owner="w2", lease_seconds=30, now=later)
            assert job is not None and job2 is not None
            assert (job.tenant_id, job.subject_id, job.status, job.reason, job.tries, job.lease_owner) == (
                T,
                S,
                "running",
                "revoke",
                1,
                "w1",
            )
            assert job.lease_expires_at == later + timedelta(seconds=30) and job.run_after == NOW
            assert (job2.tenant_id, job2.subject_id, job2.lease_owner) == ("globex", "u7", "w2")
            assert tx.claim_job(owner="w3", lease_seconds=30, now=later) is None
            assert tx.heartbeat_job(job.job_id, owner="w1", lease_expires_at=later + timedelta(minutes=5)) is True
            assert tx.heartbeat_job(job.job_id, owner="intruder", lease_expires_at=NOW) is False
            assert tx.heartbeat_job(job.job_id + job2.job_id + 999, owner="w1", lease_expires_at=NOW) is False
            assert tx.finish_job(T, S, job.job_id, owner="intruder", status="done", at=NOW) is False
            assert tx.finish_job(T, S, job.job_id, owner="w1", status="pending", at=NOW, run_after=later) is True
            assert tx.cancel_pending_jobs("globex", "u7", at=NOW, reason="covered") == 0  # it is running
            tx.replace_artifact_body(
                T, S, "a2", ArtifactBody(tenant_id=T, subject_id=S, summary="[purged]", open_items=("f9",))
            )

        with store.read() as tx:
            assert tx.alias(T, S) == Alias(
                tenant_id=T, subject_id=S, artifact_id="a1", source_epoch=0, covers_through=3, updated_at=NOW
            )
            a1 = tx.artifact(T, S, "a1")
            assert a1 is not None and a1.state == "published" and a1.state_reason == "gate clean"
            assert a1.manifest.timings == {"gate": 0.25, "huge": 1e20} and a1.gate == {"outcome": "clean", "score": 1.0}
            assert a1.body.summary == "summary a1" and a1.created_at == NOW
            assert tx.artifact(T, S, "nope") is None
            assert tx.artifact_gate(T, S, "a1") == ("published", "clean")
            assert tx.artifact_gate(T, S, "a2") == ("candidate", "clean")
            assert tx.artifact_gate(T, S, "nope") is None
            assert tx.artifact_drops(T, S, ["a1", "a2", "nope"]) == {"a1": (("e1",), ()), "a2": (("e1",), ())}
            assert tx.artifact_drops(T, S, []) == {}
            assert a1.manifest.dropped == ("e1",)
            assert [(a.artifact_id, a.state) for a in tx.artifacts(T, S)] == [("a1", "published"), ("a2", "candidate")]
            assert [a.artifact_id for a in tx.artifacts(T, S, states=["published"])] == ["a1"]
            head = tx.artifact_head(T, S, "a2")
            assert head is not None and (head.state, head.summary, head.open_items) == (
                "candidate",
                "[purged]",
                ("f9",),
            )
            assert tx.artifact_head(T, S, "nope") is None
            clock, head_alias, head1 = tx.recall_head(T, S)
            assert (clock.high_water, head_alias.artifact_id) == (3, "a1")
            assert head1 is not None and (head1.artifact_id, head1.summary) == ("a1", "summary a1")
            assert [(e.input_kind, e.input_id) for e in tx.lineage(T, S, "a1")] == [("event", "e1"), ("event", "e2")]
            assert tx.descendants(T, S, ["e2"]) == ["a1", "a2"] and tx.descendants(T, S, []) == []
            assert [(a.attempt_id, a.status) for a in tx.attempts(T, S)] == [
                ("at1", "published"),
                ("at2", "rejected"),
                ("at3", "error"),
            ]
            assert [r.recall_id for r in tx.recalls(T, S, limit=1)] == ["r1"]
            assert [e.tier for e in tx.events(T, S)] == ["cold", "cold", "hot"]
            assert tx.search_events(T, S, "refund", limit=5) == ["e3", "e1"]  # e3 says it twice, and is newer
            assert tx.search_events(T, S, 'aisle "quoted', limit=5) == ["e2"]
            assert tx.search_events(T, S, "   ", limit=5) == []
            assert [(j.subject_id, j.status, j.reason, j.tries, j.run_after, j.lease_owner) for j in tx.jobs(T, S)] == [
                (S, "pending", "revoke", 1, later, None)
            ]
            assert [(j.status, j.lease_owner) for j in tx.jobs("globex", "u7")] == [("running", "w2")]
