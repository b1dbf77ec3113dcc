"""Every command's help at 80 columns: nothing cut, nothing wider than the terminal.

Rich lays an options panel out as a table; a word longer than its column is cut and ends in
``…`` (``lossgate.testing.compres…``), or is folded over two lines. So each help page must fit
80 columns, hold no ``…``, and show every option name and every word of its help text whole."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from lossgate.cli import app

WIDTH = 80
runner = CliRunner(env={"COLUMNS": str(WIDTH), "NO_COLOR": "1", "FORCE_COLOR": None, "LOSSGATE_DB": None})


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def _words(text: str) -> set[str]:
    """The words of a rendered page, the panels' borders left out."""
    return set(text.replace("│", " ").split())


def _problems(page: str, command: Any) -> list[str]:
    found = [f"{len(line)} columns: {line!r}" for line in page.splitlines() if len(line) > WIDTH]
    found += [f"cut: {line.strip()!r}" for line in page.splitlines() if "…" in line]
    shown = _words(page)
    own = inspect.cleandoc(command.help or "").split("\f")[0]
    texts = [own] + [getattr(p, "help", None) or "" for p in command.params]
    names = [n for p in command.params for n in (*p.opts, *p.secondary_opts) if n.startswith("-")]
    found += [f"option {n} not shown whole" for n in names if n not in shown]
    found += [f"word {w!r} not shown whole" for text in texts for w in text.split() if w not in shown]
    return found


def test_the_walk_reaches_every_command_and_group() -> None:
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"", "consolidate", "worker", "eval", "eval daily", "rollout set", "keys create"} <= paths
    assert len(paths) > 60


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "lossgate")
def test_help_fits_80_columns_and_cuts_nothing(path: tuple[str, ...]) -> None:
    command = dict(COMMANDS)[path]
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert _problems(result.output, command) == [], result.output


def test_the_console_script_help_at_80_columns_cuts_nothing() -> None:
    env = {**os.environ, "COLUMNS": str(WIDTH), "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run(
        [sys.executable, "-m", "lossgate", "--help"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert _problems(done.stdout, typer.main.get_command(app)) == [], done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) == WIDTH  # rich drew it at 80 columns


def _command_list(page: str) -> list[str]:
    """The inside of a page's Commands panel, one string per line."""
    lines = page.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("╭─ Commands"))
    bottom = next(i for i in range(top, len(lines)) if lines[i].startswith("╰"))
    return [line[2:-2] for line in lines[top + 1 : bottom]]


@pytest.mark.parametrize(
    "path", [p for p, c in COMMANDS if getattr(c, "commands", None)], ids=lambda p: " ".join(p) or "lossgate"
)
def test_a_command_list_flows_each_summary_to_the_width(path: tuple[str, ...]) -> None:
    rows = _command_list(runner.invoke(app, [*path, "--help"]).output)
    first = rows[0]
    start = first.index(first.split()[1], len(first.split()[0]))  # where the summaries begin
    width = len(first) - start
    for line, following in zip(rows, rows[1:], strict=False):
        if following[:start].strip():
            continue  # the next command's summary begins
        text, word = line[start:].rstrip(), following[start:].split()[0]
        # a summary line ends where the column does, not where the source broke its text
        assert len(text) + 1 + len(word) > width, (line, following)
