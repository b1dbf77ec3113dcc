"""``lossgate serve``: the memory service over HTTP (:mod:`lossgate.service`), run by uvicorn.

The database is migrated once, here; then one process serves (``--workers 1``, the
default), or uvicorn starts ``--workers N`` processes that each build the application with
:func:`app_from_environment` (this edge hands them the settings in the environment:
``LOSSGATE_SERVE_DB``, ``LOSSGATE_SERVE_MAX_BODY_BYTES``). Recall ranks by meaning too
when ``LOSSGATE_EMBEDDER`` names an embedder (see ``lossgate embed``), and reorders a query's
top hits when ``LOSSGATE_RERANKER`` names a reranker.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from lossgate.cli.app import CliState, cli_errors, fail

if TYPE_CHECKING:
    from fastapi import FastAPI

    from lossgate.api.memory import Memory

__all__ = ["register", "app_from_environment"]

_NEEDS = "the memory service needs its extra: pip install 'lossgate[service]'"


def _memory(url: str, *, migrate: bool, create: bool = True) -> Memory:
    import lossgate
    from lossgate.consolidate.factory import load_compressor
    from lossgate.semantic import embedder_from_env, reranker_from_env

    return lossgate.open(
        url,
        migrate=migrate,
        embedder=embedder_from_env(os.environ),
        compressors=lambda spec: load_compressor(spec, environ=os.environ),
        create=create,
        starter=False,  # the service uses the registry `lossgate init` stored
        reranker=reranker_from_env(os.environ),
    )


def app_from_environment() -> FastAPI:
    """The application of one worker process of ``lossgate serve --workers N`` (a uvicorn
    factory): the database and limits come from the environment the command set."""
    from lossgate.service import create_app

    memory = _memory(os.environ["LOSSGATE_SERVE_DB"], migrate=False)
    return create_app(memory, max_body_bytes=int(os.environ["LOSSGATE_SERVE_MAX_BODY_BYTES"]), close_memory=True)


def serve(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db", metavar="URL", help="Database URL (default: the global --db); a SQLite file is created if missing."
        ),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8080,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Processes serving (each its own pool).")] = 1,
    max_body_bytes: Annotated[int, typer.Option("--max-body-bytes", min=1, help="Largest request body.")] = 1_048_576,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn's log level.")] = "info",
) -> None:
    """Serve memory over HTTP: per-tenant API keys (lossgate keys create), OpenAPI at
    /openapi.json, health at /healthz, Prometheus metrics at /metrics."""
    try:
        import uvicorn

        from lossgate.service import create_app
    except ImportError:
        fail(_NEEDS)
    state: CliState = ctx.find_root().obj
    url = db or state.db_url
    with cli_errors():
        memory = _memory(url, migrate=True)  # migrate once, before any worker starts
    if workers == 1:
        app = create_app(memory, max_body_bytes=max_body_bytes, close_memory=True)
        uvicorn.run(app, host=host, port=port, log_level=log_level)
        return
    memory.close()
    os.environ["LOSSGATE_SERVE_DB"] = url
    os.environ["LOSSGATE_SERVE_MAX_BODY_BYTES"] = str(max_body_bytes)
    uvicorn.run(
        "lossgate.cli.serve:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
    )


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to ``app``."""
    app.command("serve")(serve)
