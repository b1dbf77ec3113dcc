"""Compressor test doubles that ship with lossgate (as ``structlog.testing`` does).

Each one implements the :class:`~lossgate.consolidate.compressor.Compressor`
protocol (``name``, ``version``, ``prompt_version``, ``compress(request)``), so
an application can prove its own memory pipeline refuses what a real model will
sooner or later produce, without a model and without mocks:

* **lossy** compressors wrap the :class:`DeterministicCompressor` and damage its
  output in exactly one way the fidelity gate must name:

  ========================== =================================== ======================
  double                     what it does to the output          the gate says
  ========================== =================================== ======================
  :class:`DropCriticalClaim` drops a critical claim (and its line) ``<fact>:missing``
  :class:`FlipBool`          flips a boolean claim               ``<fact>:value_changed``
  :class:`ChangeNumber`      nudges a number, amount or decimal  ``<fact>:value_changed``
  :class:`DropQualifier`     drops a claim's qualifier           ``<fact>:qualifiers_changed``
  :class:`InventClaim`       adds a claim with no ledger fact    ``<id>:unsupported_fact``
  ========================== =================================== ======================

* **broken** compressors fail the way a remote model fails:
  :class:`SleepingCompressor` (a timeout), :class:`MissingFieldCompressor`
  (well-formed JSON lacking a required field) and :class:`NonJsonCompressor`
  (chatty text instead of JSON); :class:`PoisonedCompressor` crashes on the subjects
  named ``poison...`` and no others;
* :class:`RecordingCompressor` keeps every :class:`CompressionRequest` it is given,
  so a test can prove what reached the compressor (deleted content must not).

>>> from lossgate.testing.compressors import FlipBool
>>> memory.consolidate("acme", "user-17", compressor=FlipBool()).status   # doctest: +SKIP
'rejected'
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from lossgate.consolidate.compressor import CompressionRequest, Compressor
from lossgate.consolidate.deterministic import DeterministicCompressor

__all__ = [
    "LOSSY_COMPRESSORS",
    "ChangeNumber",
    "DropCriticalClaim",
    "DropQualifier",
    "FlipBool",
    "InventClaim",
    "LossyCompressor",
    "MissingFieldCompressor",
    "NonJsonCompressor",
    "NothingToDamage",
    "PoisonedCompressor",
    "RecordingCompressor",
    "SleepingCompressor",
    "TerseCompressor",
]


class NothingToDamage(AssertionError):
    """A lossy double found no claim it could damage: the fixture cannot prove anything.

    Raised (not swallowed) so a test whose data lacks, say, a boolean fact fails loudly
    instead of passing because the "lossy" output happened to be faithful."""


def _fact_id(claim: dict[str, Any]) -> str:
    """The id of the fact ``claim`` carries (a string in any output the gate reads)."""
    fact_id = claim["fact_id"]
    if not isinstance(fact_id, str):
        raise NothingToDamage(f"a claim's fact_id is {fact_id!r}, not a string: no fact to name as damaged")
    return fact_id


def _line_of(claim: dict[str, Any]) -> str:
    """The prefix of the summary line the deterministic compressor renders for ``claim``."""
    return f"- {claim['predicate']}: "


class LossyCompressor:
    """Base of the lossy doubles: run ``inner`` (deterministic by default), then :meth:`damage` it.

    ``target`` picks the claim to damage by fact id; by default each double picks the first
    claim it can damage, in the order the inner compressor emitted them.
    """

    name = "lossy"
    version = "1"
    prompt_version = "render-v1"
    #: The violation code the gate must report for this damage.
    expected_code = ""

    def __init__(self, inner: Compressor | None = None, *, target: str | None = None) -> None:
        self.inner = inner or DeterministicCompressor()
        self.target = target
        self.damaged: list[str] = []  # fact ids this double damaged, one per call

    def compress(self, request: CompressionRequest) -> dict[str, Any]:
        out = self.inner.compress(request)
        if isinstance(out, str):
            raise TypeError(f"{type(self).__name__} wraps compressors that return a dict, got text")
        out = copy.deepcopy(out)
        self.damaged.append(self.damage(out, request))
        return out

    def damage(self, out: dict[str, Any], request: CompressionRequest) -> str:  # pragma: no cover - abstract
        """Damage ``out`` in place; return the id of the damaged (or invented) claim."""
        raise NotImplementedError

    def _pick(self, out: dict[str, Any], ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first claim of ``out`` (the target's, when one is set) that ``ok`` accepts."""
        claims: list[dict[str, Any]] = out["claims"]
        for claim in claims:
            if (self.target is None or claim["fact_id"] == self.target) and ok(claim):
                return claim
        raise NothingToDamage(f"{type(self).__name__}: no claim to damage (target={self.target!r})")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class DropCriticalClaim(LossyCompressor):
    """Omission: a critical claim disappears from the claims, the open items and the prose."""

    name = "lossy-drop-critical"
    expected_code = "missing"

    def damage(self, out: dict[str, Any], request: CompressionRequest) -> str:
        claim = self._pick(out, lambda c: request.predicates[c["predicate"]].criticality == "critical")
        fact_id = _fact_id(claim)
        out["claims"].remove(claim)
        out["open_items"] = [i for i in out.get("open_items", []) if i != fact_id]
        out["summary"] = "\n".join(ln for ln in out["summary"].splitlines() if not ln.startswith(_line_of(claim)))
        return fact_id


