"""A tenant's narrative policy: what becomes of a model's sentence on a topic only the ledger
states (:mod:`lossgate.gate.narrative`): ``omit`` (the default: published without it, kept on
the attempt) or ``refuse`` (the attempt fails, and is retried and escalated as any refusal)."""

from __future__ import annotations

from datetime import datetime

from lossgate.errors import InvalidInput
from lossgate.gate.narrative import NARRATIVE_POLICIES, NarrativePolicy
from lossgate.store.protocol import ReadTx, WriteTx

__all__ = ["narrative_policy", "set_narrative_policy"]

_KEY = "narrative_policy"


def narrative_policy(tx: ReadTx, tenant_id: str) -> NarrativePolicy:
    """The tenant's narrative policy (``omit`` if it never set one)."""
    value = tx.tenant_settings(tenant_id).get(_KEY)
    return value if isinstance(value, str) and value in NARRATIVE_POLICIES else "omit"


def set_narrative_policy(tx: WriteTx, tenant_id: str, policy: str, *, now: datetime) -> NarrativePolicy:
    """Store the tenant's narrative policy (other settings kept)."""
    if policy not in NARRATIVE_POLICIES:
        raise InvalidInput(f"narrative policy must be one of {', '.join(NARRATIVE_POLICIES)}, not {policy!r}")
    settings = tx.tenant_settings(tenant_id)
    settings[_KEY] = policy
    tx.save_tenant_settings(tenant_id, settings, at=now)
    return policy
