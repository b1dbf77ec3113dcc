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

from lossgate.api.admin import Admin
from lossgate.api.ingest import IngestError, IngestReport, ingest_lines
from lossgate.api.memory import Memory, open
from lossgate.api.tenancy import Added, Found, TenantView
from lossgate.consolidate.compressor import BudgetExceeded, CompressionError, CompressionRequest, Compressor
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.errors import (
    ConfigError,
    EmbeddingError,
    IdempotencyConflict,
    InvalidInput,
    InvalidRecord,
    LifecycleError,
    LossgateError,
    NotFound,
    RegistryConflict,
    StoreBusy,
    StoreError,
    TenantNotBound,
    UnknownFormat,
    UnknownPredicate,
    ValueTypeError,
)
from lossgate.ledger.lifecycle import Ledger
from lossgate.ledger.retention import Expiry, RetentionPolicy, RetentionRule
from lossgate.ledger.tiers import Demotion, TierPolicy
from lossgate.model.api_keys import ApiKey
from lossgate.model.derived_records import (
    Alias,
    Artifact,
    Attempt,
    ExpectedAlias,
    GuardResult,
    Job,
    LineageEdge,
    LineageView,
    Manifest,
    RecallRecord,
    RecallResult,
    RecallVerification,
    Refusal,
    ResponseRecord,
    TreeSettings,
)
from lossgate.model.messages import ChatMessage
from lossgate.model.records import (
    AppendResult,
    ArtifactBody,
    Claim,
    Clock,
    Conflict,
    Event,
    EventRef,
    Fact,
    FactHistory,
    GuardRule,
    LedgerEntry,
    NewEvent,
    NewFact,
    Predicate,
    Proposal,
    Snapshot,
    TaintOutcome,
    TaintPolicy,
)
from lossgate.model.registry import Registry, RegistryCache, load_registry, parse_registry
from lossgate.model.starter import starter_registry
from lossgate.model.values import Money
from lossgate.policy.quarantine import Quarantined
from lossgate.policy.rollout import Rollout, ShadowRow
from lossgate.store.protocol import CompactReport

if TYPE_CHECKING:
    from lossgate.consolidate.chat import ChatCompressor, ChatConfig
    from lossgate.consolidate.hierarchy import HierarchyConfig
    from lossgate.consolidate.pipeline import ConsolidationConfig, Consolidator, Hooks, Prepared
    from lossgate.consolidate.regate import RegateResult
    from lossgate.extract import Extractor
    from lossgate.extract.cues import Candidate
    from lossgate.extract.model_extractor import ExtractionError, ModelExtractor
    from lossgate.judge import JudgeConfig, ModelJudge
    from lossgate.judge.model_judge import Statement
    from lossgate.ops.worker import Worker, WorkerConfig, open_worker_memory
    from lossgate.semantic import Embedder, EmbedReport, Reranker

__version__ = "0.1.0"

# name -> the module that defines it, imported on first use (see the module docstring)
_ON_FIRST_USE = {
    "ConsolidationConfig": "lossgate.consolidate.pipeline",
    "Consolidator": "lossgate.consolidate.pipeline",
    "Hooks": "lossgate.consolidate.pipeline",
    "Prepared": "lossgate.consolidate.pipeline",
    "RegateResult": "lossgate.consolidate.regate",
    "ChatCompressor": "lossgate.consolidate.chat",
    "ChatConfig": "lossgate.consolidate.chat",
    "Worker": "lossgate.ops.worker",
    "WorkerConfig": "lossgate.ops.worker",
    "open_worker_memory": "lossgate.ops.worker",
    "Embedder": "lossgate.semantic",
    "EmbedReport": "lossgate.semantic",
    "Reranker": "lossgate.semantic",
    "Extractor": "lossgate.extract",
    "ModelExtractor": "lossgate.extract.model_extractor",
    "ExtractionError": "lossgate.extract.model_extractor",
    "HierarchyConfig": "lossgate.consolidate.hierarchy",
    "Candidate": "lossgate.extract.cues",
    "Statement": "lossgate.judge.model_judge",
    "ModelJudge": "lossgate.judge",
    "JudgeConfig": "lossgate.judge",
}

__all__ = [
    # the facade
    "open",
    "Memory",
    "Admin",
    "Ledger",
    # the ledger's records
    "NewEvent",
    "Event",
    "NewFact",
    "Fact",
    "FactHistory",
    "Predicate",
    "Clock",
    "Conflict",
    "AppendResult",
    "EventRef",
    "LedgerEntry",
    "Proposal",
    "Snapshot",
    "Money",
    "Registry",
    "RegistryCache",
    "load_registry",
    "parse_registry",
    "starter_registry",
    # the short path: one tenant's view, chat messages in, a prompt block out
    "TenantView",
    "ChatMessage",
    "Added",
    "Found",
    # what consolidation and recall return
    "Attempt",
    "Artifact",
    "ArtifactBody",
    "Claim",
    "Manifest",
    "Alias",
    "ExpectedAlias",
    "TreeSettings",
    "LineageView",
    "LineageEdge",
    "RecallResult",
    "RecallRecord",
    "Job",
    "CompactReport",
    # the response boundary: a planned action guarded, what the agent finally did
    "GuardResult",
    "Refusal",
    "ResponseRecord",
    "GuardRule",
    "RecallVerification",
    # administration: keys, retention, tiers, taint, rollout, quarantine, re-gates
    "ApiKey",
    "RetentionPolicy",
    "RetentionRule",
    "Expiry",
    "TierPolicy",
    "Demotion",
    "TaintPolicy",
    "TaintOutcome",
    "Rollout",
    "ShadowRow",
    "Quarantined",
    "RegateResult",
    # knobs: consolidation, compressors, workers, embedders, extractors, judges
    "ConsolidationConfig",
    "Consolidator",
    "Hooks",
    "HierarchyConfig",
    "Prepared",
    "Compressor",
    "CompressionRequest",
    "DeterministicCompressor",
    "ChatCompressor",
    "ChatConfig",
    "Worker",
    "WorkerConfig",
    "open_worker_memory",
    "Embedder",
    "EmbedReport",
    "Reranker",
    "Extractor",
    "ModelExtractor",
    "ExtractionError",
    "ingest_lines",
    "IngestReport",
    "IngestError",
    "Candidate",
    "ModelJudge",
    "JudgeConfig",
    "Statement",
    # errors
    "LossgateError",
    "InvalidInput",
    "UnknownPredicate",
    "ValueTypeError",
    "NotFound",
    "IdempotencyConflict",
    "LifecycleError",
    "StoreError",
    "StoreBusy",
    "UnknownFormat",
    "ConfigError",
    "CompressionError",
    "BudgetExceeded",
    "RegistryConflict",
    "TenantNotBound",
    "InvalidRecord",
    "EmbeddingError",
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
