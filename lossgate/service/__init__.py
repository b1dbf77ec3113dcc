"""The memory service: lossgate over HTTP, with per-tenant API keys (``lossgate serve``).

Install the ``service`` extra (``pip install 'lossgate[service]'``: FastAPI, uvicorn,
prometheus-client). :func:`create_app` makes the application; ``lossgate serve`` runs it
with uvicorn. The modules:

* :mod:`.app`: the factory, the middleware order, the error handlers;
* :mod:`.auth`: API keys (``Authorization: Bearer``), scopes, the tenant of a request;
* :mod:`.operations`: :class:`TenantMemory`, what the service does for one tenant,
  without HTTP (the MCP tools can call it too), and idempotent appends;
* :mod:`.models`: request and response models; :mod:`.errors`: the stable error codes;
* :mod:`.bodies`: body size, media type, exact JSON numbers; :mod:`.metrics`: Prometheus;
* :mod:`.routes`: the routes by area; :mod:`.openapi`: the committed OpenAPI document.
* :mod:`.mcp`: the MCP server (``lossgate mcp``): remember, recall, forget and inspect as
  tools, bound to one API key's tenant.

:func:`create_app` and :class:`TenantMemory` are imported on first use, so that
:mod:`.models` and :mod:`.errors` (which the HTTP client, :mod:`lossgate.client`, types its
calls with) load without FastAPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lossgate.service.app import create_app
    from lossgate.service.operations import TenantMemory

__all__ = ["create_app", "TenantMemory"]

_ON_FIRST_USE = {"create_app": "lossgate.service.app", "TenantMemory": "lossgate.service.operations"}


def __getattr__(name: str) -> Any:
    if name in _ON_FIRST_USE:
        value = getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lossgate.service' has no attribute {name!r}")
