"""The mutation lane: prove the gate catches every meaning change and flags no rewrite.

:func:`run_lane` loads every gate case of a directory, checks that each correct
artifact passes the gate (its *baseline*), applies every mutation operator
(:mod:`~lossgate.evaluation.operators`) and every meaning-preserving rewrite
(:mod:`~lossgate.evaluation.rewrites`), and reports per operator how many
mutants were caught (:func:`~lossgate.evaluation.mutant.judge`: the gate failed it for
a reason it expects or, for a narrative mutant, its sentence never reached a published
summary) and per rewrite how many variants raised a false alarm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from lossgate.errors import InvalidInput
from lossgate.evaluation.mutant import judge
from lossgate.evaluation.operators import OPERATORS
from lossgate.evaluation.rewrites import REWRITES
from lossgate.gate.casefile import GateCase, load_case
from lossgate.gate.engine import check
from lossgate.gate.outcome import GateResult
from lossgate.gate.prose import prose_inputs

__all__ = ["LaneReport", "OperatorStats", "RewriteStats", "CaseBaseline", "run_lane", "default_fixtures", "load_cases"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OperatorStats(_Frozen):
    """One mutation operator over every case. ``missed`` lists ``case/target (surface): why``."""

    operator: str
    description: str
    mutants: int
    caught: int
    equivalent: int = 0
    missed: tuple[str, ...] = ()


class RewriteStats(_Frozen):
    """One rewrite over every case. ``false_alarms`` lists ``case/label: what changed``."""

    rewrite: str
    description: str
    variants: int
    false_alarms: tuple[str, ...] = ()


class CaseBaseline(_Frozen):
    """How the gate judged a case's correct artifact."""

    case_id: str
    outcome: str
    violations: tuple[str, ...] = ()
    losses: tuple[str, ...] = ()


class LaneReport(_Frozen):
    """Everything the lane measured. ``ok``: every mutant caught, no false alarm, no broken case."""

    fixtures: str
    baselines: tuple[CaseBaseline, ...]
    operators: tuple[OperatorStats, ...]
    rewrites: tuple[RewriteStats, ...]

    @property
    def broken_cases(self) -> tuple[str, ...]:
        """Cases whose correct artifact fails the gate (the fixture or the gate is wrong)."""
        return tuple(b.case_id for b in self.baselines if b.outcome == "failed")

    @property
    def mutants(self) -> int:
        return sum(o.mutants for o in self.operators)

    @property
    def caught(self) -> int:
        return sum(o.caught for o in self.operators)

    @property
    def false_alarms(self) -> int:
        return sum(len(r.false_alarms) for r in self.rewrites)

    @property
    def ok(self) -> bool:
        return self.mutants == self.caught and not self.false_alarms and not self.broken_cases and bool(self.baselines)


def default_fixtures() -> Path:
    """The shipped gate cases (``lossgate/fixtures/gate/cases``)."""
    return Path(str(resources.files("lossgate") / "fixtures" / "gate" / "cases"))


def load_cases(fixtures_dir: str | Path) -> list[GateCase]:
    """Every ``*.json`` case of a directory, by file name; raises :class:`InvalidInput`."""
    root = Path(fixtures_dir)
    if not root.is_dir():
        raise InvalidInput(f"fixtures directory {root} does not exist")
    paths = sorted(root.glob("*.json"))
    if not paths:
        raise InvalidInput(f"no *.json gate cases in {root}")
    return [load_case(p) for p in paths]


@dataclass
class _Tally:
    """One operator's count, while the lane runs."""

    mutants: int = 0
    caught: int = 0
    equivalent: int = 0
    missed: list[str] = field(default_factory=list)


@dataclass
class _Alarms:
    """One rewrite's count, while the lane runs."""

    variants: int = 0
    false_alarms: list[str] = field(default_factory=list)


def _signature(result: GateResult) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return (result.outcome, tuple(map(str, result.violations)), tuple(f"{v}({v.severity})" for v in result.losses))


def run_lane(fixtures_dir: str | Path | None = None) -> LaneReport:
    """Run the mutation lane over a directory of gate cases (default: the shipped ones)."""
    root = Path(fixtures_dir) if fixtures_dir is not None else default_fixtures()
    cases = load_cases(root)
    baselines: list[CaseBaseline] = []
    tallies = {op.name: _Tally() for op in OPERATORS}
    alarms = {rw.name: _Alarms() for rw in REWRITES}
    for case in cases:
        inputs = prose_inputs(case.snapshot)
        base = check(case.snapshot, case.artifact, case.registry, prose_inputs=inputs)
        baselines.append(
            CaseBaseline(
                case_id=case.case_id,
                outcome=base.outcome,
                violations=tuple(map(str, base.violations)),
                losses=tuple(map(str, base.losses)),
            )
        )
        for op in OPERATORS:
            tally = tallies[op.name]
            for mutant in op.generate(case):
                if mutant.equivalent:
                    tally.equivalent += 1
                    continue
                missed = judge(case, mutant, inputs)  # the gate, or for a narrative mutant what is published
                tally.mutants += 1
                if missed is None:
                    tally.caught += 1
                else:
                    tally.missed.append(missed)
        for rw in REWRITES:
            for variant in rw.generate(case):
                v = variant.case
                got = check(v.snapshot, v.artifact, v.registry)
                alarms[rw.name].variants += 1
                if _signature(got) != _signature(base):
                    alarms[rw.name].false_alarms.append(
                        f"{case.case_id}/{variant.label}: {got.outcome} {got.lines() or [str(x) for x in got.losses]}"
                    )
    return LaneReport(
        fixtures=str(root),
        baselines=tuple(baselines),
        operators=tuple(
            OperatorStats(
                operator=op.name,
                description=op.description,
                mutants=tallies[op.name].mutants,
                caught=tallies[op.name].caught,
                equivalent=tallies[op.name].equivalent,
                missed=tuple(tallies[op.name].missed),
            )
            for op in OPERATORS
        ),
        rewrites=tuple(
            RewriteStats(
                rewrite=rw.name,
                description=rw.description,
                variants=alarms[rw.name].variants,
                false_alarms=tuple(alarms[rw.name].false_alarms),
            )
            for rw in REWRITES
        ),
    )
