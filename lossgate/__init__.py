"""lossgate: long-term memory for LLM agents that compresses without forgetting.

Applications append raw events and typed facts; lossgate keeps an append-only
raw layer and a fact ledger with lifecycle, consolidates them into summary
artifacts, and publishes an artifact only when a deterministic gate proves that
every fact that matters survived.

>>> import lossgate
>>> memory = lossgate.open("sqlite:///memory.db")   # doctest: +SKIP
"""

from lossgate.errors import (
    ConfigError, IdempotencyConflict, InvalidInput, LifecycleError, LossgateError, NotFound,
    StoreBusy, StoreError, UnknownPredicate, ValueTypeError,
)
from lossgate.memory import Memory, open
from lossgate.records import (
    AppendResult, Claim, Clock, Conflict, Event, Fact, FactHistory, NewEvent, NewFact, Predicate,
    Snapshot,
)
from lossgate.registry import Registry, load_registry, parse_registry
from lossgate.values import Money

__version__ = "0.1.0"

__all__ = [
    "open", "Memory", "Registry", "load_registry", "parse_registry", "Money",
    "NewEvent", "Event", "NewFact", "Fact", "FactHistory", "Predicate", "Clock", "Conflict",
    "AppendResult", "Claim", "Snapshot",
    "LossgateError", "InvalidInput", "UnknownPredicate", "ValueTypeError", "NotFound",
    "IdempotencyConflict", "LifecycleError", "StoreError", "StoreBusy", "ConfigError",
]