class FlipBool(LossyCompressor):
    """Negation loss: ``peanuts_allowed = false`` becomes ``true`` (the prose is left as it was)."""

    name = "lossy-flip-bool"
    expected_code = "value_changed"

    def damage(self, out: dict[str, Any], request: CompressionRequest) -> str:
        claim = self._pick(out, lambda c: c["value_type"] == "bool")
        claim["value"] = not claim["value"]
        return _fact_id(claim)


class ChangeNumber(LossyCompressor):
    """A close number: an int, a decimal or a money amount moves by one unit."""

    name = "lossy-change-number"
    expected_code = "value_changed"

    def damage(self, out: dict[str, Any], request: CompressionRequest) -> str:
        claim = self._pick(out, lambda c: c["value_type"] in ("int", "decimal", "money"))
        if claim["value_type"] == "int":
            claim["value"] = claim["value"] + 1
        elif claim["value_type"] == "decimal":
            claim["value"] = str(Decimal(claim["value"]) + 1)
        else:
            claim["value"] = {**claim["value"], "amount": str(Decimal(claim["value"]["amount"]) + 1)}
        return _fact_id(claim)


class DropQualifier(LossyCompressor):
    """Qualifier loss: "may refund up to $50 after supervisor review" becomes "may refund up to $50"."""

    name = "lossy-drop-qualifier"
    expected_code = "qualifiers_changed"

    def damage(self, out: dict[str, Any], request: CompressionRequest) -> str:
        claim = self._pick(out, lambda c: bool(c["qualifiers"]))
        claim["qualifiers"] = claim["qualifiers"][:-1]
        return _fact_id(claim)


class InventClaim(LossyCompressor):
    """Fabricated certainty: a well-formed claim about a fact the ledger does not have.

    The invented claim copies a real claim (same subject, predicate and provenance) under a
    new fact id, so the only thing wrong with it is that no fact supports it."""

    name = "lossy-invent-claim"
    expected_code = "unsupported_fact"

    def __init__(
        self, inner: Compressor | None = None, *, target: str | None = None, fact_id: str = "f-invented"
    ) -> None:
        super().__init__(inner, target=target)
        self.fact_id = fact_id

    def damage(self, out: dict[str, Any], request: CompressionRequest) -> str:
        model = self._pick(out, lambda c: True)
        invented = {**copy.deepcopy(model), "fact_id": self.fact_id}
        out["claims"].append(invented)
        return self.fact_id


#: Every lossy double, for parametrized tests.
LOSSY_COMPRESSORS: tuple[type[LossyCompressor], ...] = (
    DropCriticalClaim,
    FlipBool,
    ChangeNumber,
    DropQualifier,
    InventClaim,
)


