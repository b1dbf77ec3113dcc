"""Quarantine and forward recovery: when a published summary turns out
bad, take it out of recall at once, and build a new one forward; never roll back.

* :func:`quarantine` moves a published artifact to ``quarantined`` in one transaction that
  locks the subject's clock and alias. Recall serves only a ``published`` artifact, so it
  falls back to the raw layer at once. The alias keeps its ``covers_through`` (coverage
  never moves backwards) and its artifact id (the next publication's compare-and-swap
  expects it). A hierarchical root's parts are quarantined with it (their digests are its
  text); a part can be quarantined alone too, and the root that copies its digest goes
  ``stale`` with it. A quarantined artifact is never a parent, never a reused
  part and never compressor input; it stays stored, with its manifest, lineage and attempt.
* :func:`recover` is a consolidation from the currently valid inputs (the direct path: no
  parent) with a configuration the operator chooses (an earlier compressor, the
  deterministic one by default), published through the same switch: its coverage is the
  subject's high-water, never below the alias's, or it is not published at all.

Both are logged in the subject's log (``quarantine``; a recovery's publication as any other).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lossgate.errors import InvalidInput, NotFound
from lossgate.store.protocol import WriteTx

__all__ = ["Quarantined", "quarantine"]


@dataclass(frozen=True)
class Quarantined:
    """What :func:`quarantine` did: the artifact, and the roots made stale with it."""

    tenant_id: str
    subject_id: str
    artifact_id: str
    stale_roots: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()  # a quarantined root's parts, quarantined with it
    already: bool = False


def quarantine(
    tx: WriteTx, tenant_id: str, subject_id: str, artifact_id: str, *, reason: str, now: datetime
) -> Quarantined:
    """Take ``artifact_id`` (published: the alias's artifact or one of its parts) out of
    recall (see the module docstring). Quarantining it again changes nothing. Raises
    :class:`~lossgate.errors.NotFound` or :class:`~lossgate.errors.InvalidInput`."""
    tx.lock_clock(tenant_id, subject_id)
    alias = tx.lock_alias(tenant_id, subject_id)
    head = tx.artifact_head(tenant_id, subject_id, artifact_id)
    if head is None:
        raise NotFound(f"artifact {artifact_id} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
    if head.state == "quarantined":
        return Quarantined(tenant_id, subject_id, artifact_id, already=True)
    if head.state != "published":
        raise InvalidInput(
            f"artifact {artifact_id} is {head.state}: only a published artifact can be quarantined "
            "(recall never serves any other)"
        )
    why = f"quarantined: {reason}" if reason else "quarantined"
    tx.set_artifact_state(tenant_id, subject_id, [artifact_id], "quarantined", from_states=["published"], reason=why)
    art = tx.artifact(tenant_id, subject_id, artifact_id)
    parts: list[str] = []
    if art is not None and art.manifest.children:
        # a root's digests are its parts': they go with it, so no later job reuses them
        parts = tx.set_artifact_state(
            tenant_id,
            subject_id,
            list(art.manifest.children),
            "quarantined",
            from_states=["published"],
            reason=f"part of {artifact_id}, {why}",
        )
    stale: list[str] = []
    if alias.artifact_id and alias.artifact_id != artifact_id:
        root = tx.artifact(tenant_id, subject_id, alias.artifact_id)
        if root is not None and artifact_id in root.manifest.children:
            stale = tx.set_artifact_state(
                tenant_id,
                subject_id,
                [root.artifact_id],
                "stale",
                from_states=["published"],
                reason=f"its part {artifact_id} was {why}",
            )
    tx.add_log(
        tenant_id,
        subject_id,
        at=now,
        op="quarantine",
        target_id=artifact_id,
        detail={"reason": reason, "stale": stale, "parts": parts, "covers_through": alias.covers_through},
    )
    return Quarantined(tenant_id, subject_id, artifact_id, stale_roots=tuple(stale), parts=tuple(parts))
