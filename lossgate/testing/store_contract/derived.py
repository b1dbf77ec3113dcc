"""The derived tier (:mod:`lossgate.store.protocol.derived`): the empty alias, the NULL-safe
compare-and-swap of the alias, ``lock_alias`` taking the clock first, and the stored format: a
tenant's artifacts listed by id, their documents read as stored and swapped only when unchanged
since they were read, a newer format refused."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

import orjson
import pytest

from lossgate.errors import StoreError
from lossgate.model.derived_records import Alias, ExpectedAlias, Lane
from lossgate.model.records import ArtifactBody
from lossgate.store.protocol import ArtifactDocument, Store
from lossgate.store.rows import ARTIFACT_FORMAT
from lossgate.testing.store_contract.support import (
    NOW,
    Contract,
    Handoff,
    S,
    T,
    _epoch_after_holding,
    append,
    artifact,
    check_signatures,
    event,
    in_threads,
)

__all__ = ["DerivedContract"]


class DerivedContract(Contract):
    """The derived tier's tests (see the module); a subclass provides the ``store`` fixture,
    as for :class:`~lossgate.testing.store_contract.StoreContract`."""

    def test_the_derived_tier_is_implemented_with_its_exact_signatures(self, store: Store) -> None:
        assert check_signatures(store, ("derived",)) == []

    def test_a_subject_never_published_has_an_empty_alias(self, store: Store) -> None:
        with store.read() as tx:
            assert tx.alias(T, "nobody") == Alias(tenant_id=T, subject_id="nobody")

    @pytest.mark.parametrize("lane", ["live", "shadow"])
    def test_the_alias_cas_compares_null_safely_and_never_regresses(self, store: Store, lane: Lane) -> None:
        other: Lane = "shadow" if lane == "live" else "live"
        with store.write() as tx:
            append(tx, event("e1"), event("e2"), event("e3"))
            empty = tx.lock_alias(T, S, lane=lane)
            assert empty == Alias(tenant_id=T, subject_id=S)
            tx.insert_artifact(artifact("a1", empty), [])
            tx.insert_artifact(artifact("a2", empty), [])

            def cas(parent: str | None, epoch: int, covers: int, to: str, new_covers: int) -> bool:
                return tx.cas_alias(
                    T,
                    S,
                    expected=ExpectedAlias(parent_artifact_id=parent, source_epoch=epoch, covers_through=covers),
                    artifact_id=to,
                    source_epoch=0,
                    covers_through=new_covers,
                    at=NOW,
                    lane=lane,
                )

            assert cas("a9", 0, 0, "a1", 2) is False  # the alias has no artifact: only None matches it
            assert cas(None, 1, 0, "a1", 2) is False  # another epoch
            assert cas(None, 0, 0, "a1", 2) is True
            assert cas(None, 0, 2, "a2", 2) is False  # only the parent differs: None matches no published alias
            assert cas(None, 0, 0, "a2", 3) is False  # None no longer matches
            assert cas("a1", 0, 1, "a2", 3) is False  # another coverage
            assert cas("a1", 0, 2, "a2", 1) is False  # coverage would regress
            assert cas("a1", 0, 2, "a2", 2) is True  # equal coverage is no regression
            assert tx.alias(T, S, lane=lane).model_dump(exclude={"updated_at"}) == {
                "tenant_id": T,
                "subject_id": S,
                "artifact_id": "a2",
                "source_epoch": 0,
                "covers_through": 2,
            }
            assert tx.alias(T, S, lane=other) == Alias(tenant_id=T, subject_id=S)  # each lane its own alias

    def test_lock_alias_locks_the_clock(self, store: Store) -> None:
        with store.write() as tx:
            append(tx, event("e1"))
        assert _epoch_after_holding(store, lambda tx: tx.lock_alias(T, S)) == [1]

    def test_lock_alias_takes_the_clock_before_the_alias(self, store: Store) -> None:
        """A transaction holding the clock and then asking for the alias, against one asking for
        the alias first: both finish (taking the alias first would deadlock them)."""
        with store.write() as tx:
            append(tx, event("e1"))
            tx.lock_alias(T, S)
        handoff, done = Handoff(), []

        def ledger_then_publish() -> None:
            with store.write() as tx:
                tx.lock_clock(T, S)
                handoff.hold()
                tx.lock_alias(T, S)
                done.append("ledger")  # before the commit: the rival cannot have its alias yet

        def publish() -> None:
            handoff.rival_starts()
            with store.write() as tx:
                tx.lock_alias(T, S)
            done.append("publish")

        assert in_threads(ledger_then_publish, publish) == []
        assert done == ["ledger", "publish"]

    def test_artifact_documents_are_listed_by_id_and_swapped_only_as_they_were_read(self, store: Store) -> None:
        """A migration of the stored format pages through a tenant's artifacts by id (every
        subject's, no other tenant's), reads their documents as stored and swaps in new ones,
        each only if it is unchanged since it was read; the body states its format, and a
        format newer than the store's is refused, not misread."""
        with store.write() as tx:
            for t, s, ids in ((T, S, ("a2", "a1")), (T, "u2", ("b1",)), ("globex", S, ("a0",))):
                append(tx, event(f"e-{t}-{s}", subject=s, tenant=t))
                alias = tx.lock_alias(t, s)
                for aid in ids:
                    tx.insert_artifact(artifact(aid, alias), [])
        with store.read() as tx:
            assert tx.artifact_ids(T, limit=10) == [("a1", S), ("a2", S), ("b1", "u2")]
            assert tx.artifact_ids(T, after="a1", limit=1) == [("a2", S)]
            assert tx.artifact_ids(T, after="b1", limit=10) == [] and tx.artifact_ids("nobody", limit=10) == []
            assert tx.artifact_ids("globex", limit=10) == [("a0", S)]
            docs = tx.artifact_documents(T, ["b1", "a0", "nope", "a1"])  # a0 is globex's
            assert tx.artifact_documents(T, []) == []
        assert [(d.tenant_id, d.subject_id, d.artifact_id, d.state) for d in docs] == [
            (T, S, "a1", "candidate"),
            (T, "u2", "b1", "candidate"),
        ]
        a1, b1 = docs
        body = orjson.loads(a1.body)
        assert body["format"] == ARTIFACT_FORMAT and body["summary"] == "summary a1"
        assert orjson.loads(a1.manifest)["artifact_id"] == "a1"

        def without_format(doc: ArtifactDocument, summary: str) -> str:
            return orjson.dumps(
                {**{k: v for k, v in orjson.loads(doc.body).items() if k != "format"}, "summary": summary}
            ).decode()

        with store.write() as tx:
            assert tx.replace_artifact_documents([(a1, without_format(a1, "format 1"), a1.manifest)]) == ["a1"]
            assert tx.replace_artifact_documents([(a1, without_format(a1, "again"), a1.manifest)]) == []  # changed
            tx.replace_artifact_body(T, "u2", "b1", ArtifactBody(tenant_id=T, subject_id="u2", summary="[purged]"))
            assert tx.replace_artifact_documents([(b1, without_format(b1, "resurrected"), b1.manifest)]) == []
            assert tx.replace_artifact_documents([]) == []
        with store.read() as tx:
            read = tx.artifact(T, S, "a1")
            assert read is not None and (read.body.summary, read.state) == ("format 1", "candidate")
            assert read.manifest == artifact("a1", Alias(tenant_id=T, subject_id=S)).manifest
            assert "format" not in orjson.loads(tx.artifact_documents(T, ["a1"])[0].body)
            b1_now = tx.artifact(T, "u2", "b1")
            assert b1_now is not None and b1_now.body.summary == "[purged]"
            (a1,) = tx.artifact_documents(T, ["a1"])
        newer = orjson.dumps({**orjson.loads(a1.body), "format": ARTIFACT_FORMAT + 97}).decode()
        with store.write() as tx:
            assert tx.replace_artifact_documents([(a1, newer, a1.manifest)]) == ["a1"]
        with pytest.raises(StoreError, match=f"format {ARTIFACT_FORMAT + 97}"), store.read() as tx:
            tx.artifact(T, S, "a1")
