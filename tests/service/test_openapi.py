"""The OpenAPI document the server serves is the one committed in ``docs/openapi.json``."""

from __future__ import annotations

from pathlib import Path

from lossgate.service.errors import CODES
from lossgate.service.openapi import render
from tests.support.service import Service

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
REGENERATE = "python -m lossgate.service.openapi > docs/openapi.json"


def test_the_committed_openapi_document_is_the_one_served(service: Service) -> None:
    served = service.client().get("/openapi.json")
    assert served.status_code == 200
    assert render(served.json()) == COMMITTED.read_text(encoding="utf-8"), (
        f"docs/openapi.json differs from what the server serves: run `{REGENERATE}` and commit it"
    )


def test_the_document_names_every_error_code_and_the_key_scheme(service: Service) -> None:
    doc = service.client().get("/openapi.json").json()
    assert doc["components"]["schemas"]["ErrorBody"]["properties"]["code"]["enum"] == list(CODES)
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key from `lossgate keys create` (`Authorization: Bearer lg_...`).",
    }
    secured = {path for path, ops in doc["paths"].items() for op in ops.values() if op.get("security")}
    assert secured == {p for p in doc["paths"] if p.startswith("/v1/")}
