"""The daily fidelity metrics' primitives (:mod:`lossgate.ops.daily`), written once for both
SQL engines (:mod:`lossgate.store.core.tx` mixes them in).

A run's figures are rows of ``daily_metrics``, keyed by ``(tenant_id, run_id, metric,
dimension)`` with the tenant first (the distribution column of a sharded PostgreSQL). The
dimension is stored as its canonical JSON text (keys sorted, no spaces): it is part of the
key, and text compares bytewise alike on both engines. A day is ISO text on SQLite and a
``date`` on PostgreSQL; both read back as :class:`~datetime.date`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import orjson

from lossgate.errors import InvalidInput
from lossgate.model.derived_records import DailyMetric
from lossgate.store.core.base import TxBase

__all__ = ["CoreMetricsReads", "CoreMetricsWrites"]

_COLUMNS = ("tenant_id", "run_id", "day", "metric", "dimension", "value", "recorded_at")


def _dimension(value: dict[str, str | int]) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _metric(row: Any) -> DailyMetric:
    day = row[2] if isinstance(row[2], date) else date.fromisoformat(row[2])
    at = row[6] if isinstance(row[6], datetime) else datetime.fromisoformat(row[6])
    return DailyMetric(
        tenant_id=row[0],
        run_id=row[1],
        day=day,
        metric=row[3],
        dimension=orjson.loads(row[4]),
        value=float(row[5]),
        recorded_at=at,
    )


class CoreMetricsReads(TxBase):
    """Reading a tenant's stored daily metrics."""

    def daily_metrics(
        self,
        tenant_id: str,
        *,
        since: date | None = None,
        until: date | None = None,
        metrics: Sequence[str] | None = None,
        run_id: str | None = None,
    ) -> list[DailyMetric]:
        where, args = ["tenant_id=?"], [tenant_id]
        if since is not None:
            where.append("day>=?")
            args.append(since.isoformat())
        if until is not None:
            where.append("day<=?")
            args.append(until.isoformat())
        if run_id is not None:
            where.append("run_id=?")
            args.append(run_id)
        if metrics is not None:
            condition, more = self._d.in_("metric", metrics)
            where.append(condition)
            args += more
        return [
            _metric(r)
            for r in self._all(
                f"SELECT {','.join(_COLUMNS)} FROM daily_metrics WHERE {' AND '.join(where)} "
                "ORDER BY day, recorded_at, run_id, metric, dimension",
                args,
            )
        ]


class CoreMetricsWrites(TxBase):
    """Storing one run's daily metrics of a tenant."""

    def save_daily_metrics(self, tenant_id: str, metrics: Sequence[DailyMetric]) -> int:
        other = next((m for m in metrics if m.tenant_id != tenant_id), None)
        if other is not None:
            raise InvalidInput(f"a daily metric of tenant {other.tenant_id!r} cannot be stored for {tenant_id!r}")
        if metrics:
            self._many(
                f"INSERT INTO daily_metrics ({','.join(_COLUMNS)}) VALUES ({','.join('?' * len(_COLUMNS))})",
                [
                    (
                        m.tenant_id,
                        m.run_id,
                        m.day.isoformat(),
                        m.metric,
                        _dimension(m.dimension),
                        m.value,
                        self._d.ts(m.recorded_at),
                    )
                    for m in metrics
                ],
            )
        return len(metrics)
