"""Prometheus metrics of one service process (``GET /metrics``, text format).

* ``lossgate_http_requests_total{method, route, status}``: requests answered, by route
  template (``/v1/subjects/{subject_id}/recall``, never the ids in the path: bounded
  label values; an unmatched path is ``<unmatched>``);
* ``lossgate_http_request_duration_seconds{method, route}``: their latency;
* ``lossgate_http_requests_in_progress``: requests being served now;
* ``lossgate_auth_failures_total{reason}``: ``missing`` or ``invalid`` keys;
* ``lossgate_idempotent_replays_total``: appends answered from a stored idempotency record;
* ``lossgate_events_appended_total`` and ``lossgate_facts_asserted_total``: what appends wrote.

No label names a tenant, a subject or a key. Each process has its own registry (several
apps in one process do not mix), and with ``--workers N`` each worker process counts its
own requests: a scrape reads whichever process answers it, so sum over processes on the
Prometheus side or run one worker per scrape target.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Metrics", "MetricsMiddleware", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """One registry and its metrics (see the module)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "lossgate_http_requests", "HTTP requests answered.", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "lossgate_http_request_duration_seconds",
            "Time to answer an HTTP request.",
            ["method", "route"],
            registry=r,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.in_progress = Gauge("lossgate_http_requests_in_progress", "HTTP requests being answered.", registry=r)
        self.auth_failures = Counter(
            "lossgate_auth_failures", "Requests refused for their API key.", ["reason"], registry=r
        )
        self.replays = Counter(
            "lossgate_idempotent_replays", "Appends answered from a stored idempotency record.", registry=r
        )
        self.events_appended = Counter(
            "lossgate_events_appended", "Events appended (duplicates not counted).", registry=r
        )
        self.facts_asserted = Counter(
            "lossgate_facts_asserted", "Facts in append requests that were stored or found.", registry=r
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Counts and times every HTTP request by method, route template and status."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self.metrics.in_progress.inc()
        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.in_progress.dec()
            route = getattr(scope.get("route"), "path", None) or "<unmatched>"
            method = scope.get("method", "")
            self.metrics.requests.labels(method=method, route=route, status=str(status)).inc()
            self.metrics.latency.labels(method=method, route=route).observe(time.perf_counter() - started)
