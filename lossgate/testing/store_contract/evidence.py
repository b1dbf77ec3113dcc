"""The evidence tier (:mod:`lossgate.store.protocol.evidence`): recall records, guard results
and responses kept in order, one per id in the tenant, found by what they touched until redacted."""

# mypy: allow-redefinition
# (a test reads in `with store.read() as tx` what it wrote in `with store.write() as tx`)
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from lossgate.errors import IdempotencyConflict
from lossgate.model.derived_records import Alias, RecallRedaction
from lossgate.store.protocol import Store
from lossgate.testing.store_contract.support import (
    NOW,
    Contract,
    S,
    T,
    _ids,
    append,
    check_signatures,
    event,
    guard_result,
    recall_record,
    refusal,
    response_record,
)

__all__ = ["EvidenceContract"]


class EvidenceContract(Contract):
    """The evidence tier's tests (see the module); a subclass provides the ``store`` fixture,
    as for :class:`~lossgate.testing.store_contract.StoreContract`."""

    def test_the_evidence_tier_is_implemented_with_its_exact_signatures(self, store: Store) -> None:
        assert check_signatures(store, ("evidence",)) == []

    def test_guard_results_and_responses_keep_their_order_and_are_found_by_what_they_touched(
        self, store: Store
    ) -> None:
        """The response boundary's records: read back as written, newest first (creation order
        breaking ties on ``at``, given with any UTC offset), one per id in the tenant; found for a
        deletion by what they touched (a refusal's fact, conflict or source event; the tied
        recall's candidates or the summary it read) until they are redacted."""
        plus2 = timezone(timedelta(hours=2))
        later = datetime(2026, 3, 14, 14, 0, 1, tzinfo=plus2)  # 12:00:01 UTC
        summary_recall = recall_record("r-sum", candidates=("e9",)).model_copy(
            update={"alias": Alias(tenant_id=T, subject_id=S, artifact_id="a1")}
        )
        raw_recall = recall_record("r-raw", candidates=("e9",)).model_copy(
            update={"mode": "raw_fallback", "alias": Alias(tenant_id=T, subject_id=S, artifact_id="a1")}
        )
        by_fact = guard_result("g-z", refusals=(refusal(fact_id="f1", sources=("e1",)),))
        with store.write() as tx:
            append(tx, event("e1"))
            tx.insert_recall(recall_record("r-e2", candidates=("e2", "f2")))
            tx.insert_recall(summary_recall)
            tx.insert_recall(raw_recall)
            tx.record_guard(by_fact)
            tx.record_guard(guard_result("g-a", refusals=(refusal(conflict_id="c1", sources=("e3",)),)))
            tx.record_guard(guard_result("g-m", at=later, recall_id="r-e2"))
            tx.record_guard(guard_result("g-sum", recall_id="r-sum"))
            tx.record_guard(guard_result("g-raw", recall_id="r-raw"))
            tx.record_guard(guard_result("g-other", tenant="globex", refusals=(refusal(fact_id="f1"),)))
            tx.record_response(response_record("rs-z", "r-e2", guard_id="g-m"))
            tx.record_response(response_record("rs-a", "r-sum"))
            tx.record_response(response_record("rs-m", "r-raw", at=later))
            tx.record_response(response_record("rs-gone", "r-never-stored"))
        with store.read() as tx:
            assert tx.guard_result(T, S, "g-z") == by_fact  # the action, refusals and their values as written
            assert tx.guard_result(T, S, "g-other") is None and tx.guard_result("globex", S, "g-other") is not None
            assert tx.recall_record(T, S, "r-sum") == summary_recall and tx.recall_record(T, S, "nope") is None
            assert _ids(tx.guard_results(T, S), "guard_id") == ["g-m", "g-raw", "g-sum", "g-a", "g-z"]
            assert _ids(tx.guard_results(T, S, limit=2), "guard_id") == ["g-m", "g-raw"]
            assert _ids(tx.responses(T, S), "response_id") == ["rs-m", "rs-gone", "rs-a", "rs-z"]
            assert tx.responses(T, S, limit=1)[0].at == later
            assert tx.responses(T, "nobody") == [] and tx.guard_results(T, "nobody") == []

            def touching(*ids: str) -> tuple[list[str], list[str]]:
                return (
                    _ids(tx.guard_results_touching(T, S, list(ids)), "guard_id"),
                    _ids(tx.responses_touching(T, S, list(ids)), "response_id"),
                )

            assert touching("f1") == (["g-z"], [])  # a refusal's fact
            assert touching("e1") == (["g-z"], [])  # a refusal's source event
            assert touching("c1") == (["g-a"], [])  # a refusal's conflict
            assert touching("e2") == (["g-m"], ["rs-z"])  # the tied recall's candidate
            assert touching("f2", "nope") == (["g-m"], ["rs-z"])
            assert touching("a1") == (["g-sum"], ["rs-a"])  # the summary a summary-mode recall read
            assert touching("e9") == (["g-sum", "g-raw"], ["rs-a", "rs-m"])
            assert touching("g-m") == ([], ["rs-z"])  # a response on a guard result
            assert touching("nope") == ([], []) and touching() == ([], [])
        redaction = RecallRedaction(at=NOW, cause="delete_event e2", query_sha256="sha256:act", query_chars=3)
        with store.write() as tx:
            redacted = tx.guard_result(T, S, "g-m")
            assert redacted is not None
            tx.replace_guard(redacted.model_copy(update={"action": None, "redacted": redaction}))
            (answered,) = tx.responses_touching(T, S, ["e2"])
            tx.replace_response(answered.model_copy(update={"answer": None, "redacted": redaction}))
        with store.read() as tx:
            assert tx.guard_results_touching(T, S, ["e2"]) == [] and tx.responses_touching(T, S, ["e2"]) == []
            g_m = tx.guard_result(T, S, "g-m")
            assert g_m is not None and g_m.action is None and g_m.action_sha256 == "sha256:act"
            assert g_m.redacted is not None and g_m.redacted.cause == "delete_event e2"
            assert [(r.response_id, r.answer) for r in tx.responses(T, S)][-1] == ("rs-z", None)
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.record_guard(guard_result("g-z", subject="u2"))  # an id is taken once per tenant
        with pytest.raises(IdempotencyConflict), store.write() as tx:
            tx.record_response(response_record("rs-z", "r-e2", subject="u2"))
        with store.read() as tx:
            assert tx.guard_results(T, "u2") == [] and tx.responses(T, "u2") == []
