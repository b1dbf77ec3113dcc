"""Read-back's comparison (lossgate.publication.readback): the quick test of two dumps that
are the same agrees with the field-by-field walk on every pair, and spares the walk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from pydantic_core import TzInfo

import lossgate.publication.readback as readback

AT = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
PAIRS: list[tuple[Any, Any]] = [
    ({"a": [1, "x"]}, {"a": [1, "x"]}),
    ({"a": 1}, {"a": 1.0}),
    ({"a": True}, {"a": 1}),
    ({"a": "1"}, {"a": 1}),
    ({"a": (1, 2)}, {"a": [1, 2]}),
    ({"a": 0.0}, {"a": -0.0}),
    ({"a": float("nan")}, {"a": float("nan")}),
    ({"a": [Decimal("NaN")]}, {"a": [Decimal("NaN")]}),
    ({"a": Decimal("1.0")}, {"a": Decimal("1.00")}),
    ({"a": AT}, {"a": AT.astimezone(TzInfo(0))}),
    ({"a": AT}, {"a": AT.astimezone(timezone(timedelta(hours=2)))}),
    ({"a": AT}, {"a": AT.isoformat()}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"a": 1}, {"a": 1, "b": None}),
    ({"s": "no nan here", "t": ("banana",)}, {"s": "no nan here", "t": ("banana",)}),
    ({"s": "line\nnext"}, {"s": "line\r\nnext"}),
]


@pytest.mark.parametrize(("written", "read"), PAIRS)
def test_the_quick_test_never_disagrees_with_the_walk(written: Any, read: Any) -> None:
    if readback._same(written, read):
        assert readback._first(written, read, "body") is None


def test_equal_dumps_are_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    dump = {
        "inputs": [{"kind": "event", "id": f"e{i}", "content_hash": f"sha256:{i}", "seq": i} for i in range(500)],
        "ratio": 0.15,
        "at": AT,
    }

    class Dumped:
        def model_dump(self, mode: str) -> dict[str, Any]:
            return dict(dump)

    class Stored:
        body = Dumped()
        manifest = Dumped()

    def walked(*args: Any) -> None:
        raise AssertionError("walked two equal dumps")

    monkeypatch.setattr(readback, "_first", walked)
    stored: Any = Stored()
    assert readback.divergence(stored, stored) is None  # real records: tests/conformance/test_readback.py
