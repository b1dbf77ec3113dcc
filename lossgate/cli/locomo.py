"""``lossgate eval locomo --data PATH``: evidence recall on LoCoMo, against baselines run alongside.

Runs in a fresh temporary SQLite database unless ``--store URL`` names another (the
conversations go to tenant ``locomo``). Prints a table per category and writes the
whole report as JSON with ``--json FILE``.

With ``--periods`` it measures the published memory instead
(:mod:`lossgate.evaluation.periods`): per conversation, the sessions whose dated digest the
hierarchy's root carries, its tokens against the raw conversation's, and where each date,
amount and identifier of the questions' evidence turns is found (the session's digest, a
recall by the question, a recall by the atom's own text, or nowhere), at the same budget.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import lossgate
from lossgate.cli.app import cli_errors, err, out, reranker_option
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.evaluation import locomo, periods
from lossgate.semantic import LocalEmbedder, embedder_from_env
from lossgate.semantic.rerankers import Reranker

__all__ = ["locomo_command"]


# What the recall benchmarks' commands share (``eval locomo``, ``eval longmemeval``).
BUDGET = typer.Option(2000, "--budget", min=50, metavar="TOKENS", help="Token budget of every recall and baseline.")
STORE = typer.Option(None, "--store", metavar="URL", help="Database to use (default: a fresh temporary SQLite file).")
JSON_OUT = typer.Option(None, "--json", metavar="FILE", help="Also write the report as JSON.")
SEMANTIC = typer.Option(
    False,
    "--semantic",
    help="Also recall hybrid (lexical + vectors), with the embedder "
    "LOSSGATE_EMBEDDER names, else the local all-MiniLM-L6-v2 (needs the semantic extra).",
)


def evaluation_memory(
    store: str | None, folder: str, *, semantic: bool, reranker: Reranker | None = None
) -> lossgate.Memory:
    """The memory a benchmark runs in: ``store``, or a fresh SQLite file in ``folder``, with
    the embedder ``--semantic`` asks for; the gate cases' registry when it holds none."""
    embedder = (embedder_from_env(os.environ) or LocalEmbedder()) if semantic else None
    memory = lossgate.open(
        store or f"sqlite:///{Path(folder) / 'benchmark.db'}", embedder=embedder, starter=False, reranker=reranker
    )
    if memory.admin.registry is None:
        memory.admin.load_predicates(str(Path(__file__).resolve().parents[1] / "fixtures" / "gate" / "predicates.toml"))
    return memory


