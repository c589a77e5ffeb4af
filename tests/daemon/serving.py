"""A real ControlServer served by a selectors loop in a thread, as the daemon's loop serves it."""

from __future__ import annotations

import selectors
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
