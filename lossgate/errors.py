"""The lossgate exception tree.

Every error lossgate raises on purpose is a :class:`LossgateError`. Callers
catch one root; the CLI maps :class:`InvalidInput` to exit code 2 and the
HTTP service maps it to a 4xx. The HTTP client (:mod:`lossgate.client`) raises
the same classes from the service's answers. This module imports nothing from
lossgate so that any layer may use it.
"""

from __future__ import annotations

from pydantic import ValidationError


class LossgateError(Exception):
    """Root of every error lossgate raises on purpose.

    Raised by :mod:`lossgate.client`, it carries ``code``, the memory service's stable code
    for the error (``"not_found"``, ``"validation_error"``: ``lossgate/service/errors.py``),
    whether the service answered it or the client refused the request before sending it, and
    ``details``, each field the request failed validation on (``{"loc", "message", "type"}``).
    Raised anywhere else, ``code`` is ``None`` and ``details`` empty."""

    code: str | None = None
    details: tuple[dict[str, str], ...] = ()


class InvalidInput(LossgateError):
    """The caller's input is malformed or violates the schema. Nothing was written."""


class InvalidRecord(InvalidInput, ValidationError):
    """A record a caller built (:class:`~lossgate.model.records.NewEvent`, :class:`~lossgate.model.records.NewFact`)
    has a bad field: a NUL or a lone surrogate, a value over a limit of :mod:`lossgate.model.limits`,
    a wrong type. Raised when the record is constructed, so before anything is written.

    It is also pydantic's ``ValidationError`` (a ``ValueError``): ``.errors()`` lists every
    problem, and code that catches ``ValidationError`` keeps working.
    """


class UnknownPredicate(InvalidInput):
    """A fact names a predicate the registry does not define. Predicates are never guessed."""


class ValueTypeError(InvalidInput):
    """A fact's value does not match its predicate's declared type."""


class NotFound(LossgateError):
    """A referenced record does not exist for this tenant and subject."""


class IdempotencyConflict(InvalidInput):
    """An id was re-used with different content (the same id with the same content is a no-op)."""


class LifecycleError(InvalidInput):
    """An operation is not allowed in the record's current lifecycle state (e.g. superseding a deleted fact)."""


class StoreError(LossgateError):
    """The storage backend failed (locked database, lost connection, schema mismatch)."""


class UnknownFormat(StoreError):
    """A stored record is in a format newer than this lossgate reads (a newer one wrote it)."""


class StoreBusy(StoreError):
    """A concurrent transaction won (deadlock, serialization failure, lock timeout): nothing was
    written and running the whole operation again may succeed."""


class AccessDenied(LossgateError):
    """The memory service refused the request's API key: :class:`Unauthorized` or
    :class:`Forbidden` (raised by :mod:`lossgate.client`)."""


class Unauthorized(AccessDenied):
    """No API key, or a malformed, unknown or revoked one (the service's 401 ``unauthorized``)."""


class Forbidden(AccessDenied):
    """The API key lacks the scope the operation needs (the service's 403 ``forbidden``)."""


class EmbeddingError(LossgateError):
    """An embedder failed (server error, timeout, malformed answer). Recall falls back to its
    lexical ranking; :func:`lossgate.semantic.embed_pending` leaves the items for a later run.
    ``http_status`` is the server's status when it answered with an error, else ``None``."""

    http_status: int | None = None


class RerankError(LossgateError):
    """A reranker failed (server error, timeout, malformed answer, the wrong number of scores).
    Recall keeps its first ranking. ``http_status`` is the server's status when it answered
    with an error, else ``None``; ``reason`` names the kind of failure in a few words, never
    the server's message (which may echo the query): it is what a recall record keeps."""

    http_status: int | None = None

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class ConfigError(LossgateError):
    """lossgate is configured wrongly (bad URL, unreadable registry file)."""


class RegistryConflict(InvalidInput):
    """A registry document loaded on top of the stored registry redefines one of its
    predicates or guard rules without saying ``override = true`` in that table, says it
    overrides one the registry does not have, or gives a version not above the stored one
    (:mod:`lossgate.model.registry_overlay`). Nothing was stored."""


class TenantNotBound(ConfigError):
    """A call that takes no tenant (``Memory.add``, ``Memory.search``) on a memory opened
    without one: ``lossgate.open(url, tenant=...)``, or ``memory.tenant(t).add(...)``."""


def crash_reason(exc: BaseException) -> str:
    """A short, content-free line for an exception lossgate did not raise on purpose (a bug,
    an overflow, a failure in foreign code): its kind and where it was raised, never its
    message, which may quote what a user stored (``"crash: OverflowError at
    lossgate/gate/sources.py:152 in time_keys"``; where the innermost frame is not
    lossgate's, the innermost of lossgate's follows: ``"crash: RecursionError at
    encoder.py:258 in iterencode (from lossgate/consolidate/pipeline.py:375 in _build)"``).
    An exception that wraps what foreign code raised (``original``) is described by that."""
    import traceback

    exc = getattr(exc, "original", None) or exc
    frames = traceback.extract_tb(exc.__traceback__)

    def place(frame: traceback.FrameSummary) -> str:
        path = frame.filename.replace("\\", "/")
        shown = "lossgate/" + path.rsplit("/lossgate/", 1)[1] if "/lossgate/" in path else path.rsplit("/", 1)[-1]
        return f"{shown}:{frame.lineno} in {frame.name}"

    if not frames:
        return f"crash: {type(exc).__name__}"
    ours = [f for f in frames if "/lossgate/" in f.filename.replace("\\", "/")]
    where = place(frames[-1])
    if ours and ours[-1] is not frames[-1]:
        where += f" (from {place(ours[-1])})"
    return f"crash: {type(exc).__name__} at {where}"
