"""Storage faults for tests: a real store whose write path damages what it stores, and a
database that goes away.

:class:`FaultyCodec` wraps any store (SQLite or PostgreSQL, unchanged underneath) and
encodes every artifact it writes with one defect: each boolean claim value is stored as
its string (``False`` becomes ``"false"``), a representation loss, not a compression one. Reads
go through the real store untouched, so what comes back is what a faulty storage layer
would have kept. Used to prove that read-back verification (:mod:`lossgate.publication.readback`)
refuses to publish such an artifact.

:class:`TcpProxy` forwards a loopback port to a server (PostgreSQL) until the test stops
it: then connecting is refused and the connections it carried are cut, as when the
database goes down; started again, it listens on the same port, as when it comes back.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from lossgate.model.derived_records import Artifact, LineageEdge

__all__ = ["FaultyCodec", "TcpProxy"]


class FaultyCodec:
    """A store whose artifact encoder turns boolean claim values into strings on write."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self._store.write() as tx:
            yield _FaultyTx(tx)


class _FaultyTx:
    def __init__(self, tx: Any) -> None:
        self._tx = tx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def insert_artifact(self, artifact: Artifact, edges: Sequence[LineageEdge]) -> None:
        claims = tuple(
            c.model_copy(update={"value": str(c.value).lower()})
            if c.value_type == "bool" and isinstance(c.value, bool)
            else c
            for c in artifact.body.claims
        )
        self._tx.insert_artifact(
            artifact.model_copy(update={"body": artifact.body.model_copy(update={"claims": claims})}), edges
        )


class TcpProxy:
    """A TCP proxy from a port of ``127.0.0.1`` to ``host:port``, for outages of a real server.

    ::

        with TcpProxy("127.0.0.1", 5432) as proxy:
            url = proxy.url("postgresql://postgres@127.0.0.1:5432/db")  # through the proxy
            proxy.stop()   # refused, and every connection it carried is cut
            proxy.start()  # the same port again
    """

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._listener: socket.socket | None = None
        self._carried: set[socket.socket] = set()
        self._lock = threading.Lock()

    def url(self, url: str) -> str:
        """``url`` (``scheme://user@host:port/...``) reaching its server through the proxy."""
        parts = urlsplit(url)
        user = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{user + '@' if user else ''}127.0.0.1:{self.port}"))

    def start(self) -> None:
        """Listen (on the port of the first start, again after :meth:`stop`)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name=f"proxy-{self.port}", daemon=True).start()

    def stop(self) -> None:
        """Stop listening and cut every connection carried (both ends see it closed)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            _shut(listener)
        with self._lock:
            carried, self._carried = self._carried, set()
        for sock in carried:
            _shut(sock)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # stopped meanwhile
                    for sock in (client, server):
                        _shut(sock)
                    return
                self._carried |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._carried -= {source, sink}
            for sock in (source, sink):
                _shut(sock)

    def __enter__(self) -> TcpProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
