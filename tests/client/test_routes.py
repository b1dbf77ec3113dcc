"""Every route of the service has its method on both clients, with the same parameters, and
the client loads without the service's own dependencies."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from fastapi.routing import APIRoute

from lossgate.client import AsyncClient, Client, calls
from lossgate.client.calls import ROUTES
from lossgate.service.app import routes
from lossgate.service.openapi import document
from tests.support import ROOT


def _walk(items: list[Any]) -> Iterator[APIRoute]:
    """The application's routes, through the routers it includes (FastAPI nests them as
    included routers; older versions list them flat)."""
    for item in items:
        if isinstance(item, APIRoute):
            yield item
        elif hasattr(item, "original_router"):
            yield from _walk(item.original_router.routes)
        elif hasattr(item, "routes"):
            yield from _walk(item.routes)


def _parameters(function: Any) -> list[tuple[str, Any, Any, Any]]:
    params = list(inspect.signature(function).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [(p.name, p.kind, p.default, p.annotation) for p in params]


def test_every_route_of_the_service_has_a_method_on_both_clients() -> None:
    app = list(_walk(routes().routes))
    served = {(r.name, method, r.path) for r in app if r.include_in_schema for method in r.methods}
    assert {(method, path) for _, method, path in served} == {
        (method.upper(), path) for path, ops in document()["paths"].items() for method in ops
    }, "the walk found them"
    # the routes left out of the OpenAPI document are the inspection page's HTML, for a browser
    assert {r.path for r in app if not r.include_in_schema} and all(
        r.path.startswith("/ui") for r in app if not r.include_in_schema
    )

    mine = {(name, route.method, route.path) for name, route in ROUTES.items()}
    assert served - mine == set(), "routes the client has no call for"
    assert mine - served == set(), "calls of the client the service has no route for"
    for name in ROUTES:
        blocking, awaited, builder = getattr(Client, name, None), getattr(AsyncClient, name, None), getattr(calls, name)
        assert callable(blocking) and not inspect.iscoroutinefunction(blocking), f"Client.{name}"
        assert inspect.iscoroutinefunction(awaited), f"AsyncClient.{name}"
        assert _parameters(blocking) == _parameters(awaited) == _parameters(builder), name
        returned = inspect.signature(builder).return_annotation
        assert (
            inspect.signature(blocking).return_annotation
            == inspect.signature(awaited).return_annotation
            == returned.removeprefix("Call[").removesuffix("]")
        ), name
    public = {n for n, v in vars(Client).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert public - set(ROUTES) == {"close", "request"}


def test_the_client_loads_without_fastapi_or_uvicorn() -> None:
    code = (
        "import sys\n"
        "for name in ('fastapi', 'starlette', 'uvicorn', 'prometheus_client', 'mcp'):\n"
        "    sys.modules[name] = None  # importing it raises ImportError\n"
        "from lossgate.client import AsyncClient, Client\n"
        "Client('http://127.0.0.1:9').close()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
