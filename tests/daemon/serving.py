"""A real ControlServer served by a selectors loop in a thread, as the daemon's loop serves it."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tuner.daemon.control import ControlServer, Handler
from tuner.daemon.events import Event


@contextmanager
def serving(path: Path, handler: Handler) -> Iterator[tuple[ControlServer, list[Event]]]:
    """Bind `path`, serve it until the block ends, then close (the socket file goes too).

    Yields the server and the events its handle() returned, in order.
    """
    server = ControlServer(path, handler)
    events: list[Event] = []
    stop = threading.Event()

    def loop() -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(server, selectors.EVENT_READ)
            while not stop.is_set():
                if selector.select(timeout=0.05):
                    events.extend(server.handle())

    thread = threading.Thread(target=loop, name="control-loop", daemon=True)
    thread.start()
    try:
        yield server, events
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def recording(reply: dict[str, Any]) -> tuple[Handler, list[dict[str, Any]]]:
    """A handler answering `reply` to every request, and the list of requests it saw."""
    seen: list[dict[str, Any]] = []

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return reply

    return handler, seen


@contextmanager
def answering(path: Path, reply: bytes) -> Iterator[list[bytes]]:
    """A socket at `path` speaking the control protocol's framing with no checks of its own: each
    connection's request line is read and `reply` sent back byte for byte, whatever it holds (a
    daemon that is broken, or someone else's process on the socket). Yields the requests seen.
    """
    seen: list[bytes] = []
    stop = threading.Event()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    listener.settimeout(0.05)

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                seen.append(data)
                with contextlib.suppress(OSError):  # the client may stop reading early
                    conn.sendall(reply)

    thread = threading.Thread(target=loop, name="answering", daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
        path.unlink(missing_ok=True)
