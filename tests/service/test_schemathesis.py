"""Schemathesis against the OpenAPI document the server serves: generated requests, valid
and invalid, to every operation, over real HTTP, with a key that has every scope. No
answer may be a server error (5xx); each must also be one the document declares (status,
content type, body schema).

Bounded so that it runs in the default test run: a few examples per operation, half fitting
the schema and half not (schemathesis's positive and negative modes), derandomized (the same
requests every run, so a failure reproduces). Raise ``EXAMPLES`` to explore: at 60 it found
a page offset too large for SQLite's integers (a 500, now a 422); 200 per operation on both
stores found nothing more. The operations are walked here
rather than through schemathesis's pytest plugin, whose lazy fixture loader does not run
under this pytest."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from tests.support.service import Service

pytestmark = pytest.mark.slow  # generated requests against a served memory

EXAMPLES = 10
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance")


def test_no_generated_request_makes_the_server_fail(service: Service) -> None:
    from schemathesis import checks

    key = service.key(service.tenant("fuzz"), "read", "write", "admin")
    schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
    chosen = [getattr(checks, name) for name in CHECKS]
    failures: dict[str, str] = {}
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(GenerationMode.NEGATIVE))
        @settings(max_examples=EXAMPLES, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            response = case.call(base_url=service.url, headers={"Authorization": f"Bearer {key}"})
            case.validate_response(response, checks=chosen)

        try:
            run()
        except Exception as exc:  # noqa: BLE001 - collected: one report for every operation
            failures[operation.label] = str(exc)[:2000]
    assert operations >= 20, "the served document lists every operation"
    assert not failures, "\n\n".join(f"{label}:\n{why}" for label, why in failures.items())
