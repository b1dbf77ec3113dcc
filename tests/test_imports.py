"""The package's import graph has no cycle, and its public names all resolve.

The graph is read from the source with :mod:`ast`, never by importing it. Its nodes are
the modules under ``lossgate/`` (a package is its ``__init__``). **Every import statement
counts, wherever it stands**: at module level; inside a function, because a deferred
import is still a dependency, and deferring one to break a cycle only hides the cycle
until the day someone moves it up; and under ``if TYPE_CHECKING:``, because a type-only
import is still a dependency between layers. An edge goes to the module an import names
(``from lossgate.gate import fence`` names ``lossgate.gate.fence``; ``from lossgate.gate
import check`` names ``lossgate.gate``), not to the packages above it: Python runs a
package's ``__init__`` first, but a package re-exporting its own modules is not a cycle.
Imports computed at run time (``importlib.import_module(name)``) are not seen. lossgate uses
them in two places: the names :mod:`lossgate` exports on first use, which it repeats under
``TYPE_CHECKING`` so that the graph has them; and a compressor a user names by its spec
(``module:Class``, :func:`lossgate.consolidate.factory.load_compressor`), which loads that
user's code, whatever module it is (``lossgate.testing.compressors`` holds the test doubles).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import lossgate

PACKAGE = Path(lossgate.__file__).resolve().parent


def modules(package: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of ``package`` (a directory)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that the file of module ``name`` imports, anywhere in it."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against this module's package
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in known:
                    found.add(submodule)
                elif source in known:
                    found.add(source)
    found.discard(name)
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) through each strongly connected component that has one
    (Tarjan's algorithm, iterative: no recursion limit on a deep package)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth first, inside it)."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    return paths[node] + [start]
                if child not in paths:
                    paths[child] = paths[node] + [child]
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")  # pragma: no cover


def test_lossgate_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "lossgate.consolidate.compressor" in graph and graph["lossgate"], "the walk found the package"
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / "pkg"


@pytest.mark.parametrize(
    "how, files, expected",
    [
        (
            "module level",
            {"__init__.py": "", "a.py": "from pkg.b import x\n", "b.py": "import pkg.a\nx = 1\n"},
            ["pkg.a", "pkg.b", "pkg.a"],
        ),
        (
            "inside a function",
            {
                "__init__.py": "",
                "a.py": "from pkg import b\n",
                "b.py": "def f():\n    from pkg.a import y\n    return y\n",
            },
            ["pkg.a", "pkg.b", "pkg.a"],
        ),
        (
            "under TYPE_CHECKING, relative",
            {
                "__init__.py": "",
                "sub/__init__.py": "from .c import C\n",
                "sub/c.py": "from ..a import A\nclass C: ...\n",
                "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import C\nclass A: ...\n",
            },
            ["pkg.a", "pkg.sub", "pkg.sub.c", "pkg.a"],
        ),
    ],
)
def test_a_planted_cycle_is_found(tmp_path, how, files, expected):
    assert cycles(import_graph(_package(tmp_path, files))) == [expected], how


def test_a_package_importing_its_own_modules_is_not_a_cycle(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "from pkg.a import A\nfrom pkg import b\n",
            "a.py": "from pkg.b import B\nclass A(B): ...\n",  # runs pkg/__init__ first: not an edge
            "b.py": "import json\nclass B: ...\n",
        },
    )
    graph = import_graph(package)
    assert graph == {"pkg": {"pkg.a", "pkg.b"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}
    assert cycles(graph) == []


def test_every_public_name_resolves():
    missing = [name for name in lossgate.__all__ if not hasattr(lossgate, name)]
    assert not missing
    from lossgate import Attempt, ConsolidationConfig, Worker  # noqa: F401 - imported by name, as a user would

    assert lossgate.Worker is __import__("lossgate.ops.worker", fromlist=["Worker"]).Worker


def test_importing_lossgate_leaves_consolidation_and_workers_for_first_use():
    code = (
        "import sys, lossgate; heavy = [m for m in ('lossgate.consolidate.pipeline', 'lossgate.ops.worker', "
        "'lossgate.gate', 'httpx') if m in sys.modules]; print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    assert done.stdout.strip() == "[]"


# The packages of lossgate, lowest first. A package may import only from the layers below
# its own: never from one above it, nor from another package of its own layer. The records
# and the rules every layer speaks in are at the bottom; the Python facade, the operator
# tools and the interfaces at the top.
LAYERS: list[set[str]] = [
    {"errors"},  # the exception tree
    {"runtime"},  # process-wide caches, deadlines, one HTTP call
    {"model"},  # records, values, canonical hashing, limits, the registry
    {"store", "gate"},  # the storage protocol and its engines; the gate
    {"judge", "semantic", "lineage"},  # the model judge; embeddings; lineage and the rebuild queue
    {"ledger", "publication", "guard"},  # the fact lifecycle; the switch; the response guard
    {"policy", "extract"},  # rollout and quarantine; fact extraction
    {"consolidate"},  # consolidation: selection, compressors, hierarchy, re-gate
    {"recall"},  # the read side and its attestation
    {"api"},  # the Python facade: Memory, one tenant's view, ingest
    {"ops", "integrations", "testing"},  # operator tools and workers; agent frameworks; test doubles
    {"__init__"},  # the package's public names
    {"service", "evaluation"},  # the HTTP service and MCP; the evaluation lanes
    {"cli", "client"},  # the command line; the service's Python client
    {"__main__"},  # python -m lossgate
]


def package_of(module: str) -> str:
    """The top-level unit a module belongs to: ``lossgate.model.records`` -> ``model``,
    ``lossgate.errors`` -> ``errors``, ``lossgate`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(graph: dict[str, set[str]], layers: list[set[str]]) -> list[str]:
    """Each import from one package to another that does not go strictly down ``layers``,
    and each package missing from them, as a readable line."""
    rank = {name: level for level, names in enumerate(layers) for name in names}
    out = []
    for module in sorted(graph):
        source = package_of(module)
        if source not in rank:
            out.append(f"{module}: package {source!r} has no layer")
            continue
        for target in sorted(graph[module]):
            dest = package_of(target)
            if dest == source or dest not in rank:
                continue  # inside one package (its cycles: the test above); unranked: reported once
            if rank[dest] >= rank[source]:
                how = "up" if rank[dest] > rank[source] else "sideways"
                out.append(
                    f"{module} -> {target}: {how}, {source} (layer {rank[source]}) to {dest} (layer {rank[dest]})"
                )
    return out


def test_imports_run_down_the_layers_only():
    graph = import_graph(PACKAGE)
    assert {package_of(m) for m in graph} >= {"model", "store", "gate", "consolidate", "recall", "api", "cli"}
    problems = layer_violations(graph, LAYERS)
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def test_an_upward_or_sideways_import_is_found(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "model/__init__.py": "",
            "model/records.py": "def f():\n    from pkg.store.core import S\n",
            "store/__init__.py": "",
            "store/core.py": "from pkg.model.records import f\nclass S: ...\n",
            "gate/__init__.py": "from pkg.store import core\n",
            "extra.py": "",
        },
    )
    problems = layer_violations(import_graph(package), [{"model"}, {"store", "gate"}, {"__init__"}])
    assert problems == [
        "pkg.extra: package 'extra' has no layer",
        "pkg.gate -> pkg.store.core: sideways, gate (layer 1) to store (layer 1)",
        "pkg.model.records -> pkg.store.core: up, model (layer 0) to store (layer 1)",
    ]


# Packages that mirror another part of lossgate, one module for each thing they serve: the
# CLI's commands, the service's routes and the client, and the store's tiers (protocol,
# shared code, each engine, the shipped contract). A module name repeats only across these.
MIRRORS = ("cli", "service", "client", "store", "testing/store_contract")


def test_a_module_name_repeats_only_where_a_package_mirrors_another():
    """``extract/model_extractor.py`` and ``judge/model_judge.py``, not two ``llm.py``: outside
    the mirrors, a module's file name says what it holds wherever it is read alone (a
    traceback, a search result); ``cli/retention.py`` beside ``ledger/retention.py`` is the
    command for that module, ``sqlite/derived.py`` the engine's derived tier."""
    places: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            places.setdefault(path.name, []).append(path.relative_to(PACKAGE).parent.as_posix())
    repeated = {
        name: sorted(folders)
        for name, folders in places.items()
        if sum(not any(f == m or f.startswith(f"{m}/") for m in MIRRORS) for f in folders) > 1
    }
    assert repeated == {}, f"the same module name in two packages that mirror nothing: {repeated}"
