"""Lineage: what is derived from an input, and what becomes of it when the input changes.

Every artifact names what it was built from (lineage edges: events, facts and its
parent artifact, written with the artifact). From those edges:

* :func:`invalidate` runs in the transaction that changes an input (the ledger
  calls it after a supersession, deletion, revocation, trust change or new
  conflict; invariant 6). Every artifact derived from a changed input, directly or
  through its parents, goes ``stale``: the moved epoch already fences the alias
  out of recall, and a stale artifact can never be the parent of an incremental
  consolidation. A failed or abandoned artifact keeps its state: the record of why
  it was never published.
* When the change is a deletion, deleted content is also purged from everything
  derived from it (invariants 11 and 13): claims resting on a deleted input are
  dropped, the prose (which may quote it anywhere) is replaced by a marker, the gate
  report's prose-atom subjects are blanked, the raw compressor outputs of the
  attempts that read it are erased, recall records that touched it lose their
  query text, and the guard results and responses tied to those recalls, or whose
  refusals name it, lose their action and answer (:mod:`lossgate.lineage.responses`). Ids,
  hashes, manifests, lineage, states and log lines stay for audit.
* :func:`view` is the audit read: an artifact in any state, its edges and the chain
  of parents behind it (:func:`ancestors`): an incremental artifact's parents, or the
  roots a hierarchical root extends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime

from lossgate.errors import NotFound, UnknownFormat
from lossgate.lineage.responses import redacted_guard, redacted_response
from lossgate.model.derived_records import ArtifactState, Attempt, LineageEdge, LineageView, Manifest, RecallRedaction
from lossgate.model.records import ArtifactBody
from lossgate.store.protocol import ReadTx, WriteTx

__all__ = [
    "invalidate",
    "ancestors",
    "view",
    "purged_lines",
    "scrubbed",
    "save_attempt",
    "PURGED_SUMMARY",
    "purged_summary",
]

# States a changed input turns stale (a shadow summary too: the shadow alias then points at
# a stale one, as the alias would); "failed" and "abandoned" keep theirs.
_LIVE = ("candidate", "published", "retired", "shadow")
# How the summary of an artifact derived from deleted content begins once it is purged.
PURGED_SUMMARY = "[summary purged on "


def invalidate(
    tx: WriteTx, tenant_id: str, subject_id: str, changed: set[str], *, cause: str, erase: bool, now: datetime
) -> list[str]:
    """Mark every artifact derived from ``changed`` (input ids) stale, citing ``cause``;
    with ``erase`` (the inputs were deleted), purge their content from every derived copy
    first. Returns the ids of the artifacts that went stale."""
    descendants = tx.descendants(tenant_id, subject_id, sorted(changed))
    if erase:
        _purge_derived(tx, tenant_id, subject_id, descendants, changed, now=now)
        _redact_recalls(tx, tenant_id, subject_id, changed | set(descendants), cause, now=now)
        _redact_responses(tx, tenant_id, subject_id, changed | set(descendants), cause, now=now)
    if not descendants:
        return []
    return tx.set_artifact_state(tenant_id, subject_id, descendants, "stale", reason=cause, from_states=_LIVE)


def ancestors(tx: ReadTx, tenant_id: str, subject_id: str, artifact_id: str) -> list[tuple[str, ArtifactState]]:
    """The parents of ``artifact_id`` (the incremental chain), nearest first, with their
    states (stale ones included); the walk stops at a parent that is no longer stored."""
    art = tx.artifact(tenant_id, subject_id, artifact_id)
    if art is None:
        return []
    return _walk(tx, tenant_id, subject_id, _parents_of(tx, art.manifest, artifact_id))


def _parents_of(tx: ReadTx, manifest: Manifest, artifact_id: str) -> list[str]:
    """The artifact an artifact was built on: an incremental one's parent, or the root a
    hierarchical root extends (:mod:`lossgate.consolidate.tail`); a root's other artifact
    inputs are its parts, not parents."""
    if manifest.path == "hierarchical":
        return [manifest.extends] if manifest.extends else []
    return _parents(tx.lineage(manifest.tenant_id, manifest.subject_id, artifact_id))


def _walk(tx: ReadTx, tenant_id: str, subject_id: str, parent_ids: list[str]) -> list[tuple[str, ArtifactState]]:
    out: list[tuple[str, ArtifactState]] = []
    while parent_ids:
        parent = tx.artifact(tenant_id, subject_id, parent_ids[0])
        if parent is None:
            break
        out.append((parent.artifact_id, parent.state))
        parent_ids = _parents_of(tx, parent.manifest, parent.artifact_id)
    return out


def view(tx: ReadTx, tenant_id: str, subject_id: str, artifact_id: str) -> LineageView:
    """An artifact (in any state: audit) with its inputs and parent chain. Raises
    :class:`~lossgate.errors.NotFound`."""
    art = tx.artifact(tenant_id, subject_id, artifact_id)
    if art is None:
        raise NotFound(f"artifact {artifact_id} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
    edges = tx.lineage(tenant_id, subject_id, artifact_id)
    moves = [e for e in tx.log(tenant_id, subject_id, target_ids=[artifact_id]) if e.op in ("tier", "retention")]
    # A hierarchical root's artifact inputs are its parts (its edges list them), not parents;
    # a root that extends another has that one as its parent.
    parents = (
        [art.manifest.extends]
        if art.manifest.extends
        else []
        if art.manifest.path == "hierarchical"
        else _parents(edges)
    )
    return LineageView(
        artifact=art,
        edges=tuple(edges),
        ancestors=tuple(_walk(tx, tenant_id, subject_id, parents)),
        tier_moves=tuple(moves),
    )


def _parents(edges: Iterable[LineageEdge]) -> list[str]:
    return [e.input_id for e in edges if e.input_kind == "artifact"]


def scrubbed(attempt: Attempt) -> Attempt:
    """``attempt`` without what may quote deleted content: its raw output, the details of its
    violations, the atom subjects of its violation lines and its error's message (its kind
    stays); marked ``purged`` so that no later save brings them back (:func:`save_attempt`)."""
    error = attempt.error.split(":")[0] + ": [purged]" if attempt.error else None
    return attempt.model_copy(
        update={
            "raw_output": None,
            "violations": purged_lines(attempt.violations),
            "details": (),
            "losses": purged_lines(attempt.losses),
            "error": error,
            "purged": True,
        }
    )


def save_attempt(tx: WriteTx, attempt: Attempt) -> Attempt:
    """Save ``attempt`` over its stored record, never undoing a purge: a job that held the
    attempt in memory while a deletion purged the stored one saves it scrubbed. Returns
    what was saved."""
    if not attempt.purged:
        stored = tx.attempt(attempt.tenant_id, attempt.subject_id, attempt.attempt_id)
        if stored is not None and stored.purged:
            attempt = scrubbed(attempt)
    tx.save_attempt(attempt)
    return attempt


def purged_lines(lines: Iterable[str]) -> tuple[str, ...]:
    """Gate report lines (``subject:code``) with prose-atom subjects blanked: an atom's key
    quotes the text it was read from ("money:USD 5412.00", "negation:not|peanut"). Ids
    (fact, conflict) are not content and stay."""
    out = []
    for line in lines:
        _, _, code = line.rpartition(":")
        out.append(f"[purged]:{code}" if code.startswith("atom_") else line)
    return tuple(out)


def _purge_derived(
    tx: WriteTx, tenant_id: str, subject_id: str, artifact_ids: Sequence[str], deleted: set[str], *, now: datetime
) -> None:
    """Drop deleted content from the artifacts derived from it and from the attempts that read it."""
    marker = f"{PURGED_SUMMARY}{now.date().isoformat()}: derived from deleted content]"
    for artifact_id in artifact_ids:
        try:
            art = tx.artifact(tenant_id, subject_id, artifact_id)
        except UnknownFormat:
            # written by a newer lossgate: unreadable here, but erasure never waits for a
            # reader; its whole body becomes the marker and its gate report goes
            tx.replace_artifact_body(
                tenant_id,
                subject_id,
                artifact_id,
                ArtifactBody(tenant_id=tenant_id, subject_id=subject_id, summary=marker),
                {},
            )
            continue
        if art is None:
            continue
        claims = tuple(
            c for c in art.body.claims if c.fact_id not in deleted and not deleted.intersection(c.derived_from)
        )
        body = art.body.model_copy(
            update={
                "claims": claims,
                "summary": marker,
                "open_items": tuple(i for i in art.body.open_items if i not in deleted),
            }
        )
        gate = {**art.gate, **{k: purged_lines(art.gate.get(k, ())) for k in ("violations", "losses")}}
        tx.replace_artifact_body(tenant_id, subject_id, artifact_id, body, gate)
    purged = set(artifact_ids)
    for attempt in tx.attempts(tenant_id, subject_id):
        # an attempt that read the deleted content, directly or through an artifact derived
        # from it (an incremental parent, a reused part), or that built such an artifact
        if attempt.artifact_id in purged or (deleted | purged).intersection(attempt.selected_ids):
            clean = scrubbed(attempt)
            if clean != attempt:
                tx.save_attempt(clean)
    tx.add_log(
        tenant_id,
        subject_id,
        at=now,
        op="purge_derived",
        target_id=",".join(sorted(deleted)),
        detail={"artifacts": sorted(purged)},
    )


def _redact_recalls(tx: WriteTx, tenant_id: str, subject_id: str, ids: set[str], cause: str, *, now: datetime) -> None:
    """Recall records whose candidates (or returned summary) include deleted content lose
    their query text: it may quote what was deleted ("passport 5412..."). Its sha256 and
    length stay for audit, with every id and version (invariant 13)."""
    redacted = []
    for record in tx.recalls_touching(tenant_id, subject_id, sorted(ids)):
        query = record.query or ""
        tx.replace_recall(
            record.model_copy(
                update={
                    "query": None,
                    "redacted": RecallRedaction(
                        at=now,
                        cause=cause,
                        query_sha256=hashlib.sha256(query.encode()).hexdigest(),
                        query_chars=len(query),
                    ),
                }
            )
        )
        redacted.append(record.recall_id)
    if redacted:
        tx.add_log(
            tenant_id,
            subject_id,
            at=now,
            op="redact_recalls",
            target_id=cause.split(" ", 1)[-1],
            detail={"recalls": redacted},
        )


def _redact_responses(
    tx: WriteTx, tenant_id: str, subject_id: str, ids: set[str], cause: str, *, now: datetime
) -> None:
    """Guard results tied to a recall that touched deleted content, or whose refusals name it,
    lose their action and what their refusals quote; responses tied to such a recall, or built
    on such a guard result, lose their answer and action: either may quote what was deleted
    ("no peanuts: the allergy ..."). Their sha256 and length stay, with every id."""
    guards = []
    for result in tx.guard_results_touching(tenant_id, subject_id, sorted(ids)):
        tx.replace_guard(redacted_guard(result, cause=cause, at=now))
        guards.append(result.guard_id)
    responses = []
    for response in tx.responses_touching(tenant_id, subject_id, sorted(ids | set(guards))):
        tx.replace_response(redacted_response(response, cause=cause, at=now))
        responses.append(response.response_id)
    if guards or responses:
        tx.add_log(
            tenant_id,
            subject_id,
            at=now,
            op="redact_responses",
            target_id=cause.split(" ", 1)[-1],
            detail={"guard_results": guards, "responses": responses},
        )


def purged_summary(summary: str | None) -> bool:
    """Whether ``summary`` is the marker a deletion left in place of a derived summary."""
    return summary is not None and summary.startswith(PURGED_SUMMARY)
