"""The subject-scoping choke point (lossgate/store/core/base.py), without a database.

Every primitive says in the protocol what it touches; a transaction class that
locks subjects gets each primitive wrapped to scope itself before its body. These
tests check the wiring: the declarations, the wrapping, and which scoping hook each
kind of primitive calls with which arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from lossgate.model.records import Conflict, Fact
from lossgate.store.core.base import TOUCHES, Row, Select
from lossgate.store.core.tx import CoreWriteTx
from lossgate.store.protocol import WriteTx, primitives, touch_of
from lossgate.store.sqlite.tx import SQLITE

NOW = datetime(2026, 3, 14, tzinfo=UTC)


class Recording(CoreWriteTx):
    """A transaction that runs no SQL and records its scoping calls."""

    _d = SQLITE
    locks_subjects = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def _scope(self, tenant_id: str, subject_id: str) -> None:
        self.calls.append(("scope", tenant_id, subject_id))

    def _use_tenant(self, tenant_id: str) -> None:
        self.calls.append(("tenant", tenant_id))

    def _one(self, sql: str, args: Sequence[Any] = ()) -> Row | None:
        return None

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        return []

    def _run(self, sql: str, args: Sequence[Any] = ()) -> int:
        return 0

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        pass

    def _fetch(self, selects: Sequence[Select]) -> list[list[Row]]:
        return [[] for _ in selects]


def fact(tenant: str, subject: str, fact_id: str) -> Fact:
    return Fact(
        tenant_id=tenant,
        subject_id=subject,
        fact_id=fact_id,
        seq=1,
        predicate="p",
        registry_version=1,
        value_type="int",
        value=1,
        source_event_ids=("e1",),
        recorded_at=NOW,
        content_hash="sha256:x",
    )


def test_every_primitive_of_the_protocol_says_what_it_touches() -> None:
    assert set(TOUCHES) == set(primitives(WriteTx))
    assert {name for name, t in TOUCHES.items() if t.kind == "own"} == {"lock_clock", "lock_alias"}
    assert {name for name, t in TOUCHES.items() if t.kind == "tenant"} == {
        "taken_event_ids",
        "taken_fact_ids",
        "subjects",
        "jobs",
        "insert_recall",
        "taint_policies",
        "save_taint_policy",  # a tenant's rules: no one subject's
        "tenant_settings",
        "save_tenant_settings",
        "artifact_ids",
        "artifact_documents",  # a format migration's admin reads of one tenant
        "daily_metrics",
        "save_daily_metrics",  # a tenant's daily fidelity figures
        "api_keys",
        "insert_api_key",
        "revoke_api_key",  # a tenant's API keys
        "idempotency_record",
        "save_idempotency_record",
    }  # a tenant's idempotency records
    assert touch_of(primitives(WriteTx)["api_key_by_hash"]).kind == "none"  # authentication: no tenant yet


def test_a_primitive_that_names_no_subject_and_declares_nothing_is_refused() -> None:
    def claim_everything(self: Any, job_id: int) -> None:
        """A new primitive someone forgot to declare."""

    with pytest.raises(TypeError, match="declare what it touches in its tier module of lossgate/store/protocol/"):
        touch_of(claim_everything)


def test_each_kind_of_primitive_scopes_what_it_names_before_its_body() -> None:
    tx = Recording()
    tx.set_tier("acme", "u1", through_seq=3, tier="cold")
    tx.events(tenant_id="acme", subject_id="u2")  # by keyword too
    tx.insert_conflict(
        Conflict(
            tenant_id="acme", subject_id="u3", conflict_id="c1", predicate="p", fact_ids=("f1", "f2"), detected_at=NOW
        )
    )
    tx.insert_facts([fact("acme", "u9", "f9"), fact("acme", "u4", "f4"), fact("acme", "u9", "f8")])
    tx.jobs("acme", None)
    tx.taken_event_ids("globex", ["e1"])
    tx.registry_document()
    assert tx.calls == [
        ("scope", "acme", "u1"),
        ("scope", "acme", "u2"),
        ("scope", "acme", "u3"),
        ("scope", "acme", "u4"),
        ("scope", "acme", "u9"),  # each subject once, sorted
        ("tenant", "acme"),  # the body's per-tenant switch for the rows it writes
        ("tenant", "acme"),  # jobs: the tenant only, never the subject's lock
        ("tenant", "globex"),
    ]


def test_the_postgres_transactions_are_wrapped_and_sqlite_needs_no_wrapper() -> None:
    pytest.importorskip("psycopg")
    from lossgate.store.postgres.tx import PostgresReadTx, PostgresWriteTx
    from lossgate.store.sqlite.tx import SQLiteWriteTx

    for cls in (PostgresReadTx, PostgresWriteTx):
        for name, touch in TOUCHES.items():
            impl = getattr(cls, name, None)
            if impl is not None and touch.kind not in ("own", "none"):
                assert getattr(impl, "__lossgate_scoped__", False), f"{cls.__name__}.{name} is not scoped"
    assert not any(getattr(getattr(SQLiteWriteTx, name), "__lossgate_scoped__", False) for name in TOUCHES)


def test_a_registered_scheme_opens_through_open_store_and_lossgate_open(tmp_path):
    """A third store's URL scheme, registered, is opened by open_store and lossgate.open;
    the built-in schemes cannot be taken over."""
    import lossgate
    from lossgate.errors import ConfigError
    from lossgate.store import _SCHEMES, open_store, register_scheme
    from lossgate.store.sqlite import SQLiteStore

    opened: list[tuple[str, str]] = []

    def opener(url: str, role: str) -> SQLiteStore:
        opened.append((url, role))
        return SQLiteStore(tmp_path / "third.db")

    register_scheme("thirdparty://", opener)
    try:
        store = open_store("thirdparty://x", role="worker")
        assert isinstance(store, SQLiteStore) and opened == [("thirdparty://x", "worker")]
        store.close()
        with lossgate.open("thirdparty://y") as memory:
            assert memory.store.url.startswith("sqlite:///")
        assert opened[-1] == ("thirdparty://y", "app")
        for prefix in ("sqlite:///", "postgresql://", "postgres:", ""):
            with pytest.raises(ConfigError):
                register_scheme(prefix, opener)
    finally:
        _SCHEMES.pop("thirdparty://", None)
    with pytest.raises(ConfigError):
        open_store("thirdparty://x")
