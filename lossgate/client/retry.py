"""When to send a request again: after a 503, a bounded number of times, waiting what the
service asks (``Retry-After``) or else a backoff that doubles.

A 503 is the service's ``store_busy`` (a concurrent transaction won; it sends
``Retry-After``) or ``store_unavailable`` (the database failed or cannot be reached); in
both, nothing was written, so any request may be sent again. An append is sent with the same
``Idempotency-Key`` each time (:func:`lossgate.client.calls.append`): had the first one
committed after all, the service answers the retry from it and writes nothing. Nothing else
is retried: a transport error (no connection, a timeout) is raised as httpx raises it, since
a request cut after it was sent may have been carried out.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Retry", "NO_RETRY"]


class Retry(BaseModel):
    """How a client retries a 503: at most ``attempts`` tries in all; before the n-th retry it
    waits ``Retry-After`` when the answer has one, else ``backoff_s * 2**(n-1)`` with jitter
    (between half and all of it), and never more than ``max_wait_s``: a ``Retry-After``
    beyond it is not waited for, the 503 is raised."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: int = Field(default=4, ge=1, le=100)
    backoff_s: float = Field(default=0.25, ge=0, le=60)
    max_wait_s: float = Field(default=10.0, ge=0, le=3600)

    def wait(self, attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before trying again after ``response``, the answer to try number
        ``attempt`` (from 1); ``None``: do not try again."""
        if response.status_code != 503 or attempt >= self.attempts:
            return None
        asked = retry_after(response.headers.get("Retry-After"))
        if asked is not None:
            return asked if asked <= self.max_wait_s else None
        backoff = self.backoff_s * 2.0 ** (attempt - 1)
        return min(self.max_wait_s, backoff * (0.5 + random.random() / 2))


#: One try: a 503 is raised at once.
NO_RETRY = Retry(attempts=1)


def retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """The seconds a ``Retry-After`` header asks for (RFC 9110: a number of seconds, or an
    HTTP date), or ``None`` when there is none or it cannot be read."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
