"""Helpers for the tests that race writers against each other in threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from lossgate import NewEvent, NewFact

AT = datetime(2026, 3, 14, 14, 32, tzinfo=timezone(timedelta(hours=-5)))


def ev(event_id: str, tenant: str = "acme", subject: str = "u1", **kw: Any) -> NewEvent:
    kw.setdefault("text", f"text of {event_id}")
    return NewEvent(tenant_id=tenant, subject_id=subject, event_id=event_id, occurred_at=AT, **kw)


def fact(fact_id: str, source: str, tenant: str = "acme", subject: str = "u1", seats: int = 5) -> NewFact:
    return NewFact(
        tenant_id=tenant,
        subject_id=subject,
        fact_id=fact_id,
        predicate="subscription.seats",
        value=seats,
        source_event_ids=[source],
    )


def in_threads(n: int, work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(0..n-1)`` in ``n`` threads at once; the exceptions they raised."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors
