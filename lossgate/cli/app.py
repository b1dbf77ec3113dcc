"""The typer application, the global ``--db`` option and the one error-mapping choke point.

Every command opens memory through :func:`open_memory`, which maps lossgate's errors to
exit codes once, for all commands:

* :class:`~lossgate.errors.StoreError` (the database failed): ``error: ...`` on stderr, exit 1;
* any other :class:`~lossgate.errors.LossgateError` (the caller's input is wrong, or names
  something that does not exist): ``error: ...`` on stderr, exit 2;
* usage errors (unknown option, missing argument, bad value): ``error: ...`` on stderr,
  exit 2, as click does, but in one line instead of click's usage and box.

Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from typer.core import TyperGroup

import lossgate
from lossgate.api.memory import Memory
from lossgate.errors import LossgateError, StoreError
from lossgate.store import DEFAULT_URL

if TYPE_CHECKING:
    from lossgate.semantic.rerankers import Reranker

__all__ = ["app", "CliState", "open_memory", "cli_errors", "fail", "out", "err"]

EXIT_STORE = 1
EXIT_INPUT = 2


class _Commands(TyperGroup):
    """The root command: whatever click refuses while parsing a command line, or a command
    raises as ``typer.BadParameter``, is one line (:func:`_usage_errors`). Built, it gives
    every command of its tree a one-line summary (:func:`_one_line_summaries`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _one_line_summaries(self)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with _usage_errors():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with _usage_errors():
            return super().invoke(ctx)


def _one_line_summaries(group: Any) -> None:
    """Give each command under ``group`` its help's first paragraph, on one line, as the
    summary a command list shows: rich help keeps a docstring's line breaks there, so a list
    at 80 columns would break each summary where the source does, not where the terminal ends."""
    for command in getattr(group, "commands", {}).values():
        if command.short_help is None and command.help:
            command.short_help = " ".join(inspect.cleandoc(command.help).split("\n\n")[0].split())
        _one_line_summaries(command)


app = typer.Typer(
    name="lossgate",
    cls=_Commands,
    help="Agent memory that compresses without forgetting: raw events, a typed fact ledger, a loss gate.",
    no_args_is_help=True,
    add_completion=False,
    # Expected errors are mapped to one line below; a traceback means a bug, so show it plainly.
    pretty_exceptions_enable=False,
)


@dataclass(frozen=True)
class CliState:
    """What the root callback stores in the typer context for every command."""

    db_url: str


@app.callback()
def _root(
    ctx: typer.Context,
    db: str = typer.Option(
        DEFAULT_URL,
        "--db",
        envvar="LOSSGATE_DB",
        show_envvar=True,
        metavar="URL",
        help="Database URL: sqlite:///PATH.db, or postgresql://USER@HOST/DB (it gives up connecting after 5 s "
        "unless ?connect_timeout=SECONDS says otherwise). A SQLite file that does not exist is created by the "
        "commands that set one up (init, ingest, predicates load, predicates extend, keys create, serve, worker); "
        "the others refuse it.",
    ),
) -> None:
    ctx.obj = CliState(db_url=db)


def out() -> Console:
    """A console on stdout (built per call: tests swap ``sys.stdout``).

    When stdout is not a terminal and ``COLUMNS`` is unset, tables get a wide fixed
    width, so piped output is not wrapped at rich's default of 80 columns.
    """
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(file=sys.stdout, width=200 if wide else None, highlight=False)


def err() -> Console:
    """A console on stderr, for progress and notes."""
    return Console(file=sys.stderr, highlight=False)


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print ``error: <message>`` as one line on stderr and exit with ``code``."""
    one_line = " ".join(str(message).split())
    typer.echo(f"error: {one_line}", err=True)
    raise typer.Exit(code)


def json_object_file(path: str, *, what: str = "an action") -> dict[str, Any]:
    """The JSON object in the file at ``path`` (``-``: standard input), read as every boundary
    of lossgate reads JSON (:func:`lossgate.model.limits.read_json`); exit 2 with one line for
    anything else."""
    from pathlib import Path

    from lossgate.model.limits import read_json

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}")
    try:
        value = read_json(text)
    except (ValueError, RecursionError, LossgateError) as exc:  # LossgateError: a key given twice
        fail(f"{path}: not a JSON document ({' '.join(str(exc).split())[:200]})")
    if not isinstance(value, dict):
        fail(f"{path}: {what} is a JSON object, not {type(value).__name__}")
    return value


@contextmanager
def _usage_errors() -> Iterator[None]:
    """Click's errors (usage errors: exit 2) as one line, with the command to ask for help."""
    try:
        yield
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            raise  # `lossgate` alone: the help
        ctx = getattr(exc, "ctx", None)
        fail(
            f"{exc.format_message().rstrip('.')} (see {ctx.command_path if ctx else 'lossgate'} --help)", exc.exit_code
        )


@contextmanager
def cli_errors() -> Iterator[None]:
    """Map lossgate errors to a one-line message and an exit code (1 for the store, else 2)."""
    try:
        yield
    except StoreError as exc:
        fail(str(exc), EXIT_STORE)
    except LossgateError as exc:
        fail(str(exc), EXIT_INPUT)


def reranker_option(spec: str | None, model: str | None) -> Reranker | None:
    """The reranker ``--rerank SPEC`` and ``--rerank-model NAME`` name, read as
    ``LOSSGATE_RERANKER`` and ``LOSSGATE_RERANKER_MODEL`` are (each flag in place of its
    variable; the other ``LOSSGATE_RERANKER_*`` settings still apply), or ``None`` without
    either. A bad one is a :class:`~lossgate.errors.ConfigError`."""
    from lossgate.semantic.rerankers import reranker_from_env

    environ = dict(os.environ)
    if spec is not None:
        environ["LOSSGATE_RERANKER"] = spec
    if model is not None:
        environ["LOSSGATE_RERANKER_MODEL"] = model
    flag_model = model is not None or (spec is not None and not environ.get("LOSSGATE_RERANKER_MODEL"))
    names = (
        "--rerank" if spec is not None else "LOSSGATE_RERANKER",
        "--rerank-model" if flag_model else "LOSSGATE_RERANKER_MODEL",
    )
    return reranker_from_env(environ, names=names)


@contextmanager
def open_memory(
    ctx: typer.Context, *, semantic: bool = False, create: bool = False, starter: bool = False
) -> Iterator[Memory]:
    """Open the memory named by ``--db`` (creating or upgrading its schema), close it after.
    With ``semantic``, it carries the embedder ``LOSSGATE_EMBEDDER`` names, if any. A SQLite
    file that does not exist is created only with ``create`` (the commands that set up a
    database); without, it is an error naming the path, not a new empty database. With
    ``starter``, the starter registry is stored where a registry is needed and none is
    (:func:`lossgate.open`); the commands that take none leave that to ``lossgate init``.

    Errors raised while opening or inside the block are mapped by :func:`cli_errors`, once:
    the connection pool's own warnings (each failed attempt to connect) are not printed, nor
    the traceback of a failed consolidation (the command prints the attempt's one line).
    """
    state: CliState = ctx.find_root().obj
    if not logging.getLogger("psycopg.pool").handlers:
        logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())
    crashes = logging.getLogger("lossgate.crashes")  # a command says a failed attempt in one line
    if not crashes.handlers:
        crashes.addHandler(logging.NullHandler())
        crashes.propagate = False
    with cli_errors():
        embedder = None
        if semantic:
            from lossgate.semantic import embedder_from_env

            embedder = embedder_from_env(os.environ)
        from lossgate.consolidate.factory import load_compressor

        memory = lossgate.open(
            state.db_url,
            create=create,
            embedder=embedder,
            starter=starter,
            compressors=lambda spec: load_compressor(spec, environ=os.environ),
        )
        try:
            yield memory
        finally:
            memory.close()
