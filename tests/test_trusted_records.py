"""Records a consolidation builds unvalidated (lossgate.model.trusted) are the records
validation builds: equal, the same dump, JSON, repr, hash and set fields, frozen."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from lossgate.consolidate.pipeline import Consolidator
from lossgate.consolidate.selection import event_refs, fact_refs
from lossgate.gate.outcome import Violation
from lossgate.gate.prose import _missing
from lossgate.model.derived_records import InputRef, LineageEdge


def same(fast: BaseModel, validated: BaseModel) -> None:
    assert type(fast) is type(validated)
    assert fast == validated and hash(fast) == hash(validated) and repr(fast) == repr(validated)
    assert fast.model_dump() == validated.model_dump()
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_fields_set == validated.model_fields_set
    assert list(fast.__dict__) == list(validated.__dict__)
    with pytest.raises(ValidationError):
        fast.__setattr__(next(iter(type(fast).model_fields)), "changed")


def event(i: int) -> Any:  # what event_refs reads of a stored event
    return SimpleNamespace(event_id=f"e{i}", seq=i, content_hash=f"sha256:{i:064x}")


def fact(i: int) -> Any:
    return SimpleNamespace(fact_id=f"f{i}", seq=i, content_hash=f"sha256:{i:064x}")


def test_the_inputs_pinning_events_and_facts() -> None:
    events, facts = [event(i) for i in (1, 2)], [fact(3)]
    for fast, e in zip(event_refs(events), events, strict=True):
        same(fast, InputRef(kind="event", id=e.event_id, content_hash=e.content_hash, seq=e.seq))
    for fast, f in zip(fact_refs(facts), facts, strict=True):
        same(fast, InputRef(kind="fact", id=f.fact_id, content_hash=f.content_hash, seq=f.seq))


def test_the_lineage_edges_of_an_artifact() -> None:
    class Made:  # what _edges reads of an artifact and a selection
        tenant_id, subject_id, artifact_id = "t", "s", "a1"
        inputs = (*event_refs([event(1)]), *fact_refs([fact(2)]))

    made: Any = Made()
    edges = Consolidator._edges(made, made)
    assert len(edges) == 2
    for fast, ref in zip(edges, made.inputs, strict=True):
        same(
            fast,
            LineageEdge(tenant_id="t", subject_id="s", artifact_id="a1", input_kind=ref.kind, input_id=ref.id),
        )


@pytest.mark.parametrize("severity", ["critical", "important"])
def test_a_finding_of_an_atom_left_out(severity: Any) -> None:
    fast = _missing("money:USD 12.00", severity, "'$12' is in no claim")
    same(
        fast,
        Violation(
            code="atom_missing",
            subject="money:USD 12.00",
            severity=severity,
            detail="'$12' is in no claim",
            expected="money:USD 12.00",
        ),
    )
