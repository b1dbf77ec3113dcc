"""``lossgate mcp``: memory as MCP tools for agents (:mod:`lossgate.service.mcp`), over
stdio (an agent client starts the command) or streamable HTTP (``--transport http``).

The server is bound to one API key (``--key``, or ``LOSSGATE_MCP_KEY``: this edge reads
it): the key is authenticated once at start, and a malformed, unknown or revoked one
stops the command with one line and exit 2. Its tenant is the only tenant the tools reach.
"""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from lossgate.cli.app import EXIT_INPUT, CliState, cli_errors, fail
from lossgate.cli.serve import _memory

__all__ = ["register"]

_NEEDS = "the MCP server needs the service extra: pip install 'lossgate[service]'"


def mcp_command(
    ctx: typer.Context,
    db: Annotated[
        str | None, typer.Option("--db", metavar="URL", help="Database URL (default: the global --db).")
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            envvar="LOSSGATE_MCP_KEY",
            show_envvar=True,
            metavar="SECRET",
            show_default=False,
            help="The API key the server acts with (lossgate keys create): its tenant and scopes.",
        ),
    ] = None,
    transport: Annotated[
        Literal["stdio", "http"],
        typer.Option("--transport", help="stdio (an agent client starts this command) or streamable HTTP."),
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (http).")] = 8765,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn's log level (http).")] = "info",
) -> None:
    """Serve memory as MCP tools (remember, recall, forget, inspect, guard) for one API key's tenant;
    over HTTP at /mcp, each request sends the same key as Authorization: Bearer."""
    try:
        from lossgate.service.mcp import InvalidKey, create_server, http_app
    except ImportError:
        fail(_NEEDS)
    if not key:
        fail("an API key is required: --key SECRET or LOSSGATE_MCP_KEY (lossgate keys create)")
    state: CliState = ctx.find_root().obj
    with cli_errors():
        memory = _memory(db or state.db_url, migrate=True, create=False)  # its key must be in it already
    try:
        with cli_errors():
            try:
                server = create_server(memory, key)
            except InvalidKey as exc:
                fail(str(exc), EXIT_INPUT)
        if transport == "stdio":
            server.run("stdio")
            return
        import uvicorn

        uvicorn.run(http_app(server, key, host=host), host=host, port=port, log_level=log_level)
    finally:
        memory.close()


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command to ``app``."""
    app.command("mcp")(mcp_command)
