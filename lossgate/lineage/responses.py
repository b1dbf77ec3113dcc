"""The response boundary's evidence: what an agent finally said or did, tied to what it read.

A recall record says what memory handed the agent; a guard result (:mod:`lossgate.guard`)
what the ledger said of an action the agent planned; a
:class:`~lossgate.model.derived_records.ResponseRecord` what the agent then answered or did, tied to the
recall (and the guard result) it was based on. With the three, a wrong answer is traced
to the boundary where it began (:mod:`lossgate.ops.diagnose`): memory never returned the
fact, or returned it and the agent acted against it, or carried out an action the guard
had refused.

:func:`respond` builds one and stores it in the caller's write transaction, after
checking that the recall and the guard result are the subject's. An answer is hashed as
its UTF-8 text, an action as the canonical JSON (RFC 8785) of its stored form, as a guard
hashes the action it checks (:func:`action_digest`): the same action has the same hash in
a guard result and in a response.

**Deletion.** What an agent said or planned may quote what memory told it. When a
deletion redacts a recall record (:mod:`lossgate.lineage.propagation`), the guard results and
responses tied to it lose their action and answer, and so do the guard results whose
refusals name the deleted fact or event (a refusal quotes the fact and the action's
value): :func:`redacted_guard`, :func:`redacted_response`. Their sha256 and length stay,
with every id. A response recorded on a recall or guard result whose content was deleted
before is stored redacted.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any

from lossgate.errors import InvalidInput, NotFound
from lossgate.model.canonical import canonical_json, content_hash
from lossgate.model.derived_records import GuardResult, RecallRedaction, ResponseRecord
from lossgate.model.limits import MAX_PAYLOAD_BYTES, MAX_TEXT_CHARS, as_doubles, json_problem, shown_id, text_problem
from lossgate.store.protocol import WriteTx

__all__ = ["PURGED", "action_digest", "answer_digest", "respond", "redacted_guard", "redacted_response"]

PURGED = "[purged]"  # what a redacted refusal's detail says instead of quoting the fact and the value


def action_digest(action: Any) -> tuple[dict[str, Any], str]:
    """An action as it is stored (a JSON object, its decimals as doubles) and its hash;
    :class:`~lossgate.errors.InvalidInput` for anything else."""
    if not isinstance(action, dict):
        raise InvalidInput(f"an action is a JSON object, not {type(action).__name__}")
    problem = json_problem(action, MAX_PAYLOAD_BYTES)
    if problem is not None:
        raise InvalidInput(f"action: {problem}")
    try:
        stored = as_doubles(action)
    except ValueError as exc:
        raise InvalidInput(f"action: {exc}") from None
    return stored, content_hash(stored)


def answer_digest(answer: Any) -> str:
    """``sha256:<hex>`` of an answer's UTF-8 text; :class:`InvalidInput` for one that cannot be stored."""
    if not isinstance(answer, str):
        raise InvalidInput(f"an answer is text, not {type(answer).__name__}")
    if (problem := text_problem(answer)) is not None:
        raise InvalidInput(f"answer {problem}")
    if len(answer) > MAX_TEXT_CHARS:
        raise InvalidInput(f"answer is {len(answer):,} characters long; the limit is {MAX_TEXT_CHARS:,}")
    return "sha256:" + hashlib.sha256(answer.encode("utf-8")).hexdigest()


def respond(
    tx: WriteTx,
    tenant_id: str,
    subject_id: str,
    recall_id: str,
    *,
    answer: str | None = None,
    action: dict[str, Any] | None = None,
    guard_id: str | None = None,
    now: datetime,
    erased: str | None = None,
) -> ResponseRecord:
    """Store what the agent answered or did after the recall ``recall_id`` of the subject
    (and the guard result ``guard_id``, if it checked the action first), in ``tx``; at least
    one of ``answer`` and ``action``. :class:`~lossgate.errors.NotFound` for a recall or guard
    result the subject does not have; :class:`InvalidInput` for a malformed answer or action,
    or a guard result checked for another recall. ``erased`` (why, if the caller found that
    content the recall returned was deleted since) stores the response redacted."""
    if answer is None and action is None:
        raise InvalidInput("a response holds an answer, an action, or both")
    answer_sha = None if answer is None else answer_digest(answer)
    stored, action_sha = (None, None) if action is None else action_digest(action)
    recall = tx.recall_record(tenant_id, subject_id, recall_id)
    if recall is None:
        raise NotFound(f"recall {shown_id(recall_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
    guard = None if guard_id is None else tx.guard_result(tenant_id, subject_id, guard_id)
    if guard_id is not None and guard is None:
        raise NotFound(
            f"guard result {shown_id(guard_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}"
        )
    if guard is not None and guard.recall_id not in (None, recall_id):
        raise InvalidInput(
            f"guard result {shown_id(guard.guard_id)} checked an action for recall "
            f"{shown_id(guard.recall_id or '')}, not {shown_id(recall_id)}"
        )
    if guard is not None and action_sha is not None and action_sha != guard.action_sha256:
        # a guard result vouches for the action it checked, and for no other
        raise InvalidInput(
            f"guard result {shown_id(guard.guard_id)} checked another action than this one: "
            "guard the action the agent carried out"
        )
    record = ResponseRecord(
        response_id=f"rs-{uuid.uuid4().hex[:16]}",
        tenant_id=tenant_id,
        subject_id=subject_id,
        at=now,
        recall_id=recall_id,
        guard_id=guard_id,
        answer=answer,
        action=stored,
        answer_sha256=answer_sha,
        action_sha256=action_sha,
    )
    cause = recall.redacted.cause if recall.redacted else guard.redacted.cause if guard and guard.redacted else erased
    if cause is not None:
        record = redacted_response(record, cause=cause, at=now)
    tx.record_response(record)
    return record


def _chars(value: Any) -> int:
    return len(canonical_json(value).decode("utf-8"))


def redacted_guard(result: GuardResult, *, cause: str, at: datetime) -> GuardResult:
    """``result`` without its action, and each refusal without what it quotes (the action's
    value, the fact's value and qualifiers, the sides of a conflict, the detail that says
    them); the action's sha256 and length stay in ``redacted``, with the rule, field path
    and ids of every refusal."""
    refusals = tuple(
        r.model_copy(update={"value": None, "fact_value": None, "qualifiers": {}, "sides": (), "detail": PURGED})
        for r in result.refusals
    )
    return result.model_copy(
        update={
            "action": None,
            "refusals": refusals,
            "redacted": RecallRedaction(
                at=at,
                cause=cause,
                query_sha256=result.action_sha256,
                query_chars=0 if result.action is None else _chars(result.action),
            ),
        }
    )


def redacted_response(response: ResponseRecord, *, cause: str, at: datetime) -> ResponseRecord:
    """``response`` without its answer and action; their sha256 stay, and ``redacted`` keeps the
    answer's (or, without one, the action's) sha256 and length."""
    if response.answer is not None:
        sha, chars = response.answer_sha256, len(response.answer)
    else:
        sha, chars = response.action_sha256, 0 if response.action is None else _chars(response.action)
    return response.model_copy(
        update={
            "answer": None,
            "action": None,
            "redacted": RecallRedaction(at=at, cause=cause, query_sha256=sha or "", query_chars=chars),
        }
    )
