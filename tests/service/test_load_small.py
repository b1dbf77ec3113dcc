"""A tiny version of the load test (``bench/bench_service.py``): 32 clients at once recall
and append over real HTTP, on each store; no errors, and every appended event is stored
exactly once (an append sent twice with its ``Idempotency-Key`` is replayed, not stored again)."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.bench_service import Plan, check_counts, expected, read_http, read_memory, run_http, schedule
from tests.support.service import Service

pytestmark = pytest.mark.slow  # 32 clients at once against a served memory


def test_32_clients_recall_and_append_with_no_error_and_exact_counts(service: Service) -> None:
    tenant = service.tenant("load")
    secret = service.key(tenant)
    plan = Plan(clients=32, requests=4, recall_share=0.5, retry_share=0.3, batch=2, own=1, shared=2, seed=7)
    calls = schedule(plan, tenant)
    want = expected(calls)
    assert sum(c.op == "append" for client in calls for c in client) >= 32
    assert any(c.retry for client in calls for c in client)

    result = run_http(service.url, secret, calls)

    assert result.errors == []
    retries = sum(c.retry for client in calls for c in client)
    assert result.requests == plan.clients * plan.requests + retries
    assert len(result.latencies["append_retry"]) == retries
    # Read back through the API and behind it: each text once, seqs 1..n, ids unique.
    assert check_counts(want, read_http(service.url, secret)) == []
    assert check_counts(want, read_memory(service.memory, tenant)) == []
    shared = [f"shared-{k}" for k in range(plan.shared)]
    assert sum(sum(want[s].values()) for s in shared) == sum(len(service.memory.events(tenant, s)) for s in shared)
    # The check itself is not vacuous: an event missing or stored twice is reported.
    some = next(iter(want))
    assert check_counts({some: want[some] + Counter({"never sent": 1})}, read_memory(service.memory, tenant))
    assert check_counts({some: want[some] - Counter([next(iter(want[some]))])}, read_memory(service.memory, tenant))