def locomo_command(
    data: Path = typer.Option(
        ...,
        "--data",
        exists=True,
        dir_okay=False,
        readable=True,
        metavar="FILE.json",
        help="locomo10.json (snap-research/locomo, data/locomo10.json).",
    ),
    budget: int = BUDGET,
    conversations: int | None = typer.Option(None, "--conversations", min=1, help="Only the first N conversations."),
    store: str | None = STORE,
    json_out: Path | None = JSON_OUT,
    semantic: bool = SEMANTIC,
    by_period: bool = typer.Option(
        False,
        "--periods",
        help="Measure the published memory instead: sessions "
        "covered with their dates, token reduction, and where each date, amount and "
        "identifier of the evidence turns is found.",
    ),
    development: int = typer.Option(
        0,
        "--development",
        min=0,
        metavar="N",
        help="Also report the first N conversations (those a setting was chosen on) apart from the others (held out).",
    ),
    hierarchy: str = typer.Option(
        "auto",
        "--hierarchy",
        metavar="MODE",
        help="With --periods: when consolidation goes hierarchical (auto, always, never).",
    ),
    rerank: str | None = typer.Option(
        None,
        "--rerank",
        metavar="URL|FOLDER",
        help="Also recall with the "
        "reranking stage, by this reranker: a /v1/rerank server's API root (its model "
        "from --rerank-model or LOSSGATE_RERANKER_MODEL) or a local cross-encoder's "
        "folder.",
    ),
    rerank_model: str | None = typer.Option(
        None, "--rerank-model", metavar="NAME", help="The model the rerank server should use."
    ),
) -> None:
    """Recall every LoCoMo question at a fixed budget; report evidence recall, tokens and latency
    (with ``--periods``: the published memory's coverage, size and reachable atoms)."""
    with cli_errors(), tempfile.TemporaryDirectory() as tmp:
        config = ConsolidationConfig(hierarchy=HierarchyConfig(mode=hierarchy))  # type: ignore[arg-type]
        convs, digest = locomo.load(data)
        convs = convs[:conversations] if conversations else convs
        if digest != locomo.PUBLISHED_SHA256:
            err().print(f"note: {data} is not the published locomo10.json (sha256 {digest[:12]}...)", markup=False)
        reranker = reranker_option(rerank, rerank_model) if rerank is not None else None
        memory = evaluation_memory(store, tmp, semantic=semantic, reranker=reranker)
        try:
            if by_period:
                columns = (TextColumn("periods"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
                with Progress(*columns, console=err(), transient=True) as bar:
                    task = bar.add_task("questions", total=periods.question_total(convs))
                    doc = periods.measure(
                        memory,
                        convs,
                        budget=budget,
                        config=config,
                        sha256=digest,
                        progress=lambda n: bar.advance(task, n),
                    ).to_json()
            else:
                columns = (TextColumn("recall"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
                with Progress(*columns, console=err(), transient=True) as bar:
                    task = bar.add_task("questions", total=locomo.question_count(convs))
                    doc = locomo.evaluate(
                        memory,
                        convs,
                        budget=budget,
                        sha256=digest,
                        development=development,
                        progress=lambda n: bar.advance(task, n),
                    ).to_json()
        finally:
            memory.close()
    if json_out:
        json_out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    (_print_periods if by_period else _print)(doc)


def _print(doc: dict[str, Any]) -> None:
    sides = doc["sides"]
    cats = [*locomo.CATEGORIES.values(), "overall"]
    table = Table(
        title=f"LoCoMo evidence recall at {doc['budget_tokens']} tokens per recall "
        f"({doc['conversations']} conversations)"
    )
    table.add_column("method")
    for cat in cats:
        table.add_column(cat, justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("reduction", justify="right")
    table.add_column("p50 / p99 ms", justify="right")
    for name, figures in sides.items():
        overall = figures["overall"]
        latency = f"{overall['p50_ms']:.1f} / {overall['p99_ms']:.1f}" if name.startswith("lossgate") else "-"
        table.add_row(
            name,
            *(f"{figures[c]['evidence_recall']:.3f}" if c in figures else "-" for c in cats),
            f"{overall['tokens']:,.0f}",
            f"{overall['token_reduction']:.1%}",
            latency,
        )
    out().print(table)
    subsets = [
        c
        for c in ("dropped", "development overall", "development dropped", "held-out overall", "held-out dropped")
        if c in sides["lossgate"]
    ]
    if subsets:
        more = Table(
            title="Evidence recall with and without loss-aware ranking (dropped: questions with an "
            "evidence turn the published summary dropped an atom of)"
        )
        more.add_column("method")
        for cat in subsets:
            more.add_column(f"{cat} ({sides['lossgate'][cat]['questions']})", justify="right")
        for name in ("lossgate", "lossgate, loss-blind"):
            more.add_row(name, *(f"{sides[name][c]['evidence_recall']:.3f}" for c in subsets))
        out().print(more)
    if doc.get("embedder"):
        out().print(
            f"semantic: {doc['embedder']}, every turn embedded in {doc['embed_seconds']:.1f} s (off the recall path)",
            markup=False,
        )
    if doc.get("reranker"):
        out().print(
            f"rerank: {doc['reranker']}, the top of each first ranking reordered on the recall path "
            "(its latency is in the + rerank rows)",
            markup=False,
        )


def _print_periods(doc: dict[str, Any]) -> None:
    overall = doc["overall"]
    table = Table(
        title=f"LoCoMo published memory by period ({overall['conversations']} conversations; "
        f"recall at {doc['budget_tokens']} tokens)"
    )
    for name in (
        "conversation",
        "path",
        "sessions dated",
        "raw tokens",
        "published",
        "reduction",
        "atoms",
        "in digest",
        "by question",
        "by atom text",
        "unreachable",
    ):
        table.add_column(name, justify="left" if name in ("conversation", "path") else "right")

    def row(name: str, path: str, fig: dict[str, Any]) -> list[str]:
        atoms = fig["atoms"]
        return [
            name,
            path,
            f"{fig['sessions_covered']}/{fig['sessions']}",
            f"{fig['raw_tokens']:,}",
            f"{fig['published_tokens']:,}",
            f"{fig['reduction']:.1%}",
            str(atoms["atoms"]),
            str(atoms["digest"]),
            str(atoms["question"]),
            str(atoms["atom"]),
            str(atoms["unreachable"]),
        ]

    for conv in doc["conversations"]:
        table.add_row(*row(conv["sample_id"], conv["path"] or "-", conv))
    table.add_row(*row("overall", f"{overall['hierarchical']} hierarchical", overall), style="bold")
    out().print(table)
    kinds = Table(title="evidence atoms by kind (occurrences per question)")
    for name in ("kind", "atoms", "in digest", "by question", "by atom text", "unreachable"):
        kinds.add_column(name, justify="left" if name == "kind" else "right")
    for kind, t in doc["by_kind"].items():
        kinds.add_row(
            kind, str(t["atoms"]), str(t["digest"]), str(t["question"]), str(t["atom"]), str(t["unreachable"])
        )
    out().print(kinds)
    for conv in doc["conversations"]:
        for problem in conv["misaligned"]:
            out().print(f"{conv['sample_id']}: {problem}", markup=False)
        for session, title in conv["missing_sessions"].items():
            out().print(f"{conv['sample_id']}: session {session} {title} has no digest under its date", markup=False)
    met = doc["requirements"]
    out().print(
        "; ".join(f"{name.replace('_', ' ')}: {'yes' if ok else 'NO'}" for name, ok in met.items()), markup=False
    )
