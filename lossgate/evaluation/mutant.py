"""What a mutation is, and the helpers every operator shares.

A :class:`Mutant` is one mutated artifact, the surface it was applied to (the
structured ``claims``, the ``prose`` summary alone, or ``both``) and the codes
that show the gate caught it *for the right reason* (``expect``). A prose edit
that only restates values the artifact may legitimately state is marked
``equivalent`` and not judged (see :func:`prose_edit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal

from lossgate.evaluation import textops as T
from lossgate.gate.atoms import Atom, diff_atoms, is_affirmation
from lossgate.gate.casefile import GateCase
from lossgate.gate.sources import value_forms
from lossgate.gate.typed import typed_value
from lossgate.records import ArtifactBody, Claim

__all__ = ["Mutant", "Operator", "Surface", "with_claims", "replace_claim", "mutant", "claim_value", "prose_edit"]

Surface = Literal["claims", "prose", "both"]


@dataclass(frozen=True)
class Mutant:
    """One mutated artifact and what the gate should say about it."""

    operator: str
    case_id: str
    target: str
    surface: Surface
    artifact: ArtifactBody
    expect: frozenset[str]
    equivalent: bool = False  # not a meaning change the gate can see (see prose_edit)


@dataclass(frozen=True)
class Operator:
    """A named mutation: ``generate(case)`` yields its mutants of one case."""

    name: str
    description: str
    generate: Callable[[GateCase], Iterator[Mutant]]


def with_claims(art: ArtifactBody, claims: list[Claim]) -> ArtifactBody:
    """``art`` with these claims."""
    return art.model_copy(update={"claims": tuple(claims)})


def replace_claim(art: ArtifactBody, i: int, **update: Any) -> ArtifactBody:
    """``art`` with claim ``i`` updated."""
    claims = list(art.claims)
    claims[i] = claims[i].model_copy(update=update)
    return with_claims(art, claims)


def mutant(case: GateCase, op: str, target: str, surface: Surface, art: ArtifactBody, *codes: str) -> Mutant:
    """A mutant of ``case`` that the gate must fail with one of ``codes``."""
    return Mutant(op, case.case_id, target, surface, art, frozenset(codes))


def claim_value(c: Claim) -> Any:
    """The claim's value in canonical JSON form."""
    return typed_value(c.value_type, c.value).canonical


def supported_atoms(case: GateCase) -> list[Atom]:
    """Atoms the sources and the structured side support (for equivalence)."""
    atoms: list[Atom] = []
    for ev in case.snapshot.events:
        if ev.state == "valid" and ev.text:
            atoms += [a for a in T.extract_atoms(ev.text, reference_time=ev.occurred_at) if not is_affirmation(a)]
    for c in case.artifact.claims:
        for text in value_forms(c.value_type, c.value) + [v for _, v in c.qualifiers]:
            atoms += T.atoms_of(text)
    return atoms


def covered(fresh: list[Atom], supported: list[Atom]) -> bool:
    """True if every new atom is one the supported atoms cover (a new positive statement never is)."""
    if any(is_affirmation(a) for a in fresh):
        return False
    diff = diff_atoms(fresh, supported)  # fresh as the "source": what the supported atoms do not cover
    return not diff.missing and not diff.changed


def prose_edit(case: GateCase, op: str, target: str, new_summary: str | None, *codes: str) -> Iterator[Mutant]:
    """A prose mutant, unless the edit is *equivalent* under the prose diff's set semantics.

    Equivalent: the edited summary states no atom that is new to it, or only atoms the
    sources or claims support (a value swapped for another value the artifact already
    states, as between two invoices or the two sides of a conflict). The prose diff
    compares sets of atoms, so it cannot see such a swap; the structured claims carry the
    binding, and the same swap on the claims is a separate, caught mutant.
    """
    art = case.artifact
    if new_summary is None or new_summary == art.summary:
        return
    before = {(a.kind, a.key) for a in T.extract_atoms(art.summary)}
    fresh = [a for a in T.extract_atoms(new_summary) if (a.kind, a.key) not in before]
    if not fresh or covered(fresh, supported_atoms(case)):
        yield Mutant(op, case.case_id, target, "prose", art, frozenset(codes), equivalent=True)
        return
    yield mutant(case, op, target, "prose", art.model_copy(update={"summary": new_summary}), *codes)
