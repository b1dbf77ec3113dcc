"""The service's routes, one module per area; each exposes ``router``.

* :mod:`.ledger`: append events and facts; read events, facts and conflicts; supersede,
  delete and revoke;
* :mod:`.consolidation`: extract, consolidate (queue a job), jobs, attempts, artifacts and
  lineage;
* :mod:`.recall`: recall with the rendered prompt block, and the clock;
* :mod:`.responses`: what the agent answered or did after a recall, and whether a recall
  still holds;
* :mod:`.system`: health, metrics, the key itself, and the tenant-wide admin listings.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path

from lossgate.model.limits import Id, Key
from lossgate.service.errors import ErrorBody

__all__ = ["Subject", "Item", "ERRORS", "errors"]

# The records' own id types (lossgate.model.limits): a path refuses what a body or the Python API
# refuses. A segment holding an encoded "/" never reaches a route (lossgate.service.paths).
Subject = Annotated[
    Id,
    Path(
        description="The subject (a user, an account): up to 200 characters, no whitespace, "
        "control or format character."
    ),
]
Item = Annotated[Key, Path(description="An event, fact or artifact id of the subject, as it was stored.")]

_DESCRIPTIONS = {
    400: "The body is not JSON, or it would not read back as written: a key given twice, a number a double "
    "cannot hold (`malformed_json`).",
    401: "No API key, or an invalid or revoked one (`unauthorized`).",
    403: "The key lacks the scope this operation needs (`forbidden`).",
    404: "Nothing with that id for the key's tenant (`not_found`).",
    409: "An id already stored with other content, or a state that forbids the operation.",
    413: "The body is over the service's limit (`body_too_large`).",
    415: "The body is not `application/json` (`unsupported_media_type`).",
    422: "The request does not fit its schema, or the records refuse it.",
    503: "The database is busy or unavailable; nothing was written (`store_busy`, `store_unavailable`).",
}
ERRORS: dict[int | str, dict[str, Any]] = {s: {"model": ErrorBody, "description": d} for s, d in _DESCRIPTIONS.items()}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error responses of a route: the common ones (401, 422, 503) and ``statuses``."""
    return {s: ERRORS[s] for s in sorted({400, 401, 403, 413, 415, 422, 503, *statuses})}