class SleepingCompressor:
    """Takes ``seconds`` before answering (a model that hangs): drives the timeout path.

    The sleep waits on an event, so :meth:`release` ends it at once; call it when the test
    is done so no worker thread outlives the test by the whole sleep.
    """

    name = "sleeping"
    version = "1"
    prompt_version = "render-v1"

    def __init__(self, seconds: float = 5.0, inner: Compressor | None = None) -> None:
        self.seconds = seconds
        self.inner = inner or DeterministicCompressor()
        self._wake = threading.Event()
        self.started = threading.Event()
        self.finished = threading.Event()

    def compress(self, request: CompressionRequest) -> dict[str, Any] | str:
        self.started.set()
        try:
            self._wake.wait(self.seconds)
            return self.inner.compress(request)
        finally:
            self.finished.set()

    def release(self) -> None:
        self._wake.set()


class MissingFieldCompressor:
    """Well-formed JSON that lacks a required field (by default the artifact's ``subject_id``).

    ``path`` names the field: ``("subject_id",)`` or ``("claims", 0, "predicate")``.
    """

    name = "missing-field"
    version = "1"
    prompt_version = "render-v1"

    def __init__(self, path: tuple[str | int, ...] = ("subject_id",), inner: Compressor | None = None) -> None:
        if not path:
            raise ValueError("path names the field to remove")
        self.path = path
        self.inner = inner or DeterministicCompressor()

    def compress(self, request: CompressionRequest) -> dict[str, Any]:
        out = self.inner.compress(request)
        if isinstance(out, str):
            raise TypeError(f"{type(self).__name__} wraps compressors that return a dict, got text")
        out = copy.deepcopy(out)
        node: Any = out
        for step in self.path[:-1]:
            node = node[step]
        del node[self.path[-1]]
        return out


class NonJsonCompressor:
    """Answers with prose instead of JSON, as a chat model does when it ignores the schema."""

    name = "non-json"
    version = "1"
    prompt_version = "render-v1"

    def __init__(self, text: str = "Sure! Here is a short summary: the user prefers healthy food.") -> None:
        self.text = text

    def compress(self, request: CompressionRequest) -> str:
        return self.text


class RecordingCompressor:
    """Delegates to ``inner`` and keeps every request it receives, in order (thread-safe).

    ``requests`` is what reached the compressor: a test can serialize each one and search it
    for content that must never be sent to a model (a deleted event, another subject).
    """

    def __init__(self, inner: Compressor | None = None) -> None:
        self.inner = inner or DeterministicCompressor()
        self.name = self.inner.name
        self.version = self.inner.version
        self.prompt_version = self.inner.prompt_version
        self.requests: list[CompressionRequest] = []
        self._lock = threading.Lock()

    def compress(self, request: CompressionRequest) -> dict[str, Any] | str:
        with self._lock:
            self.requests.append(request)
        return self.inner.compress(request)

    def serialized(self) -> list[str]:
        """Each recorded request as JSON text: everything the compressor could read."""
        return [r.model_dump_json() for r in self.requests]


class TerseCompressor(DeterministicCompressor):
    """The deterministic compressor under another name with a smaller budget: a second
    configuration to roll out (a tenant's shadow or live compressor) in tests and demos."""

    name = "terse"
    version = "1"

    def compress(self, request: CompressionRequest) -> dict[str, Any]:
        budget = request.budget_tokens
        return super().compress(request.model_copy(update={"budget_tokens": None if budget is None else budget // 2}))


class PoisonedCompressor(DeterministicCompressor):
    """The deterministic compressor, except for subjects whose id starts with ``poison``:
    for ``poison-raise...`` it raises ``RecursionError`` itself, for ``poison-exit...``
    ``SystemExit``, for ``poison-huge...`` it returns a summary of 5 MiB more than it was
    given, and for any other ``poison...`` output nested 100,000 levels deep, which the
    pipeline raises ``RecursionError`` reading. One subject that fails this way on every
    attempt, while other subjects and tenants are consolidated, proves that no job stops a
    worker."""

    name = "poisoned"
    version = "1"

    def compress(self, request: CompressionRequest) -> Any:
        if not request.subject_id.startswith("poison"):
            return super().compress(request)
        if request.subject_id.startswith("poison-raise"):
            raise RecursionError("maximum recursion depth exceeded")
        if request.subject_id.startswith("poison-exit"):
            raise SystemExit(3)
        if request.subject_id.startswith("poison-huge"):
            return {**super().compress(request), "summary": "9" * (5 * 1024 * 1024)}
        deep: Any = []
        for _ in range(100_000):
            deep = [deep]
        return {**super().compress(request), "open_items": deep}
