"""Recall attestation: is what a recall handed an agent still what memory says?

Every recall record pins what it returned (:mod:`lossgate.recall.read`): the sha256 of the block
:meth:`~lossgate.model.derived_records.RecallResult.render` printed, the artifact whose summary it read
with the hash of what recall reads of its body, and each fact and event with its content
hash (:class:`~lossgate.model.derived_records.RecallInputs`). :func:`verify_recall` reads them against
the store now, in one read transaction, and says (:class:`~lossgate.model.derived_records.RecallVerification`):

``erased``
    the recall's own query was redacted by a deletion, or something it returned was
    deleted since: a fact, an event (or erased with a deleted fact it was drawn from), or
    the summary (purged because it was derived from deleted content);
``changed``
    a fact it returned was superseded or revoked, an event revoked, a content hash
    differs (``edited``), or the summary's artifact is no longer the live one
    (``retired``: the alias moved, the artifact left ``published``, or a change made it
    stale for recall);
``unchanged``
    none of that; then the block is rebuilt from what is stored (the summary trimmed as
    the recall trimmed it) and ``rendered_matches`` says whether it hashes to the recorded
    ``rendered_sha256``. It may not when something the content hashes do not cover moved
    (an event's trust, which marks its line as a quote).

The verdict is computed from stored records only, so a fresh process (a restart, another
host) gives the same one. A record written before recalls were attested is checked by its
selected ids, without hashes, and ``rendered_matches`` is ``None``.
"""

from __future__ import annotations

from typing import Literal

from lossgate.errors import NotFound
from lossgate.lineage.propagation import purged_summary
from lossgate.model.derived_records import (
    ArtifactHead,
    RecallChange,
    RecallRecord,
    RecallVerification,
    conflicts_between,
    rendered_block,
)
from lossgate.model.limits import shown_id
from lossgate.recall.read import artifact_digest, text_digest, trimmed_summary
from lossgate.store.protocol import ReadTx

__all__ = ["verify_recall", "check_recall"]


def verify_recall(tx: ReadTx, tenant_id: str, subject_id: str, recall_id: str) -> RecallVerification:
    """The verdict on one recall record of the subject (see the module); raises
    :class:`~lossgate.errors.NotFound` for a recall the subject does not have."""
    record = tx.recall_record(tenant_id, subject_id, recall_id)
    if record is None:
        raise NotFound(f"recall {shown_id(recall_id)} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
    return check_recall(tx, record)


def check_recall(tx: ReadTx, record: RecallRecord) -> RecallVerification:
    """:func:`verify_recall` of a record already read."""
    t, s, inputs = record.tenant_id, record.subject_id, record.inputs
    if inputs is not None:
        fact_hashes: dict[str, str | None] = dict(inputs.facts)
        event_hashes: dict[str, str | None] = dict(inputs.events)
    else:  # written before recalls were attested: its selected ids, without hashes
        selected = list(record.selected_ids)
        found = {f.fact_id for f in tx.facts(t, s, ids=selected)} if selected else set()
        fact_hashes = {i: None for i in selected if i in found}
        event_hashes = {i: None for i in selected if i not in found}
    facts = {f.fact_id: f for f in tx.facts(t, s, ids=list(fact_hashes))} if fact_hashes else {}
    events = {e.event_id: e for e in tx.events(t, s, ids=list(event_hashes))} if event_hashes else {}
    unerased = {e.event_id for e in tx.events(t, s, ids=list(events), skip_erased=True)} if events else set()
    changes: list[tuple[str, RecallChange]] = []
    for fact_id, digest in fact_hashes.items():
        f = facts.get(fact_id)
        if f is None or f.status == "deleted":
            changes.append((fact_id, "deleted"))
        elif f.status in ("superseded", "revoked"):
            changes.append((fact_id, "superseded" if f.status == "superseded" else "revoked"))
        elif digest is not None and f.content_hash != digest:
            changes.append((fact_id, "edited"))
    for event_id, digest in event_hashes.items():
        e = events.get(event_id)
        if e is None and inputs is None:
            continue  # an old record's selected id that is neither a fact nor an event of the subject
        if e is None or e.state == "deleted" or event_id not in unerased:
            changes.append((event_id, "deleted"))
        elif e.state == "revoked":
            changes.append((event_id, "revoked"))
        elif digest is not None and e.content_hash != digest:
            changes.append((event_id, "edited"))
    head = None
    artifact_id = (
        inputs.artifact_id if inputs is not None else (record.alias.artifact_id if record.mode == "summary" else None)
    )
    if artifact_id is not None:
        head = tx.artifact_head(t, s, artifact_id)
        changes += _artifact_changes(tx, record, artifact_id, head)
    state: Literal["unchanged", "changed", "erased"]
    if record.redacted is not None or any(what == "deleted" for _, what in changes):
        state = "erased"
    else:
        state = "changed" if changes else "unchanged"
    matches = None
    if state == "unchanged" and inputs is not None and record.rendered_sha256 is not None:
        summary = None if head is None else trimmed_summary(head.summary, inputs.summary_lines)
        returned = [facts[i] for i in fact_hashes]
        conflicts = (
            () if summary is not None else conflicts_between(tx.conflicts(t, s, unresolved_only=True), returned)
        )  # raw memory states them, as recall did
        block = rendered_block(t, s, summary, returned, sorted(events.values(), key=lambda e: e.seq), conflicts)
        matches = text_digest(block) == record.rendered_sha256
    return RecallVerification(
        recall_id=record.recall_id,
        tenant_id=t,
        subject_id=s,
        state=state,
        changes=tuple(changes),
        rendered_matches=matches,
    )


def _artifact_changes(
    tx: ReadTx, record: RecallRecord, artifact_id: str, head: ArtifactHead | None
) -> list[tuple[str, RecallChange]]:
    """What moved of the artifact whose summary the recall returned."""
    if head is None or purged_summary(head.summary):
        return [(artifact_id, "deleted")]
    found: list[tuple[str, RecallChange]] = []
    inputs = record.inputs
    if (
        inputs is not None
        and inputs.artifact_sha256 is not None
        and artifact_digest(head.summary, head.open_items) != inputs.artifact_sha256
    ):
        found.append((artifact_id, "edited"))
    clock, alias = tx.clock(record.tenant_id, record.subject_id), tx.alias(record.tenant_id, record.subject_id)
    if alias.artifact_id != artifact_id or head.state != "published" or alias.source_epoch != clock.input_epoch:
        found.append((artifact_id, "retired"))
    return found
