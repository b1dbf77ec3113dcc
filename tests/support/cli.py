"""The CLI as the tests drive it: the gate's commands on an app of their own (:func:`run`),
and what a refused command prints (:func:`one_line_error`: exit status 2 and one line on
stderr, no traceback)."""

from __future__ import annotations

import typer
from typer.testing import CliRunner, Result

from lossgate.cli.gate import register


def one_line_error(result: Result, *fragments: str) -> str:
    """The one line on stderr of a command that exited 2, holding every one of ``fragments``."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# The gate's command group, as ``lossgate`` registers it, on an app of its own: no database,
# no colours, a wide terminal.
_RUNNER = CliRunner(env={"FORCE_COLOR": None, "COLUMNS": "200", "NO_COLOR": "1"})


def _gate_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)

    @app.callback()
    def _root() -> None:  # a group, so that commands keep their names
        pass

    register(app)
    return app


_GATE_APP = _gate_app()


def run(*args: str) -> Result:
    """``lossgate ARGS...`` for the gate's commands (``check``, ``eval mutations``, ``eval narratives``)."""
    return _RUNNER.invoke(_GATE_APP, list(args))
