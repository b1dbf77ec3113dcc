"""Install from source: the wheel built from this tree, installed with no extra into a fresh
virtual environment, runs the README's quick start verbatim from an empty folder.

The build and the install reach the package index for setuptools and the dependencies only,
through pip's cache (warm after the first run). The wheel is built from a copy of what it is
made of (``pyproject.toml``, ``README.md``, ``lossgate/``), so a file the package needs but
does not declare as package data is missing here as it would be for a user.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel and installs it in a fresh virtual environment

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- quick start", "<!-- /quick start -->"
# Not in a default install: an extra brings each of them.
EXTRAS_ONLY = {
    "torch",
    "numpy",
    "sentence-transformers",
    "fastapi",
    "uvicorn",
    "mcp",
    "psycopg",
    "matplotlib",
    "rank-bm25",
    "langgraph",
    "openai-agents",
    "pydantic-ai-slim",
}
# The one line of the quick start's output that depends on when it runs: the events' day.
DAY = re.compile(r"\[\d{4}-\d{2}-\d{2}\]")


def quick_start() -> tuple[str, str]:
    """The README's quick start: the code of its ``python`` block and the output its ``text`` block shows."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(START) : readme.index(END)]
    blocks = dict(re.findall(r"```(python|text)\n(.*?)```", section, re.DOTALL))
    assert set(blocks) == {"python", "text"}, "the quick start holds one python block and one text block"
    return blocks["python"], blocks["text"]


def _run(*args: str | Path, cwd: Path | None = None, stdin: str | None = None) -> str:
    # Nothing of this checkout may leak in: no PYTHONPATH (tests run with the tree on it), no
    # active virtual environment.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, input=stdin, capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, f"{args[:4]} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_the_wheel_installs_with_no_extra_and_runs_the_readme_quick_start(tmp_path: Path) -> None:
    code, shown = quick_start()
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", *(p.name for p in ROOT.glob("LICEN[CS]E*"))):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "lossgate", source / "lossgate", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", tmp_path / "dist", source)
    (wheel,) = (tmp_path / "dist").glob("lossgate-*.whl")

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    started = time.monotonic()
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", wheel)
    installed = time.monotonic()
    names = _run(
        python,
        "-c",
        "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))",
    ).split()
    assert "lossgate" in names and not EXTRAS_ONLY & set(names), sorted(EXTRAS_ONLY & set(names))

    empty = tmp_path / "empty"
    empty.mkdir()
    where = _run(python, "-c", "import lossgate; print(lossgate.__file__)", cwd=empty).strip()
    assert Path(where).is_relative_to(venv), where  # the installed package, not this checkout
    printed = _run(python, "-", cwd=empty, stdin=code)
    recalled = time.monotonic()
    assert DAY.sub("[day]", printed) == DAY.sub("[day]", shown), printed
    assert (empty / "memory.db").is_file()
    init = _run(venv / "bin" / "lossgate", "--db", "sqlite:///cli.db", "init", cwd=empty)
    assert "predicate registry version 1 (34 predicates, the starter registry)" in init
    print(
        f"\ninstall {installed - started:.1f} s, quick start {recalled - installed:.1f} s, "
        f"site-packages {_megabytes(venv / 'lib')} MB in {len(names)} distributions"
    )


def _megabytes(path: Path) -> int:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6)
