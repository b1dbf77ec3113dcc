"""The test suite's own layout: helpers shared between test modules live in ``tests/support``.

A test module that imports another test module runs the imported module's tests' setup
twice and ties the two files together (moving or renaming one breaks the other); a module
that imports a conftest gets a second copy of it, with its hooks and module state, beside
the one pytest loaded. Shared helpers belong in ``tests/support``, whose modules are
imported like any library.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"


def _package(path: Path) -> list[str]:
    """The dotted package ``path`` is in, as the import system names it from the repository root."""
    return ["tests", *path.relative_to(TESTS).parent.parts]


def _imported(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """Every module the file ``path`` imports (relative imports resolved), with its line; for
    ``from X import name``, ``X.name`` too, since the name may be a module. ``source`` stands
    for the file's text when given."""
    text = path.read_text(encoding="utf-8") if source is None else source
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = _package(path)
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _is_test_or_conftest(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def test_no_module_under_tests_imports_a_test_module_or_a_conftest():
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}: imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, module in _imported(path)
        if _is_test_or_conftest(module)
    ]
    assert offenders == [], "move what they share into tests/support:\n" + "\n".join(offenders)


def test_the_check_sees_absolute_relative_and_module_imports():
    # the walk above must not pass for want of seeing an import: each form is caught here
    cases = {
        "from tests.conformance.test_tail import turns": True,
        "from .conftest import Page": True,
        "from . import conftest": True,
        "import tests.service.conftest": True,
        "from tests.support.world import seed_world": False,
        "from .build_cases import FIXTURES": False,
    }
    here = TESTS / "ui" / "probe.py"
    for source, bad in cases.items():
        modules = [m for _, m in _imported(here, source)]
        assert any(map(_is_test_or_conftest, modules)) is bad, (source, modules)


def test_every_support_module_says_what_it_holds():
    undocumented = [
        str(p.relative_to(TESTS.parent))
        for p in sorted(SUPPORT.glob("*.py"))
        if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert SUPPORT.is_dir() and undocumented == []
