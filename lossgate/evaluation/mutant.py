"""What a mutation is, and the helpers every operator shares.

A :class:`Mutant` is one mutated artifact, the surface it was applied to (the
structured ``claims``, the ``prose`` summary alone, or ``both``) and the codes
that show the gate caught it *for the right reason* (``expect``). A prose edit
that only restates values the artifact may legitimately state is marked
``equivalent`` and not judged (see :func:`prose_edit`).

Most mutants go to the gate as they are. A *narrative* mutant (:func:`narrative_mutant`)
is a sentence a model wrote on a topic only the ledger states
(:mod:`lossgate.gate.narrative`): it goes through what lossgate does with a compressor's
output before the gate, under a tenant's narrative ``policy``, and its catch is that the
sentence never reaches a published summary: under ``omit``, left out (the lane's code
:data:`OMITTED`); under ``refuse``, ``narrative_touches_topic`` on that sentence.
:func:`judge` decides, for either kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from lossgate.evaluation import textops as T
from lossgate.gate.atoms import Atom, diff_atoms, extract_atoms, is_affirmation
from lossgate.gate.casefile import GateCase
from lossgate.gate.engine import check
from lossgate.gate.narrative import NarrativePolicy
from lossgate.gate.outcome import GateResult, make_result
from lossgate.gate.preserve import MustPreserve, build_must_preserve
from lossgate.gate.prose import ProseInputs
from lossgate.gate.publication import as_published
from lossgate.gate.sources import value_forms
from lossgate.gate.superseded import retired_values
from lossgate.gate.typed import typed_value
from lossgate.model.records import ArtifactBody, Claim

__all__ = [
    "Mutant",
    "Operator",
    "Surface",
    "OMITTED",
    "with_claims",
    "replace_claim",
    "mutant",
    "narrative_mutant",
    "claim_value",
    "prose_edit",
    "judge",
]

Surface = Literal["claims", "prose", "both"]
# The lane's code for a narrative mutant's sentence left out of the published summary (under
# the ``omit`` policy that is the catch: no agent reads it). No gate violation has this code.
OMITTED = "narrative_omitted"


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
    # A narrative mutant (see narrative_mutant): published as lossgate publishes a
    # compressor's output, under this narrative policy; ``sentence`` is what it wrote.
    policy: NarrativePolicy | None = None
    sentence: str = ""


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


def narrative_mutant(case: GateCase, op: str, target: str, sentence: str, policy: NarrativePolicy) -> Mutant:
    """``sentence`` appended to the case's summary as a model's narrative, published under
    ``policy``: caught when it never reaches a published summary (:func:`judge`)."""
    art = case.artifact.model_copy(update={"summary": f"{case.artifact.summary}\n{sentence}"})
    expect = OMITTED if policy == "omit" else "narrative_touches_topic"
    return Mutant(
        op, case.case_id, f"{target}@{policy}", "prose", art, frozenset({expect}), policy=policy, sentence=sentence
    )


def _published(case: GateCase, m: Mutant, inputs: ProseInputs | None, must: MustPreserve) -> tuple[GateResult, bool]:
    """What lossgate does with a narrative mutant's artifact (as the consolidation pipeline
    does with a compressor's output): markers read again, touching sentences left out (or,
    under ``refuse``, refused), lossgate's markers written, the gate. Returns the result and
    whether the mutant's sentence was named: left out of the published summary (``omit``),
    or refused as touching a topic (``refuse``)."""
    retired = retired_values(case.snapshot.facts, case.snapshot.conflicts)
    published = as_published(case.snapshot, m.artifact, must, case.registry, retired=retired, policy=m.policy or "omit")
    body = published.body
    result = check(case.snapshot, body, case.registry, prose_inputs=inputs, must=must, retired=retired)
    mine = tuple(o for o in published.touching if o.sentence.strip() and o.sentence.strip() in m.sentence)
    if published.refused or m.policy == "refuse":
        # The pipeline keeps one narrative_touches_topic per summary; the catch is the one on
        # this mutant's sentence (a case's own sentences may touch a topic too).
        result = make_result([*result.violations, *result.losses, *published.refusals], must)
        return result, bool(mine)
    return result, bool(mine) and m.sentence.strip() not in body.summary


def judge(case: GateCase, m: Mutant, inputs: ProseInputs | None = None) -> str | None:
    """``None`` if lossgate caught ``m`` for the right reason (a gate failure with a code
    ``m`` expects; for a narrative mutant, its sentence named as :func:`_published` says),
    else why not (``case/target (surface): ...``)."""
    where = f"{m.case_id}/{m.target} ({m.surface})"
    if m.policy is None:
        result = check(case.snapshot, m.artifact, case.registry, prose_inputs=inputs)
        named: set[str] = {v.code for v in result.violations} if result.outcome == "failed" else set()
    else:
        result, said = _published(case, m, inputs, build_must_preserve(case.snapshot, case.registry))
        if not said:
            reached = "reached the published summary" if m.policy == "omit" else "was not refused"
            return f"{where}: {m.sentence!r} {reached} ({m.policy}; outcome {result.outcome})"
        named = set(m.expect)
    if m.expect & named:
        return None
    if result.outcome != "failed":
        return f"{where}: outcome {result.outcome}"
    return f"{where}: failed with {', '.join(sorted({v.code for v in result.violations}))}, expected {', '.join(sorted(m.expect))}"


def claim_value(c: Claim) -> Any:
    """The claim's value in canonical JSON form."""
    return typed_value(c.value_type, c.value).canonical


def supported_atoms(case: GateCase) -> list[Atom]:
    """Atoms the sources and the structured side support (for equivalence)."""
    atoms: list[Atom] = []
    for ev in case.snapshot.events:
        if ev.state == "valid" and ev.text:
            atoms += [a for a in extract_atoms(ev.text, reference_time=ev.occurred_at) if not is_affirmation(a)]
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
    before = {(a.kind, a.key) for a in extract_atoms(art.summary)}
    fresh = [a for a in extract_atoms(new_summary) if (a.kind, a.key) not in before]
    if not fresh or covered(fresh, supported_atoms(case)):
        yield Mutant(op, case.case_id, target, "prose", art, frozenset(codes), equivalent=True)
        return
    yield mutant(case, op, target, "prose", art.model_copy(update={"summary": new_summary}), *codes)
