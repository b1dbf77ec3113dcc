"""Who may reach memory over the network: API keys and idempotency records.

The HTTP service (:mod:`lossgate.service`) authenticates every request with an API key.
A key is bound to one tenant and a set of scopes; what the store keeps of it is the
sha256 of its secret, never the secret, which is shown once when the key is created
(:meth:`lossgate.Admin.create_api_key`). A secret is ``lg_<key id>_<43 random URL-safe
characters>`` (256 bits from :mod:`secrets`): its hash needs no salt, because nobody can
guess a 256-bit secret from a list, and looking it up by hash is one index probe.

An idempotency record is what the service answered to a request that carried an
``Idempotency-Key`` header: the hash of the request and the response's status and body.
A retry with the same key and the same request gets the same answer without running again;
the same key with another request is refused. Responses are stored without content (ids,
sequence numbers, hashes): deleting an event must not leave its text in this table.

This module holds the records and the pure helpers; it imports nothing of the store.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from lossgate.errors import InvalidInput
from lossgate.model.limits import Id, Label

__all__ = [
    "Scope",
    "SCOPES",
    "ApiKey",
    "IdempotencyRecord",
    "new_secret",
    "hash_secret",
    "parse_scopes",
    "looks_like_secret",
]

Scope = Literal["read", "write", "admin"]
SCOPES: tuple[Scope, ...] = get_args(Scope)

_PREFIX = "lg_"
# lg_ + 12 hex (the key id) + _ + 43 URL-safe characters (32 random bytes)
_SECRET = re.compile(r"^lg_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ApiKey(_Record):
    """An API key as the store keeps it: its tenant, its id (public: it is part of the
    secret's text and names the key in listings and logs), the sha256 of its secret, its
    scopes (sorted), a name for people, and when it was created and revoked."""

    tenant_id: Id
    key_id: Id
    key_hash: str = Field(min_length=1)
    scopes: tuple[Scope, ...]
    name: Label = ""
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class IdempotencyRecord(_Record):
    """The answer given to a request that carried an idempotency key, kept per tenant and key:
    the request's hash (method, route and body), the HTTP status and the response body (JSON
    text, holding no content of events or facts)."""

    tenant_id: Id
    idempotency_key: Id
    request_hash: str
    status: int
    response: str
    created_at: datetime


def new_secret() -> tuple[str, str]:
    """A fresh ``(key_id, secret)``."""
    key_id = secrets.token_hex(6)
    return key_id, f"{_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"


def looks_like_secret(secret: str) -> bool:
    """Whether ``secret`` has the shape of a lossgate API key (a cheap check before any lookup)."""
    return _SECRET.match(secret) is not None


def hash_secret(secret: str) -> str:
    """The hex sha256 of a secret: what the store keeps and looks keys up by."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_scopes(scopes: Iterable[str]) -> tuple[Scope, ...]:
    """Scopes as a sorted tuple without repeats; an unknown scope, or none at all, is
    :class:`~lossgate.errors.InvalidInput`. Each scope stands alone: ``admin`` does not
    include ``read`` or ``write``."""
    found: set[str] = set()
    for scope in scopes:
        for part in scope.replace(",", " ").split():
            if part not in SCOPES:
                raise InvalidInput(f"unknown scope {part!r} (expected some of {', '.join(SCOPES)})")
            found.add(part)
    if not found:
        raise InvalidInput(f"an API key needs at least one scope ({', '.join(SCOPES)})")
    return tuple(s for s in SCOPES if s in found)
