"""The CLI reference, written from the command tree itself (a mkdocs hook).

``docs/reference/cli.md`` holds the marker ``<!-- cli-reference -->``; at build time it is
replaced by one section per command of ``lossgate`` (``typer.main.get_command`` of the typer
app): its help, its usage line and a table of its arguments and options with their help,
defaults and environment variables, as ``--help`` prints them. Nothing is written by hand, so
a command or an option added to the CLI is in the manual at the next build; ``tests/test_docs.py``
checks that every command and every option is in what :func:`markdown` returns.

The hook also reads the API reference's docstrings (reST roles such as ``:class:`X```, which
mkdocstrings prints as written) as plain code: ``:class:`~lossgate.Memory``` reads ``Memory``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"
_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const|ref):(<code>)~?(?:[\w.]+\.)?")


def commands() -> Iterator[tuple[str, Any, Any]]:
    """Every command of the tree, depth first in the order ``--help`` lists them: its full
    name (``lossgate eval locomo``), the command and its click context."""
    import typer
    from typer import _click as click  # typer's own click, which its commands are built on

    from lossgate.cli import app

    def walk(command: Any, path: str, parent: Any) -> Iterator[tuple[str, Any, Any]]:
        ctx = click.Context(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
        yield path, command, ctx
        for name in getattr(command, "list_commands", lambda _ctx: [])(ctx):
            yield from walk(command.get_command(ctx, name), f"{path} {name}", ctx)

    yield from walk(typer.main.get_command(app), "lossgate", None)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _section(path: str, command: Any, ctx: Any) -> str:
    level = "#" * min(2 + path.count(" "), 4)
    lines = [f"{level} {path}", ""]
    help_text = inspect.cleandoc(command.help or "").replace("\b\n", "")
    if help_text:
        lines += [help_text, ""]
    lines += ["```console", f"$ {path} {' '.join(command.collect_usage_pieces(ctx))}", "```", ""]
    rows = []
    for param in command.get_params(ctx):
        if "--help" in getattr(param, "opts", ()):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        name, text = record
        rows.append(f"| `{_cell(name)}` | {param.param_type_name} | {_cell(text)} |")
    if rows:
        lines += ["| name | kind | help |", "| --- | --- | --- |", *rows, ""]
    return "\n".join(lines)


def markdown() -> str:
    """The reference: one section per command, the root first."""
    return "\n".join(_section(path, command, ctx) for path, command, ctx in commands())


def on_page_markdown(text: str, page: Any, **_: Any) -> str:
    return text.replace(MARKER, markdown()) if MARKER in text else text


def on_page_content(html: str, page: Any, **_: Any) -> str:
    return _ROLE.sub(r"\1", html) if page.file.src_uri.startswith("reference/") else html
