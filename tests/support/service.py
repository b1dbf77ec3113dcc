"""The memory service as the HTTP tests reach it: :class:`Service` (a served memory, its
URL and a memory behind it to look with), the error body every refusal has, and the request
bodies most tests send."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from lossgate.api.memory import Memory

OCCURRED = "2026-01-05T09:12:02-05:00"


def events(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    """Event bodies, one per ``(event_id, text)``, all said at ``OCCURRED``."""
    return [{"event_id": i, "text": text, "occurred_at": OCCURRED} for i, text in pairs]


def allergy(source: str = "e1", fact_id: str = "allergy") -> dict[str, Any]:
    """The body of the peanut allergy, a critical fact, resting on the event ``source``."""
    return {
        "fact_id": fact_id,
        "predicate": "food.peanuts_allowed",
        "value": False,
        "qualifiers": {"basis": "allergy", "severity": "critical"},
        "source_event_ids": [source],
    }


@dataclass
class Service:
    """A served memory: its base URL, its database and a memory on that database for the test
    to look behind the API with."""

    url: str
    db_url: str
    store: str
    memory: Memory
    clients: list[httpx.Client] = field(default_factory=list)

    def tenant(self, prefix: str = "t") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    def key(self, tenant: str, *scopes: str) -> str:
        """A new key's secret for ``tenant`` (scopes default to read and write)."""
        _, secret = self.memory.admin.create_api_key(tenant, scopes=list(scopes or ("read", "write")))
        return secret

    def client(self, secret: str | None = None, **headers: str) -> httpx.Client:
        """An HTTP client of the server, sending ``secret`` as its bearer key."""
        if secret is not None:
            headers["Authorization"] = f"Bearer {secret}"
        client = httpx.Client(base_url=self.url, headers=headers, timeout=30)
        self.clients.append(client)
        return client


def error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The error body of ``response``, checked to be ``status`` and ``code``, its message one line."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"code", "message", "details"} and body["code"] == code, body
    assert body["message"] and "\n" not in body["message"]
    return dict(body)
