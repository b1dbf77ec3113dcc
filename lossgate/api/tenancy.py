"""One tenant's view of a memory: the binding that the short path and the service share.

A :class:`TenantView` is a :class:`~lossgate.Memory` seen through one tenant: every call
passes that tenant to the memory, so none takes one. ``lossgate.open(url, tenant=...)`` binds
a memory to a tenant (``memory.add``, ``memory.search`` go through its view), and
``memory.tenant(t)`` gives the view of any tenant; the service's
:class:`~lossgate.service.TenantMemory` is the view of an API key's tenant.

The short path is thin: :meth:`TenantView.add` is :meth:`~lossgate.Memory.append` of the
messages as events (:mod:`lossgate.model.messages`), then :meth:`~lossgate.Memory.extract` with the
extractor given (default: the deterministic one); :meth:`TenantView.search` is :meth:`~lossgate.Memory.recall` with a
query. Same transactions, same guarantees, same errors.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from lossgate.errors import InvalidInput
from lossgate.model.derived_records import RecallResult
from lossgate.model.limits import id_problem, text_problem
from lossgate.model.messages import ChatMessage, events_of
from lossgate.model.records import AppendResult, Event, EventRef, Fact, NewEvent, Proposal

if TYPE_CHECKING:
    from lossgate.extract import Extractor

__all__ = ["Added", "Found", "TenantView", "checked_tenant"]


class Added(BaseModel):
    """What :meth:`TenantView.add` did: the events appended (their ids, seqs and content
    hashes, in the messages' order) and the proposals extraction recorded, with their
    outcome under the registry's policy (``accepted`` or ``conflict``: a fact now; ``review``:
    waiting for a person; ``known``, ``refused``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    subject_id: str
    events: tuple[EventRef, ...]
    proposals: tuple[Proposal, ...]


class Found(BaseModel):
    """What :meth:`TenantView.search` returns: the block for the prompt and the hits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rendered: str  # recall.render(): header, facts, the summary's prose, events by date
    facts: tuple[Fact, ...]  # the facts recall returned (the active critical ones always)
    events: tuple[Event, ...]  # the events it returned: hits with their neighbours
    recall: RecallResult  # all of it: mode, tokens, the record (recall_id, for guard and respond)


def checked_tenant(tenant_id: Any) -> str:
    """``tenant_id`` if it is one (:func:`lossgate.model.limits.id_problem`), else :class:`InvalidInput`."""
    if not isinstance(tenant_id, str):
        raise InvalidInput(f"tenant_id must be str, got {type(tenant_id).__name__}")
    if (problem := text_problem(tenant_id) or id_problem(tenant_id)) is not None:
        raise InvalidInput(f"tenant_id {problem}")
    return tenant_id


class _Memory(Protocol):
    """What a view calls of its :class:`~lossgate.Memory` (which imports this module)."""

    def append(self, events: Iterable[NewEvent]) -> AppendResult: ...
    def extract(self, tenant_id: str, subject_id: str, *, extractor: Extractor | None = None) -> list[Proposal]: ...
    def recall(
        self,
        tenant_id: str,
        subject_id: str,
        *,
        query: str | None = None,
        k: int = 20,
        budget: int | None = None,
        context: bool = True,
        loss_aware: bool = True,
    ) -> RecallResult: ...


class TenantView:
    """A :class:`~lossgate.Memory` seen through one tenant (see the module)."""

    def __init__(self, memory: _Memory, tenant_id: str) -> None:
        self.memory = memory
        self.tenant_id = checked_tenant(tenant_id)

    def add(
        self,
        subject_id: str,
        messages: Iterable[str | dict[str, Any] | ChatMessage],
        *,
        extractor: Extractor | None = None,
    ) -> Added:
        """Append ``messages`` (strings, said by the user, or ``{"role", "content"}`` objects:
        :mod:`lossgate.model.messages`) to the subject's raw memory in one transaction, then run the
        extractor (default: the deterministic :class:`~lossgate.extract.AtomExtractor`) over the
        subject's events not read before, under the registry's policy
        (:meth:`~lossgate.Memory.extract`). Malformed messages raise
        :class:`~lossgate.errors.InvalidInput` before anything is written; an extractor that
        fails raises after the append committed, and the next extraction reads those events."""
        appended = self.memory.append(events_of(self.tenant_id, subject_id, messages))
        proposals = self.memory.extract(self.tenant_id, subject_id, extractor=extractor)
        return Added(
            tenant_id=self.tenant_id, subject_id=subject_id, events=appended.appended, proposals=tuple(proposals)
        )

    def search(self, subject_id: str, query: str, *, k: int = 20, budget: int | None = None) -> Found:
        """What the subject's memory holds on ``query``: :meth:`~lossgate.Memory.recall` with
        the query (the fresh summary or raw memory, the critical facts always, the facts and
        events ranked by relevance, ``budget`` tokens at most), its rendered block and hits."""
        result = self.memory.recall(self.tenant_id, subject_id, query=query, k=k, budget=budget)
        return Found(rendered=result.render(), facts=result.facts, events=result.events, recall=result)
