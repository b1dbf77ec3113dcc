"""lossgate: long-term memory for LLM agents that compresses without forgetting.

Applications append raw events and typed facts; lossgate keeps an append-only
raw layer and a fact ledger with lifecycle, consolidates them into summary
artifacts, and publishes an artifact only when a deterministic gate proves that
every fact that matters survived.

>>> import lossgate
>>> memory = lossgate.open("sqlite:///memory.db")   # doctest: +SKIP

Everything a :class:`Memory` method returns, and every knob it takes, is importable
from here. Consolidation, workers, embedders, extractors and judges load the gate and
HTTP or model clients: those names are imported on first use (``lossgate.Worker``), so
that ``import lossgate`` stays as light as opening a memory.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lossgate.consolidate.compressor import BudgetExceeded, CompressionError, CompressionRequest, Compressor
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.derived import (
    Alias, Artifact, Attempt, GuardResult, Job, LineageEdge, LineageView, Manifest, RecallRecord, RecallResult,
    RecallVerification, Refusal, ResponseRecord,
)
from lossgate.errors import (
    ConfigError, IdempotencyConflict, InvalidInput, LifecycleError, LossgateError, NotFound, RegistryConflict,
    StoreBusy, StoreError, TenantNotBound, UnknownFormat, UnknownPredicate, ValueTypeError,
)
from lossgate.ledger import Ledger
from lossgate.memory import Memory, open
from lossgate.records import (
    AppendResult, ArtifactBody, Claim, Clock, Conflict, Event, Fact, FactHistory, LedgerEntry, NewEvent, NewFact,
    GuardRule, Predicate, Proposal, Snapshot,
)
from lossgate.registry import Registry, RegistryCache, load_registry, parse_registry
from lossgate.starter import starter_registry
from lossgate.tenancy import Added, Found, TenantView
from lossgate.store.protocol import CompactReport
from lossgate.values import Money

if TYPE_CHECKING:
    from lossgate.consolidate.chat import ChatCompressor, ChatConfig
    from lossgate.consolidate.pipeline import ConsolidationConfig, Consolidator, Hooks
    from lossgate.extract import Extractor
    from lossgate.judge import JudgeConfig, ModelJudge
    from lossgate.semantic import EmbedReport, Embedder, Reranker
    from lossgate.worker import Worker, WorkerConfig, open_worker_memory

__version__ = "0.1.0"

# name -> the module that defines it, imported on first use (see the module docstring)
_ON_FIRST_USE = {
    "ConsolidationConfig": "lossgate.consolidate.pipeline",
    "Consolidator": "lossgate.consolidate.pipeline",
    "Hooks": "lossgate.consolidate.pipeline",
    "ChatCompressor": "lossgate.consolidate.chat",
    "ChatConfig": "lossgate.consolidate.chat",
    "Worker": "lossgate.worker",
    "WorkerConfig": "lossgate.worker",
    "open_worker_memory": "lossgate.worker",
    "Embedder": "lossgate.semantic",
    "EmbedReport": "lossgate.semantic",
    "Reranker": "lossgate.semantic",
    "Extractor": "lossgate.extract",
    "ModelJudge": "lossgate.judge",
    "JudgeConfig": "lossgate.judge",
}

__all__ = [
    # the facade
    "open", "Memory", "Ledger",
    # the ledger's records
    "NewEvent", "Event", "NewFact", "Fact", "FactHistory", "Predicate", "Clock", "Conflict", "AppendResult",
    "LedgerEntry", "Proposal", "Snapshot", "Money", "Registry", "RegistryCache", "load_registry", "parse_registry",
    "starter_registry",
    # the short path: one tenant's view, chat messages in, a prompt block out
    "TenantView", "Added", "Found",
    # what consolidation and recall return
    "Attempt", "Artifact", "ArtifactBody", "Claim", "Manifest", "Alias", "LineageView", "LineageEdge",
    "RecallResult", "RecallRecord", "Job", "CompactReport",
    # the response boundary: a planned action guarded, what the agent finally did
    "GuardResult", "Refusal", "ResponseRecord", "GuardRule", "RecallVerification",
    # knobs: consolidation, compressors, workers, embedders, extractors, judges
    "ConsolidationConfig", "Consolidator", "Hooks", "Compressor", "CompressionRequest", "DeterministicCompressor",
    "ChatCompressor", "ChatConfig", "Worker", "WorkerConfig", "open_worker_memory", "Embedder", "EmbedReport",
    "Reranker", "Extractor", "ModelJudge", "JudgeConfig",
    # errors
    "LossgateError", "InvalidInput", "UnknownPredicate", "ValueTypeError", "NotFound", "IdempotencyConflict",
    "LifecycleError", "StoreError", "StoreBusy", "UnknownFormat", "ConfigError", "CompressionError", "BudgetExceeded",
    "RegistryConflict", "TenantNotBound",
]


def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'lossgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
