"""A client of the memory service (``lossgate serve``): :class:`Client` and
:class:`AsyncClient`, over httpx.

One method per route of the service, named as the service names the route (``append``,
``recall``, ``verify_recall``), typed with the service's own models
(:mod:`lossgate.service.models`: requests are built from them, answers read into them).
Errors are lossgate's exceptions (:mod:`.errors`); a 503 is retried (:mod:`.retry`). Needs
httpx and pydantic only, not the ``service`` extra. The modules:

* :mod:`.calls`: every route as a call (method, path, body, how its answer is read);
* :mod:`.errors`: the service's error codes read back into lossgate's exceptions;
* :mod:`.retry`: when to send a request again;
* :mod:`.sync`, :mod:`.aio`: the two clients, which send the calls.
"""

from __future__ import annotations

from lossgate.client.aio import AsyncClient
from lossgate.client.retry import NO_RETRY, Retry
from lossgate.client.sync import Client
from lossgate.service.models import EventIn, FactIn

__all__ = ["Client", "AsyncClient", "Retry", "NO_RETRY", "EventIn", "FactIn"]
