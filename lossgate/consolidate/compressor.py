"""The compressor contract: what a compressor is given, what it returns, how it fails.

A compressor turns a :class:`CompressionRequest` (the authorized inputs of one
snapshot) into raw output: a JSON object in the shape of
:class:`~lossgate.model.records.ArtifactBody`. Raw, because output from a model can be
malformed; the pipeline parses it, keeps the raw text with the attempt, and
lets the gate judge the result. A compressor never sees deleted or revoked
content: the request is built from the authorized view only.

Implementations: :class:`~lossgate.consolidate.deterministic.DeterministicCompressor`
(the embedded default), :class:`~lossgate.consolidate.chat.ChatCompressor` (a model
writes the narrative) and the doubles of :mod:`lossgate.testing.compressors`. Any
object with these attributes and method is one: a new compressor needs no
registration. The edges name one by a string with
:func:`~lossgate.consolidate.factory.load_compressor`.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from lossgate.errors import LossgateError
from lossgate.model.records import ArtifactBody, Conflict, Event, Fact, Predicate
from lossgate.model.values import encode_value

__all__ = ["CompressionRequest", "Compressor", "BudgetExceeded", "CompressionError", "claim_of"]


class CompressionError(LossgateError):
    """The compressor could not produce an artifact (the attempt is kept as an error)."""


class BudgetExceeded(CompressionError):
    """The must-keep content alone does not fit the token budget."""


class CompressionRequest(BaseModel):
    """The authorized inputs of one consolidation, as a compressor sees them."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject_id: str
    facts: tuple[Fact, ...]
    predicates: dict[str, Predicate]
    conflicts: tuple[Conflict, ...] = ()
    events: tuple[Event, ...] = ()
    parent: ArtifactBody | None = None
    budget_tokens: int | None = None
    # Events whose only facts were superseded or revoked: history lives in the ledger, not in the
    # summary, so the prose must not carry the old value (temporal collapse).
    outdated_event_ids: frozenset[str] = frozenset()
    # Facts the gate will refuse to lose (its must-preserve set, hard reasons): never dropped
    # under budget pressure. Everything else may go, contextual first.
    must_keep: frozenset[str] = frozenset()
    # Sources of active facts that are no longer in the authorized view (deleted, revoked or
    # erased with a deleted fact). A fact stands on its other sources; a claim never cites these.
    withdrawn_event_ids: frozenset[str] = frozenset()
    # Retries escalate: how many attempts in a row failed since the last
    # publication, and what the gate refused the last one for. A model compressor uses them
    # to tighten its prompt, then change model, then write no narrative at all.
    failures: int = 0
    refused_for: tuple[str, ...] = ()
    # One part of a hierarchical consolidation (:mod:`lossgate.consolidate.hierarchy`): the
    # title of its period (:func:`~lossgate.model.wording.period_line`), which the summary carries
    # under its header. Its events are that period's; a digest keeps the lines that carry
    # numbers, amounts, dates, identifiers and negations first.
    period: str | None = None


class Compressor(Protocol):
    """Turns a request into raw artifact output (a dict or JSON text).

    ``name``, ``version`` and ``prompt_version`` go into every manifest; a compressor
    that varies its prompt per call may also set ``prompt_version_used``. ``compress``
    may raise :class:`CompressionError` (or :class:`BudgetExceeded`) with one line
    saying why; any other exception is recorded as a compressor error all the same."""

    name: str
    version: str
    prompt_version: str

    def compress(self, request: CompressionRequest) -> dict[str, Any] | str: ...


def claim_of(fact: Fact, withdrawn: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The claim that carries a fact through compression, with its provenance: the fact and
    the source events it still stands on (``withdrawn`` ones left the authorized view)."""
    return {
        "fact_id": fact.fact_id,
        "tenant_id": fact.tenant_id,
        "subject_id": fact.subject_id,
        "predicate": fact.predicate,
        "value_type": fact.value_type,
        "value": encode_value(fact.value_type, fact.value),
        "qualifiers": [list(q) for q in fact.qualifiers],
        "polarity": fact.polarity,
        "modality": fact.modality,
        "authority": fact.authority,
        "derived_from": [fact.fact_id, *(e for e in fact.source_event_ids if e not in withdrawn)],
    }
