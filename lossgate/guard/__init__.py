"""The response boundary: an agent's planned action checked against the ledger before it acts.

Memory can be right and an agent still order the peanut dressing. A guard takes the action
the agent is about to carry out, a JSON object (a meal order, a refund, a message to send, a
deploy), and checks it against the subject's active facts and open conflicts by the rules
the predicate registry declares (``[[guards]]``, :class:`~lossgate.model.records.GuardRule`): an
ingredient an allergy forbids, a refund above a trusted limit or without its condition met,
a channel the subject refused, a value no trusted fact permits, a field whose fact is in
conflict. Each refusal names the rule, the field, and the fact with its value, qualifiers
and source events, so the agent (and a person reading the record later) sees why.

The check is deterministic and reads nothing but the ledger: no model decides. Fields no
rule names are ignored; a malformed action is :class:`~lossgate.errors.InvalidInput`.
:meth:`lossgate.Memory.guard` runs it and stores the :class:`~lossgate.model.derived_records.GuardResult`.
"""

from __future__ import annotations

import uuid
from typing import Any

from lossgate.guard.check import authorizes, check_action, forbids
from lossgate.lineage.responses import action_digest
from lossgate.model.derived_records import GuardResult
from lossgate.model.records import Conflict, Fact, utcnow
from lossgate.model.registry import Registry

__all__ = ["guard_action", "authorizes", "forbids"]


def guard_action(
    tenant_id: str,
    subject_id: str,
    action: Any,
    facts: list[Fact],
    conflicts: list[Conflict],
    registry: Registry,
    *,
    recall_id: str | None = None,
    low_trust: frozenset[str] = frozenset(),
) -> GuardResult:
    """The guard's verdict on ``action`` for the subject whose active ``facts`` and
    ``conflicts`` these are, ``low_trust`` the ids of its tool and untrusted events (see the
    module docstring). Not stored: :meth:`Memory.guard` stores it."""
    stored, digest = action_digest(action)  # as a response stores and hashes it
    refusals, rules, read = check_action(action, facts, conflicts, registry, low_trust=low_trust)  # exact decimals
    return GuardResult(
        guard_id=f"gd-{uuid.uuid4().hex[:16]}",
        tenant_id=tenant_id,
        subject_id=subject_id,
        at=utcnow(),
        action=stored,
        action_sha256=digest,
        allowed=not refusals,
        refusals=tuple(refusals),
        rules=tuple(rules),
        read=tuple(read),
        recall_id=recall_id,
        registry_version=registry.version,
    )
