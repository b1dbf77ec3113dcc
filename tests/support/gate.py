"""The gate tests' helpers: gate cases built from compact specs (:func:`case`, :func:`ev`,
:func:`fact`, :func:`usd`, from ``tests/gate/build_cases.py``, the script that writes the
shipped cases), parsed (:func:`gate_case`), edited (:func:`with_artifact`,
:func:`claims_of`) and checked (:func:`gate`, :func:`codes`)."""

from __future__ import annotations

from typing import Any

from lossgate.gate import GateResult, check
from lossgate.gate.casefile import GateCase, parse_artifact, parse_case
from tests.gate.build_cases import FIXTURES as FIXTURES
from tests.gate.build_cases import case as case
from tests.gate.build_cases import ev as ev
from tests.gate.build_cases import fact as fact
from tests.gate.build_cases import usd as usd

CASES = FIXTURES / "cases"


def gate_case(doc: dict[str, Any]) -> GateCase:
    """A :class:`GateCase` from a document built with :func:`case`."""
    return parse_case(doc, base=CASES)


def with_artifact(c: GateCase, **changes: Any) -> GateCase:
    """The case with its artifact document changed (keys of the artifact JSON)."""
    doc = {**c.document["artifact"], **changes}
    art = parse_artifact(doc, c.snapshot.tenant_id, c.snapshot.subject_id, c.registry)
    return GateCase(**{**c.__dict__, "artifact": art})


def gate(c: GateCase, **kw: Any) -> GateResult:
    return check(c.snapshot, c.artifact, c.registry, **kw)


def claims_of(c: GateCase) -> list[dict[str, Any]]:
    """A deep-enough copy of the case's claim documents, to edit."""
    return [
        dict(x, qualifiers=dict(x["qualifiers"]), derived_from=list(x["derived_from"]))
        for x in c.document["artifact"]["claims"]
    ]


def codes(result: GateResult) -> set[str]:
    return {v.code for v in result.violations}
