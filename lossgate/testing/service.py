"""A running memory service for tests: uvicorn on a free local port, in a thread.

::

    from lossgate.service import create_app
    from lossgate.testing.service import serving

    with serving(create_app(memory)) as url:       # "http://127.0.0.1:PORT"
        httpx.get(f"{url}/healthz")

Real HTTP over a real socket (no in-process transport), so tests see what a client sees:
the body limit, the headers, the status codes. Needs the ``service`` extra.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["serving", "free_port", "wait_healthy", "stop_process"]


@contextmanager
def serving(app: Any, *, timeout: float = 10.0) -> Iterator[str]:
    """Serve the ASGI ``app`` on ``127.0.0.1`` at a free port for the block; yields its base URL.
    The server runs the app's lifespan, and stops (finishing requests in flight) at the end."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the test server on port {port} did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()


def wait_healthy(url: str, proc: Any, *, timeout: float = 60.0) -> None:
    """Wait until ``lossgate serve`` at ``url`` answers ``/healthz`` with 200. Raises
    :class:`RuntimeError` if its process (``proc``, a ``subprocess.Popen``) exits first or
    ``timeout`` seconds pass."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"lossgate serve exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError("lossgate serve did not come up")
        time.sleep(0.1)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a server started in another process)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: Any, *, grace: float = 30.0) -> None:
    """Stop a server started with ``start_new_session=True``: SIGTERM (uvicorn finishes what
    is in flight), then, after ``grace`` seconds, SIGKILL of its whole process group."""
    import os
    import signal
    import subprocess

    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
