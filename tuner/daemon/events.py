"""What the daemon did and saw, newest last: for `iotuner status`, the log and the metrics."""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

KINDS = (
    "start", "stop", "config", "plan", "drift", "hotplug", "workload", "advise", "retune",
    "follow", "error",
)  # fmt: skip
"""Every event kind; metrics count events by kind, so the set is fixed."""

log = logging.getLogger("iotuner.daemon")


@dataclass(frozen=True)
class Event:
    """One thing that happened, in one line a person can read."""

    time: float
    kind: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The event as the status socket sends it."""
        return {"time": self.time, "kind": self.kind, "message": self.message, "data": self.data}


class EventLog:
    """The last `keep` events, and how many of each kind there have been since start."""

    def __init__(self, keep: int = 200) -> None:
        self._recent: deque[Event] = deque(maxlen=keep)
        self.counts: Counter[str] = Counter()

    def add(self, kind: str, message: str, **data: Any) -> Event:
        """Record and log one event; errors log as warnings, the rest as info."""
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        event = Event(time.time(), kind, message, data)
        self._recent.append(event)
        self.counts[kind] += 1
        log.log(logging.WARNING if kind == "error" else logging.INFO, "%s: %s", kind, message)
        return event

    def extend(self, events: list[Event]) -> None:
        """Take events a component made itself (their kind and time as made)."""
        for event in events:
            if event.kind not in KINDS:
                raise ValueError(f"unknown event kind {event.kind!r}")
            self._recent.append(event)
            self.counts[event.kind] += 1
            level = logging.WARNING if event.kind == "error" else logging.INFO
            log.log(level, "%s: %s", event.kind, event.message)

    def recent(self, n: int = 20) -> list[Event]:
        """The newest n events, oldest first."""
        return list(self._recent)[-n:] if n > 0 else []


def event(kind: str, message: str, **data: Any) -> Event:
    """An event made by a component, to hand to EventLog.extend."""
    if kind not in KINDS:
        raise ValueError(f"unknown event kind {kind!r}")
    return Event(time.time(), kind, message, data)
