"""``lossgate eval longmemeval --data FILE``: session and turn recall on LongMemEval, against
baselines run alongside (:mod:`lossgate.evaluation.longmemeval`).

Runs in a fresh temporary SQLite database unless ``--store URL`` names another (each
question's haystack goes to tenant ``longmemeval``, subject its ``question_id``). Prints a
table per measure and writes the whole report as JSON with ``--json FILE``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lossgate.cli.app import cli_errors, err, out
from lossgate.cli.locomo import BUDGET, JSON_OUT, SEMANTIC, STORE, evaluation_memory
from lossgate.evaluation import longmemeval

__all__ = ["longmemeval_command"]


def longmemeval_command(
    data: Path = typer.Option(
        ...,
        "--data",
        exists=True,
        dir_okay=False,
        readable=True,
        metavar="FILE.json",
        help="longmemeval_s.json, longmemeval_m.json or longmemeval_oracle.json (the LongMemEval repository's data).",
    ),
    budget: int = BUDGET,
    limit: int | None = typer.Option(None, "--limit", min=1, metavar="N", help="Only the first N questions."),
    store: str | None = STORE,
    json_out: Path | None = JSON_OUT,
    semantic: bool = SEMANTIC,
) -> None:
    """Recall every LongMemEval question at a fixed budget; report session and turn recall per
    question type, tokens and latency, against baselines on the same questions."""
    with cli_errors(), tempfile.TemporaryDirectory() as tmp:
        instances, digest = longmemeval.load(data, limit=limit)
        memory = evaluation_memory(store, tmp, semantic=semantic)
        try:
            columns = (TextColumn("recall"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=err(), transient=True) as bar:
                task = bar.add_task("questions", total=len(instances))
                doc = longmemeval.evaluate(
                    memory, instances, budget=budget, sha256=digest, progress=lambda n: bar.advance(task, n)
                ).to_json()
        finally:
            memory.close()
    if json_out:
        json_out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    _print(doc)


def _print(doc: dict[str, Any]) -> None:
    sides = doc["sides"]
    groups = sides["lossgate"]
    apart = ("overall", "dropped", longmemeval.ABSTENTION)
    types = [t for t in longmemeval.QUESTION_TYPES if t in groups]
    types += sorted(g for g in groups if g not in types and g not in apart)
    cols = [*types, *(["overall"] if "overall" in groups else [])]
    for measure, title in (("session", "session-level recall"), ("turn", "turn-level recall")):
        table = Table(title=f"LongMemEval {title} at {doc['budget_tokens']} tokens per recall")
        table.add_column("method")
        for col in cols:
            table.add_column(f"{col} ({groups[col][f'{measure}_questions']})", justify="right")
        for name, figures in sides.items():
            table.add_row(name, *(_figure(figures.get(c, {}).get(f"{measure}_recall")) for c in cols))
        out().print(table)
    extra = [g for g in ("dropped", longmemeval.ABSTENTION) if g in groups]
    notes = {
        "dropped": "dropped: questions with a has_answer turn the published summary dropped an atom of",
        longmemeval.ABSTENTION: "abstention: ids ending _abs, never in overall",
    }
    table = Table(title="; ".join(["tokens and latency per recall (overall)", *(notes[g] for g in extra)]))
    for name in ("method", "tokens", "reduction", "p50 / p99 ms"):
        table.add_column(name, justify="left" if name == "method" else "right")
    for g in extra:
        for measure in ("session", "turn"):
            table.add_column(f"{g} {measure} ({groups[g][f'{measure}_questions']})", justify="right")
    for name, figures in sides.items():
        overall = figures.get("overall")
        if overall:
            latency = "-" if overall["p50_ms"] is None else f"{overall['p50_ms']:.1f} / {overall['p99_ms']:.1f}"
            row = [name, f"{overall['tokens']:,.0f}", f"{overall['token_reduction']:.1%}", latency]
        else:
            row = [name, "-", "-", "-"]
        row += [_figure(figures.get(g, {}).get(f"{measure}_recall")) for g in extra for measure in ("session", "turn")]
        table.add_row(*row)
    out().print(table)
    if set(doc["consolidations"]) - {"published"}:
        out().print(
            "consolidation: "
            + ", ".join(f"{n} {status}" for status, n in doc["consolidations"].items())
            + " (without a published summary, recall reads raw memory)",
            markup=False,
        )
    if doc["skipped"]:
        out().print(
            f"skipped (no answer session in the haystack, no has_answer turn): {', '.join(doc['skipped'])}",
            markup=False,
        )
    if doc["unmatched_answer_sessions"]:
        out().print(
            f"{doc['unmatched_answer_sessions']} answer_session_ids name no session of their haystack (left out)",
            markup=False,
        )
    if doc.get("embedder"):
        out().print(
            f"semantic: {doc['embedder']}, every turn embedded in {doc['embed_seconds']:.1f} s (off the recall path)",
            markup=False,
        )


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
