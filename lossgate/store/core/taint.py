"""Taint policies' and tenant settings' primitives, written once for both SQL engines (the statements are the
same on SQLite and PostgreSQL; :mod:`lossgate.store.core.tx` mixes them in)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from lossgate.model.records import TaintPolicy
from lossgate.store.core.base import TxBase

__all__ = ["CoreTaintReads", "CoreTaintWrites"]


class CoreTaintReads(TxBase):
    """The reads of taint policies and of the events they reach."""

    def taint_policies(self, tenant_id: str) -> list[TaintPolicy]:
        return [
            TaintPolicy.model_validate_json(r[0])
            for r in self._all(
                "SELECT record FROM taint_policies WHERE tenant_id=? ORDER BY policy_id, version", (tenant_id,)
            )
        ]

    def tenant_settings(self, tenant_id: str) -> dict[str, Any]:
        row = self._all("SELECT record FROM tenant_settings WHERE tenant_id=?", (tenant_id,))
        if not row:
            return {}
        record = row[0][0]
        return dict(json.loads(record) if isinstance(record, (str, bytes)) else record)

    def events_matching(
        self, tenant_id: str, subject_id: str, *, kind: str | None, actor: str | None
    ) -> list[tuple[str, str, str, str]]:
        sql = "SELECT event_id, kind, actor, trust FROM events WHERE tenant_id=? AND subject_id=? AND state='valid'"
        args: list[Any] = [tenant_id, subject_id]
        if kind is not None:
            sql += " AND kind=?"
            args.append(kind)
        if actor is not None:
            sql += " AND actor=?"
            args.append(actor)
        return [(r[0], r[1], r[2], r[3]) for r in self._all(sql + " ORDER BY seq", args)]


class CoreTaintWrites(TxBase):
    """Storing a version of a taint policy."""

    def save_taint_policy(self, policy: TaintPolicy) -> None:
        self._run(
            "INSERT INTO taint_policies (tenant_id, policy_id, version, created_at, record) VALUES (?,?,?,?,?)",
            (
                policy.tenant_id,
                policy.policy_id,
                policy.version,
                self._d.ts(policy.created_at),
                policy.model_dump_json(),
            ),
        )

    def save_tenant_settings(self, tenant_id: str, record: dict[str, Any], *, at: datetime) -> None:
        self._run(
            "INSERT INTO tenant_settings (tenant_id, updated_at, record) VALUES (?,?,?) "
            "ON CONFLICT (tenant_id) DO UPDATE SET updated_at=excluded.updated_at, record=excluded.record",
            (tenant_id, self._d.ts(at), json.dumps(record, sort_keys=True)),
        )
