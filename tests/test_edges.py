"""Configuration comes from the environment only at the edges.

The CLI and the worker entry point read the environment; the library takes what they
read as arguments (``load_compressor(spec, environ=os.environ)``, ``ChatConfig.from_env(environ)``).
So do the judge's and the embedder's ``from_env`` helpers (``ModelJudge.from_env(os.environ)``,
``embedder_from_env(os.environ)``). Read from the source with :mod:`ast`: any other
``os.environ`` or ``os.getenv`` under ``lossgate/`` fails this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lossgate

PACKAGE = Path(lossgate.__file__).resolve().parent

# (module, enclosing function) allowed to touch the environment; "*" is any function.
EDGES = {
    ("lossgate.cli", "*"),  # every command: the CLI is an edge
    ("lossgate.ops.worker", "_child"),  # the worker process's entry point
    ("lossgate.semantic.embedders", "hub_offline"),  # local models set HF_HUB_OFFLINE: writes, never reads
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _touches_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
        return node.attr in ("environ", "getenv", "putenv", "environb")
    if isinstance(node, ast.ImportFrom) and node.module == "os":
        return any(a.name in ("environ", "getenv") for a in node.names)
    return False


def environment_reads(module: str, source: str) -> list[tuple[str, str, int]]:
    """(module, enclosing function or "<module>", line) of each use of the environment."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if _touches_environment(child):
                found.append((module, function, child.lineno))  # type: ignore[attr-defined]
            visit(child, inner)

    visit(ast.parse(source), "<module>")
    return found


def _allowed(module: str, function: str) -> bool:
    return any((module == m or module.startswith(m + ".")) and f in ("*", function) for m, f in EDGES)


def test_only_the_edges_read_the_environment():
    reads = [
        r
        for path in sorted(PACKAGE.rglob("*.py"))
        for r in environment_reads(_module(path), path.read_text(encoding="utf-8"))
    ]
    assert any(m.startswith("lossgate.cli") for m, _, _ in reads), "the walk sees the CLI's reads"
    outside = [f"{m}:{line} (in {f})" for m, f, line in reads if not _allowed(m, f)]
    assert not outside, "the environment is read outside the edges: " + ", ".join(outside)


def test_a_library_read_of_the_environment_is_caught():
    planted = "import os\n\nclass ChatConfig:\n    def settings(self):\n        return os.environ.get('X_URL')\n"
    reads = environment_reads("lossgate.consolidate.chat", planted)
    assert reads == [("lossgate.consolidate.chat", "settings", 5)]
    assert not _allowed("lossgate.consolidate.chat", "settings")
    assert not _allowed("lossgate.judge.model_judge", "settings") and _allowed("lossgate.cli.consolidate", "settings")
