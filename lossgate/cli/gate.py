"""Gate commands: ``lossgate check FILE.json`` and ``lossgate eval mutations``.

``check`` reads either a fact-contract fixture (format ``fact-contract``: an ``expected``
ledger and an ``artifact``) or a lossgate gate case (``"format": "lossgate.gate-case/1"``),
prints one violation per line (``fact-allergy-1:value_changed``) and exits 1,
or prints ``Compressed memory satisfies the fact contract`` and exits 0. Input
that is not one of those formats exits 2 with one ``error: ...`` line.

``eval mutations`` runs the mutation lane and exits 1 unless every mutant is
caught and no meaning-preserving rewrite is flagged. ``eval narratives`` gates
sentences written by hand against the shipped cases and exits 1 when the fence
refuses more faithful ones than ``--max-false-alarms`` allows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from lossgate.cli.app import cli_errors, out
from lossgate.errors import InvalidInput
from lossgate.evaluation.lane import LaneReport, run_lane
from lossgate.evaluation.narratives import CORPORA, NarrativeReport, run_corpus
from lossgate.gate.casefile import is_case, parse_case
from lossgate.gate.engine import check as gate_check
from lossgate.gate.fixture import contract_result, is_contract_fixture, parse_fixture
from lossgate.gate.jsonio import read_json
from lossgate.gate.outcome import GateResult

__all__ = ["register", "SUCCESS"]

SUCCESS = "Compressed memory satisfies the fact contract"

eval_app = typer.Typer(help="Evaluation lanes: evidence that the gate catches what it must.", no_args_is_help=True)


def _gate_file(path: Path) -> tuple[str, GateResult]:
    """(format name, result) for a fixture file; raises :class:`InvalidInput`."""
    payload = read_json(path)
    if is_contract_fixture(payload):
        return "fact-contract", contract_result(*parse_fixture(payload))
    if is_case(payload):
        case = parse_case(payload, base=path.parent)
        return "lossgate.gate-case/1", gate_check(case.snapshot, case.artifact, case.registry)
    raise InvalidInput(
        f"{path}: not a fact-contract fixture (needs 'expected' and 'artifact') "
        "or a gate case ('format': 'lossgate.gate-case/1')"
    )


def _report(fmt: str, result: GateResult) -> dict[str, Any]:
    return {
        "format": fmt,
        "outcome": result.outcome,
        "ok": result.passed,
        "violations": [{"line": str(v), **v.model_dump()} for v in result.violations],
        "losses": [{"line": str(v), **v.model_dump()} for v in result.losses],
        "must_preserve": result.must_preserve.model_dump(),
    }


def check_command(
    file: Path = typer.Argument(..., metavar="FILE.json", help="A fact-contract fixture or a gate case."),
    as_json: bool = typer.Option(False, "--json", help="Print a machine-readable report instead."),
) -> None:
    """Check a compressed artifact against its expected facts: one violation per line, exit 1 if any."""
    with cli_errors():
        fmt, result = _gate_file(file)
    if as_json:
        typer.echo(json.dumps(_report(fmt, result), indent=2, sort_keys=True))
    elif result.violations:
        typer.echo("\n".join(result.lines()))
    else:
        typer.echo(SUCCESS)
        for loss in result.losses:  # acceptable losses: recorded, not failing
            typer.echo(f"note: {loss} ({loss.severity} loss): {loss.detail}", err=True)
    if result.violations:
        raise typer.Exit(1)


def _print_lane(report: LaneReport) -> None:
    console = out()
    table = Table(title="Mutation lane: mutants the gate must catch")
    for name, justify in (
        ("operator", "left"),
        ("mutants", "right"),
        ("caught", "right"),
        ("missed", "right"),
        ("equivalent", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for op in report.operators:
        table.add_row(op.operator, str(op.mutants), str(op.caught), str(op.mutants - op.caught), str(op.equivalent))
    table.add_row(
        "total",
        str(report.mutants),
        str(report.caught),
        str(report.mutants - report.caught),
        str(sum(o.equivalent for o in report.operators)),
        style="bold",
    )
    console.print(table)
    rewrites = Table(title="Meaning-preserving rewrites the gate must not flag")
    for name, justify in (("rewrite", "left"), ("variants", "right"), ("false alarms", "right")):
        rewrites.add_column(name, justify=justify)  # type: ignore[arg-type]
    for rw in report.rewrites:
        rewrites.add_row(rw.rewrite, str(rw.variants), str(len(rw.false_alarms)))
    console.print(rewrites)
    for op in report.operators:
        for line in op.missed:
            console.print(f"missed [{op.operator}] {line}", markup=False)
    for rw in report.rewrites:
        for line in rw.false_alarms:
            console.print(f"false alarm [{rw.rewrite}] {line}", markup=False)
    for case_id in report.broken_cases:
        console.print(f"broken case: {case_id} (its correct artifact fails the gate)", markup=False)
    clean = sum(b.outcome == "clean" for b in report.baselines)
    console.print(
        f"{len(report.baselines)} cases ({clean} clean, {len(report.baselines) - clean} acceptable or failed); "
        f"{report.caught}/{report.mutants} mutants caught, {report.false_alarms} false alarms: "
        f"{'PASS' if report.ok else 'FAIL'}",
        markup=False,
    )


@eval_app.command("mutations")
def mutations_command(
    fixtures: Path | None = typer.Option(
        None, "--fixtures", metavar="DIR", help="Directory of gate cases (default: the shipped ones)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the lane report as JSON."),
) -> None:
    """Mutate correct artifacts and count what the gate catches; exit 1 unless all caught, none flagged."""
    with cli_errors():
        report = run_lane(fixtures)
    if as_json:
        doc = report.model_dump() | {
            "ok": report.ok,
            "mutants": report.mutants,
            "caught": report.caught,
            "false_alarms": report.false_alarms,
        }
        typer.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        _print_lane(report)
    if not report.ok:
        raise typer.Exit(1)


def _print_narratives(reports: list[NarrativeReport], verbose: bool) -> None:
    console = out()
    table = Table(title="Narrative sentences: refused by the fence, and by the whole gate")
    for name in (
        "corpus",
        "faithful",
        "fence false alarms",
        "gate false alarms",
        "wrong",
        "fence caught",
        "gate caught",
    ):
        table.add_column(name, justify="left" if name == "corpus" else "right")
    for r in reports:
        table.add_row(
            r.corpus,
            str(r.faithful),
            f"{len(r.false_alarms)} ({r.false_alarm_rate:.1%})",
            f"{len(r.gate_false_alarms)} ({r.gate_false_alarm_rate:.1%})",
            str(r.wrong),
            f"{r.wrong - len(r.misses)} ({r.catch_rate:.1%})",
            f"{r.wrong - len(r.gate_misses)} ({r.gate_catch_rate:.1%})",
        )
    console.print(table)
    published = Table(
        title="What an agent reads: each sentence as a model's narrative, published under the omit policy"
    )
    for name in (
        "corpus",
        "wrong reaching recall",
        "wrong left out",
        "wrong refused with the summary",
        "faithful kept",
        "faithful left out",
        "... a ledger line in place",
        "faithful kept or in place",
        "faithful refused with the summary",
    ):
        published.add_column(name, justify="left" if name == "corpus" else "right")
    for r in reports:
        published.add_row(
            r.corpus,
            f"{len(r.reached)} ({r.reach_rate:.1%})",
            str(r.omitted["wrong"]),
            str(r.refused["wrong"]),
            f"{r.kept} ({r.kept_rate:.1%})",
            str(r.omitted["faithful"]),
            str(r.spoken["faithful"]),
            f"{r.kept + r.spoken['faithful']} ({r.in_place_rate:.1%})",
            str(r.refused["faithful"]),
        )
    console.print(published)
    for r in reports:
        if verbose:
            for item in r.reached:
                console.print(f"reaches recall [{r.corpus}] {item.case} ({item.kind}): {item.sentence}", markup=False)
        for item, why in r.false_alarms:
            console.print(f"false alarm [{r.corpus}] {item.case}: {item.sentence} -- {why}", markup=False)
        if verbose:
            for item in r.misses:
                console.print(f"passed [{r.corpus}] {item.case} ({item.kind}): {item.sentence}", markup=False)


@eval_app.command("narratives")
def narratives_command(
    corpus: list[Path] | None = typer.Option(
        None, "--corpus", metavar="FILE.jsonl", help="A corpus of labelled sentences (default: the shipped ones)."
    ),
    max_false_alarms: float = typer.Option(
        0.02,
        "--max-false-alarms",
        min=0.0,
        max=1.0,
        help="Exit 1 when the fence refuses a larger share of faithful ones.",
    ),
    max_reach: float = typer.Option(
        0.0,
        "--max-reach",
        min=0.0,
        max=1.0,
        help="Exit 1 when a larger share of wrong ones reaches what recall returns.",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list the wrong sentences the fence passed."),
    as_json: bool = typer.Option(False, "--json", help="Print the reports as JSON."),
) -> None:
    """Gate hand-written sentences on the shipped cases: how often the fence refuses a faithful one, catches a wrong one, and what an agent would read of them."""
    with cli_errors():
        reports = [run_corpus(path) for path in (corpus or sorted(CORPORA.glob("*.jsonl")))]
    if as_json:
        typer.echo(json.dumps([r.to_json() for r in reports], indent=2, sort_keys=True))
    else:
        _print_narratives(reports, verbose)
    if any(r.false_alarm_rate > max_false_alarms or r.reach_rate > max_reach for r in reports):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``check`` and the ``eval`` group (``mutations``, ``locomo``, ``longmemeval``) to ``app``."""
    from lossgate.cli.locomo import locomo_command
    from lossgate.cli.longmemeval import longmemeval_command

    eval_app.command("locomo")(locomo_command)
    eval_app.command("longmemeval")(longmemeval_command)
    app.command("check")(check_command)
    app.add_typer(eval_app, name="eval")
