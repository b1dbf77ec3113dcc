"""``lossgate eval locomo --data PATH``: evidence recall on LoCoMo, against baselines run alongside.

Runs in a fresh temporary SQLite database unless ``--store URL`` names another (the
conversations go to tenant ``locomo``). Prints a table per category and writes the
whole report as JSON with ``--json FILE``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import lossgate
from lossgate.cli.app import cli_errors, err, out
from lossgate.evaluation import locomo
from lossgate.semantic import LocalEmbedder, embedder_from_env

__all__ = ["locomo_command"]


def locomo_command(
    data: Path = typer.Option(..., "--data", exists=True, dir_okay=False, readable=True, metavar="FILE.json",
                              help="locomo10.json (snap-research/locomo, data/locomo10.json)."),
    budget: int = typer.Option(2000, "--budget", min=50, help="Token budget of every recall and baseline."),
    conversations: Optional[int] = typer.Option(None, "--conversations", min=1,
                                                help="Only the first N conversations."),
    store: Optional[str] = typer.Option(None, "--store", metavar="URL",
                                        help="Database to use (default: a fresh temporary SQLite file)."),
    json_out: Optional[Path] = typer.Option(None, "--json", metavar="FILE", help="Also write the report as JSON."),
    semantic: bool = typer.Option(False, "--semantic", help="Also recall hybrid (lexical + vectors), with the "
                                  "embedder LOSSGATE_EMBEDDER names, else the local all-MiniLM-L6-v2 (needs the "
                                  "[semantic] extra)."),
) -> None:
    """Recall every LoCoMo question at a fixed budget; report evidence recall, tokens and latency."""
    with cli_errors(), tempfile.TemporaryDirectory() as tmp:
        convs, digest = locomo.load(data)
        convs = convs[:conversations] if conversations else convs
        if digest != locomo.PUBLISHED_SHA256:
            err().print(f"note: {data} is not the published locomo10.json (sha256 {digest[:12]}...)", markup=False)
        embedder = (embedder_from_env(os.environ) or LocalEmbedder()) if semantic else None
        memory = lossgate.open(store or f"sqlite:///{Path(tmp) / 'locomo.db'}", embedder=embedder)
        try:
            if memory.registry is None:
                memory.load_predicates(Path(__file__).resolve().parents[1] / "fixtures" / "gate" / "predicates.toml")
            columns = (TextColumn("recall"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=err(), transient=True) as bar:
                task = bar.add_task("questions", total=locomo.question_count(convs))
                report = locomo.evaluate(memory, convs, budget=budget, sha256=digest,
                                         progress=lambda n: bar.advance(task, n))
        finally:
            memory.close()
    doc = report.to_json()
    if json_out:
        json_out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    _print(doc)


def _print(doc: dict) -> None:
    sides = doc["sides"]
    cats = [*locomo.CATEGORIES.values(), "overall"]
    table = Table(title=f"LoCoMo evidence recall at {doc['budget_tokens']} tokens per recall "
                        f"({doc['conversations']} conversations)")
    table.add_column("method")
    for cat in cats:
        table.add_column(cat, justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("reduction", justify="right")
    table.add_column("p50 / p99 ms", justify="right")
    for name, figures in sides.items():
        overall = figures["overall"]
        latency = f"{overall['p50_ms']:.1f} / {overall['p99_ms']:.1f}" if name.startswith("lossgate") else "-"
        table.add_row(name, *(f"{figures[c]['evidence_recall']:.3f}" if c in figures else "-" for c in cats),
                      f"{overall['tokens']:,.0f}", f"{overall['token_reduction']:.1%}", latency)
    out().print(table)
    if doc.get("embedder"):
        out().print(f"semantic: {doc['embedder']}, every turn embedded in {doc['embed_seconds']:.1f} s "
                    "(off the recall path)", markup=False)
