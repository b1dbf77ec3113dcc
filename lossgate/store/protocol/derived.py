"""The derived tier: what consolidation and extraction derive from the ledger: artifacts
with their manifests and lineage, the alias and its compare-and-swap, attempts, the
artifacts' stored documents (for a migration of their format), and extraction proposals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from lossgate.model.derived_records import (
    Alias,
    Artifact,
    ArtifactHead,
    ArtifactState,
    Attempt,
    ExpectedAlias,
    Lane,
    LineageEdge,
)
from lossgate.model.records import ArtifactBody, Clock, Proposal
from lossgate.store.protocol.scope import locks_itself, subject_of, subjects_of, tenant_of

__all__ = ["ArtifactDocument", "DerivedReadTx", "DerivedWriteTx"]


@dataclass(frozen=True, slots=True)
class ArtifactDocument:
    """An artifact's stored documents as the store holds them, not read into records: what
    a migration of the stored format (:mod:`lossgate.ops.migrate`) reads and writes.

    ``body`` and ``manifest`` are JSON text as the store hands it back (PostgreSQL keeps the
    body as ``jsonb``, so its text comes back normalised); handed back unchanged to
    :meth:`DerivedWriteTx.replace_artifact_documents`, they stand for "what I read". A body
    states its format (``"format"``, :data:`lossgate.store.rows.ARTIFACT_FORMAT`; none: 1),
    and a store refuses to read an artifact stored in a newer one (:class:`~lossgate.errors.StoreError`)."""

    tenant_id: str
    subject_id: str
    artifact_id: str
    state: str
    body: str
    manifest: str


class DerivedReadTx(Protocol):
    """Reads of what consolidation derived (artifacts, lineage, the alias, attempts) and of
    extraction proposals."""

    def alias(self, tenant_id: str, subject_id: str, *, lane: Lane = "live") -> Alias:
        """The subject's alias (with ``lane="shadow"``, its shadow alias, which recall never
        reads); an empty one (no artifact, epoch 0, covers 0) if never published."""

    def artifact(self, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact | None:
        """One artifact of the subject, in any state."""

    def recall_head(self, tenant_id: str, subject_id: str) -> tuple[Clock, Alias, ArtifactHead | None]:
        """The clock, the alias and the head of the artifact it points at, read together
        (recall's first step, in one statement where the backend can)."""

    def artifact_head(self, tenant_id: str, subject_id: str, artifact_id: str) -> ArtifactHead | None:
        """State, summary and open items of one artifact (the recall hot path: no manifest)."""

    def artifact_gate(
        self, tenant_id: str, subject_id: str, artifact_id: str
    ) -> tuple[ArtifactState, str | None] | None:
        """State and gate outcome (the gate report's ``outcome``) of one artifact, or
        ``None``: what demotion needs of the summary that stands in for the events. Neither
        the manifest nor the rest of the gate report is decoded: both can grow with the
        subject's history (a direct consolidation's manifest names every input)."""

    def artifact_drops(
        self, tenant_id: str, subject_id: str, artifact_ids: Sequence[str]
    ) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
        """For each of ``artifact_ids`` the subject has an artifact with, what recall's loss-aware
        ranking reads of its manifest: ``(dropped, carried)`` (``Manifest.dropped``, the events
        holding an atom it dropped; ``Manifest.carried``, the parts a root keeps from the root it
        extends). Nothing else of the manifest is decoded: it can grow with the history."""

    def artifacts(self, tenant_id: str, subject_id: str, *, states: Sequence[str] | None = None) -> list[Artifact]:
        """The subject's artifacts, oldest first (``created_at``, ties in creation order)."""

    def lineage(self, tenant_id: str, subject_id: str, artifact_id: str) -> list[LineageEdge]:
        """What ``artifact_id`` was derived from, sorted by (input kind, input id)."""

    def descendants(self, tenant_id: str, subject_id: str, input_ids: Sequence[str]) -> list[str]:
        """Ids of every artifact derived, directly or through other artifacts, from any of
        ``input_ids``, sorted bytewise."""

    def attempts(self, tenant_id: str, subject_id: str) -> list[Attempt]:
        """Every consolidation attempt of the subject, in order (attempt number, then start)."""

    def attempt(self, tenant_id: str, subject_id: str, attempt_id: str) -> Attempt | None:
        """One attempt of the subject by id, or None."""

    def attempt_tail(self, tenant_id: str, subject_id: str) -> tuple[int, list[Attempt]]:
        """How many attempts the subject has, and those numbered after its latest published
        one (all of them if none was published), in order: what a consolidation needs to
        number its attempt and count the failures in a row, without reading the history."""

    @tenant_of("tenant_id")
    def artifact_ids(self, tenant_id: str, *, after: str | None = None, limit: int) -> list[tuple[str, str]]:
        """Admin listing of one tenant, for a migration of the stored format: ``(artifact id,
        subject id)`` of the tenant's artifacts, every subject's, in artifact id order
        (bytewise), only ids after ``after``, at most ``limit``. Never waits for a subject's
        writers."""

    @tenant_of("tenant_id")
    def artifact_documents(self, tenant_id: str, artifact_ids: Sequence[str]) -> list[ArtifactDocument]:
        """Admin read of one tenant, for a migration of the stored format: the stored documents
        of the tenant's artifacts named in ``artifact_ids`` (of any subject), in artifact id
        order; an id the tenant has no artifact with is left out. Never waits for a subject's
        writers."""

    def proposals(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        ids: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
    ) -> list[Proposal]:
        """The subject's extraction proposals, oldest first (``created_at``, then id; only
        ``ids`` / ``statuses`` if given)."""

    def extracted_through(self, tenant_id: str, subject_id: str) -> int:
        """The seq up to which the subject's events have been read by the extractor."""


class DerivedWriteTx(DerivedReadTx, Protocol):
    """Writes of the derived layer.

    **The switch.** :meth:`lock_alias` locks the subject's *clock* first, then reads the
    alias (creating its row): every transaction that locks both takes them in that order,
    so a publication never deadlocks with a ledger change, and an alias held means the
    clock cannot move. :meth:`cas_alias` compares with NULL-safe equality: an expected
    parent of ``None`` matches an alias that was never published, and nothing else does.
    """

    @locks_itself
    def lock_alias(self, tenant_id: str, subject_id: str, *, lane: Lane = "live") -> Alias:
        """Lock the subject's clock, then its alias row of ``lane`` (creating both), and return the alias."""

    def cas_alias(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        expected: ExpectedAlias,
        artifact_id: str,
        source_epoch: int,
        covers_through: int,
        at: datetime,
        lane: Lane = "live",
    ) -> bool:
        """Compare-and-swap the alias: succeeds (True) only if its artifact, source epoch and
        coverage still equal ``expected`` (the artifact compared NULL-safely: ``None`` equals
        only ``None``) and ``covers_through`` does not regress. Exactly one row changes or
        none does."""

    @subject_of("artifact")
    def insert_artifact(self, artifact: Artifact, edges: Sequence[LineageEdge]) -> None:
        """Store an artifact with its manifest and lineage edges."""

    def set_artifact_state(
        self,
        tenant_id: str,
        subject_id: str,
        artifact_ids: Sequence[str],
        state: str,
        *,
        reason: str,
        from_states: Sequence[str] | None = None,
    ) -> list[str]:
        """Move artifacts to ``state`` (published, retired, stale, failed, abandoned), only those
        currently in ``from_states`` if given. Returns the ids that moved, sorted bytewise."""

    @subject_of("attempt")
    def save_attempt(self, attempt: Attempt) -> None:
        """Insert or replace an attempt record (by attempt id)."""

    def replace_artifact_body(
        self, tenant_id: str, subject_id: str, artifact_id: str, body: ArtifactBody, gate: dict[str, Any] | None = None
    ) -> None:
        """Overwrite an artifact's body, and its gate report when ``gate`` is given (used only to
        purge deleted content; manifest and lineage stay)."""

    @subjects_of("changes", item=0)
    def replace_artifact_documents(self, changes: Sequence[tuple[ArtifactDocument, str, str]]) -> list[str]:
        """Compare-and-swap stored documents, for a migration of the stored format: each
        ``(document as read, new body, new manifest)`` replaces that artifact's body and
        manifest (JSON text) only if they still hold what the document read holds. Returns
        the ids replaced, sorted bytewise; one changed since it was read is left as it is.
        State, gate report and lineage stay."""

    @subjects_of("proposals")
    def save_proposals(self, proposals: Sequence[Proposal]) -> None:
        """Insert proposals, or replace stored ones with the same id (their outcome changed)."""

    def set_extracted_through(self, tenant_id: str, subject_id: str, seq: int) -> None:
        """Record that the subject's events up to ``seq`` have been read by the extractor."""
