"""Deleted content never survives in an attempt (found by a hostile review), on both stores.

A deletion purges what every attempt holds of the deleted content: raw output, violation
details, error messages, also of attempts that read it through an artifact derived from it
(an incremental parent). A job that held its attempt in memory while the purge ran saves it
purged (``Attempt.purged``), whatever step it was at.
"""

from __future__ import annotations

import json

from lossgate import CompressionError, NewEvent, NewFact
from lossgate.consolidate.pipeline import Hooks
from tests.support.world import AT, T, U, published

SECRET = "Rue Secrete 42 Lyon"


def _everything(memory) -> str:
    return json.dumps([a.model_dump(mode="json") for a in memory.admin.attempts(T, U)]) + json.dumps(
        [a.model_dump(mode="json") for a in memory.admin.artifacts(T, U)]
    )


def _address(memory):
    memory.append(
        [NewEvent(tenant_id=T, subject_id=U, event_id="e-addr", text=f"My address is {SECRET}.", occurred_at=AT)]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=U,
            fact_id="addr",
            predicate="contact.home_address",
            value=SECRET,
            source_event_ids=["e-addr"],
        )
    )


def test_a_deletion_between_the_store_and_the_switch_leaves_nothing_in_the_attempt(memory):
    _address(memory)
    raced = memory.admin.consolidator(hooks=Hooks(before_switch=lambda _a: memory.delete_fact(T, U, "addr"))).run(T, U)
    assert raced.status == "conflict" and raced.purged
    assert SECRET not in _everything(memory)


def test_a_compressor_error_quoting_the_input_is_purged_with_it(memory):
    """A CompressionError keeps its message (another exception's is never stored), and a
    message may quote the input: the deletion purges it."""

    class EchoError:
        name, version, prompt_version = "echo", "1", "p"

        def compress(self, request):
            raise CompressionError("rejected: " + " ".join(e.text or "" for e in request.events))

    _address(memory)
    failed = memory.consolidate(T, U, compressor=EchoError())
    assert failed.status == "error" and SECRET in (failed.error or "")
    memory.delete_event(T, U, "e-addr")
    assert SECRET not in _everything(memory)


def test_an_attempt_that_read_deleted_text_through_its_parent_is_purged(memory):
    class EchoParent:
        name, version, prompt_version = "echo-parent", "1", "p"

        def compress(self, request):
            return "Sure! " + (request.parent.summary if request.parent else "")

    _address(memory)
    published(memory)
    memory.append([NewEvent(tenant_id=T, subject_id=U, event_id="e-more", text="more", occurred_at=AT)])
    failed = memory.consolidate(T, U, compressor=EchoParent())
    assert failed.status == "error" and SECRET in (failed.raw_output or "")
    memory.delete_event(T, U, "e-addr")
    assert SECRET not in _everything(memory)
