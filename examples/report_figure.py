"""The manual's figure (docs/operations.md): ten days of daily fidelity metrics over a small
generated store.

    python examples/report_figure.py [docs/img/daily-metrics.png] [report.html]

Two tenants of four subjects each talk every day (small talk, more of it at globex, an
allergy; at acme a seat count that is changed, in conflict for a day, then superseded);
each subject is consolidated as it goes.
Each day ``lossgate.ops.daily.run_daily`` rebuilds every subject under a 160-token
budget, so the token reduction grows with the conversation. On day 6 the compressor
under test flips a boolean claim (``lossgate.testing.compressors.FlipBool``): that day
blocks. The figure is the report's first (``lossgate.ops.report.daily_figure``); with a
second argument the whole report is written too.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.ops.daily import run_daily, trend
from lossgate.ops.report import daily_figure, write_report
from lossgate.testing.compressors import FlipBool

HERE = Path(__file__).resolve().parent
FIRST = date(2026, 3, 1)
TENANTS = ("acme", "globex")
SMALL_TALK = (
    "the weather is lovely and the garden looks great",
    "thanks, that was a nice chat about music",
    "the coffee here is really good this morning",
    "we should plan something fun with the team soon",
)


def day_of_talk(memory: lossgate.Memory, n: int) -> None:
    at = datetime.combine(FIRST + timedelta(days=n), datetime.min.time(), UTC) + timedelta(hours=9)
    for tenant in TENANTS:
        for k in range(4):
            s = f"user-{k}"
            memory.append(
                [
                    NewEvent(
                        tenant_id=tenant,
                        subject_id=s,
                        event_id=f"{s}-d{n}-{i}",
                        occurred_at=at,
                        text=SMALL_TALK[(n + i + k) % len(SMALL_TALK)],
                    )
                    for i in range(3 + k + (6 if tenant == "globex" else 0))
                ]
            )
            if n == 0:
                memory.append(
                    [
                        NewEvent(
                            tenant_id=tenant,
                            subject_id=s,
                            event_id=f"{s}-allergy",
                            occurred_at=at,
                            text="I am allergic to peanuts, not merely avoiding them.",
                        )
                    ]
                )
                memory.assert_fact(
                    NewFact(
                        tenant_id=tenant,
                        subject_id=s,
                        fact_id=f"{s}-peanuts",
                        predicate="food.peanuts_allowed",
                        value=False,
                        qualifiers={"basis": "allergy"},
                        source_event_ids=(f"{s}-allergy",),
                    )
                )
            if n in (2, 7) and k % 2 == 0 and tenant == "acme":  # a seat count, another: a conflict, until superseded
                seats = 5 + n
                memory.append(
                    [
                        NewEvent(
                            tenant_id=tenant,
                            subject_id=s,
                            event_id=f"{s}-seats{n}",
                            occurred_at=at,
                            text=f"We need {seats} seats.",
                        )
                    ]
                )
                memory.assert_fact(
                    NewFact(
                        tenant_id=tenant,
                        subject_id=s,
                        fact_id=f"{s}-seats{n}",
                        predicate="subscription.seats",
                        value=seats,
                        source_event_ids=(f"{s}-seats{n}",),
                    )
                )
            if n == 8 and k % 2 == 0 and tenant == "acme":
                memory.supersede(
                    tenant,
                    s,
                    f"{s}-seats2",
                    NewFact(
                        tenant_id=tenant,
                        subject_id=s,
                        fact_id=f"{s}-seats8",
                        predicate="subscription.seats",
                        value=12,
                        source_event_ids=(f"{s}-seats7",),
                    ),
                )
            memory.consolidate(tenant, s)


def main(png: Path, page: Path | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        memory = lossgate.open(f"sqlite:///{Path(tmp) / 'figure.db'}")
        memory.admin.load_predicates(HERE / "predicates.toml")
        for n in range(10):
            day_of_talk(memory, n)
            run_daily(
                memory.store,
                TENANTS,
                day=FIRST + timedelta(days=n),
                budget_tokens=160,
                compressor=FlipBool() if n == 5 else None,
            )
        png.write_bytes(daily_figure(trend(memory.store, TENANTS), TENANTS))
        if page is not None:
            write_report(memory.store, TENANTS, page, days=10, until=FIRST + timedelta(days=9))
        memory.close()
    print(f"wrote {png}" + (f" and {page}" if page else ""))


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent / "docs" / "img" / "daily-metrics.png",
        Path(sys.argv[2]) if len(sys.argv) > 2 else None,
    )
