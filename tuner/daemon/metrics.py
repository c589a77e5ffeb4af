"""The daemon's state as Prometheus metrics: a node-exporter textfile, or served on loopback.

    metrics = Metrics()
    metrics.update(state)                      # the status state dict (docs/daemon.md)
    metrics.write_textfile(Path("/var/lib/node_exporter/textfile_collector/iotuner.prom"))
    metrics.serve("127.0.0.1", 9781) ... metrics.stop()

The metrics are built from the latest state only when they are read (a scrape or a textfile
write), from a private registry: an idle daemon spends nothing on them in between. update()
swaps one reference, so the HTTP server's thread always reads a whole state.

Both outlets face other users. The textfile directory (node-exporter's) may belong to one: the
file is written through a temporary of a random name created O_EXCL|O_NOFOLLOW beside it, then
renamed over it, so nothing planted there is followed. The HTTP listener serves at most
MAX_CLIENTS connections at once, each for at most CLIENT_SECONDS; others are closed at once.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, generate_latest, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tuner import __version__
from tuner.daemon.events import KINDS, Event, event
from tuner.errors import BadInput
from tuner.outfile import write_file

STATES = ("holding", "retuning", "waiting-idle", "no-plan")
"""The daemon's states (status "state"); each is a series of iotuner_state, 1 for the current."""
MB = 1_000_000
"""The workload's MB/s are decimal, as fio's and the rest of iotuner's."""
MAX_CLIENTS = 4
"""Scrapes served at once; a scraper opens one connection at a time."""
CLIENT_SECONDS = 2.0
"""How long one connection may take, from accept to the last byte of the reply."""


class Metrics:
    """A private registry whose one collector renders the last state given to update()."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._collector = _StateCollector()
        self.registry.register(self._collector)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def update(self, state: dict[str, Any]) -> None:
        """Take the daemon's current status state (the dict `iotuner status --json` shows)."""
        self._collector.set(state)

    def render(self) -> bytes:
        """The metrics in Prometheus text format, as a scrape would get them."""
        return generate_latest(self.registry)

    def write_textfile(self, path: Path) -> list[Event]:
        """Write the metrics to `path` atomically: a temporary beside it (random name, created
        O_EXCL so no planted link is followed), renamed over it. An "error" event, not an
        exception, when the host refuses."""
        try:
            _write_atomically(path, self.render())
        except BadInput as err:
            return [event("error", f"metrics: {err}")]
        return []

    def serve(self, host: str, port: int) -> list[Event]:
        """Serve /metrics on host:port in a background thread; host must be a loopback address
        (BadInput otherwise); an "error" event when the port cannot be bound."""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise BadInput(f"metrics listen address {host!r} is not an IP address") from None
        if not address.is_loopback:
            raise BadInput(f"metrics listen address {host} is not a loopback address")
        self.stop()
        server_class = _V6Server if address.version == 6 else _BoundedServer
        try:
            server = make_server(
                str(address), port, make_wsgi_app(self.registry), server_class, _QuietHandler
            )
        except OSError as err:
            why = err.strerror or err
            return [event("error", f"metrics: cannot listen on {host}:{port}: {why}")]
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.25}, name="iotuner-metrics",
            daemon=True,
        )  # fmt: skip
        thread.start()
        self._server, self._thread = server, thread
        return []

    @property
    def address(self) -> tuple[str, int] | None:
        """(host, port) being served, the port as bound (port 0 asks for a free one)."""
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def stop(self) -> None:
        """Stop serving, if serving; the port is free when this returns."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None


def _write_atomically(path: Path, data: bytes) -> None:
    """`data` into `path` by way of a fresh temporary in the same directory, which must be
    iotuner's own up to / and not a link: root rewrites it unattended, every few seconds."""
    # 0644: node-exporter runs as its own user.
    write_file(path, data, mode=0o644, what="metrics textfile", trusted=True)


class _BoundedServer(WSGIServer):
    """A WSGI server with a thread per connection, at most MAX_CLIENTS of them, each
    connection shut down once CLIENT_SECONDS have passed (a slow client cannot hold one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        self._deadlines: dict[socket.socket, float] = {}
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            if len(self._deadlines) >= MAX_CLIENTS:
                self.shutdown_request(request)  # busy: closed at once, the scraper retries
                return
            self._deadlines[request] = time.monotonic() + CLIENT_SECONDS
        thread = threading.Thread(
            target=self._serve_one, args=(request, client_address), daemon=True
        )
        thread.start()

    def _serve_one(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # a client that went away or sent garbage: not the daemon's trouble
            pass
        finally:
            with self._lock:
                self._deadlines.pop(request, None)
            self.shutdown_request(request)

    def service_actions(self) -> None:
        """Between polls of serve_forever: cut the connections past their deadline."""
        now = time.monotonic()
        with self._lock:
            late = [conn for conn, deadline in self._deadlines.items() if deadline < now]
        for conn in late:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # no traceback on stderr for a client's fault


class _V6Server(_BoundedServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    """No line per scrape on stderr: the daemon's log is for what it does. Each read and
    write waits at most CLIENT_SECONDS."""

    timeout = CLIENT_SECONDS

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _StateCollector(Collector):
    def __init__(self) -> None:
        self._state: dict[str, Any] | None = None
        self._classes: dict[str, None] = {}  # every class seen, so a series drops to 0

    def set(self, state: dict[str, Any]) -> None:
        workload = state.get("workload") or {}
        current = workload.get("class") if isinstance(workload, dict) else None
        if isinstance(current, str) and current:
            self._classes.setdefault(current, None)
        self._state = state

    def collect(self) -> Iterator[Metric]:
        state = self._state
        up = GaugeMetricFamily("iotuner_up", "1 while the iotuner daemon runs and reports state")
        up.add_metric([], 0 if state is None else 1)
        yield up
        info = GaugeMetricFamily("iotuner_info", "The iotuner version", labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        if state is None:
            return
        yield from _daemon(state)
        yield from _held(state.get("held") or [])
        yield from _events(state.get("counts") or {})
        workload = state.get("workload") or {}
        if isinstance(workload, dict):
            yield from _workload(workload, self._classes)
        yield from _retune(state)
        follow = state.get("follow")
        if isinstance(follow, dict):
            yield from _follow(follow)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, int | float) else None


def _daemon(state: dict[str, Any]) -> Iterator[Metric]:
    now = GaugeMetricFamily("iotuner_state", "1 for the daemon's current state", labels=["state"])
    current = state.get("state")
    names = list(STATES)
    if isinstance(current, str) and current not in names:
        names.append(current)  # a state newer than this list still shows
    for name in names:
        now.add_metric([name], 1 if name == current else 0)
    yield now
    started = _number(state.get("started"))
    if started is not None:
        yield GaugeMetricFamily(
            "iotuner_start_time_seconds", "When the daemon started (Unix time)", value=started
        )


def _held(held: list[Any]) -> Iterator[Metric]:
    settings = [h for h in held if isinstance(h, dict)]
    yield GaugeMetricFamily(
        "iotuner_held_settings", "Settings of the plan the daemon holds", value=len(settings)
    )
    drifted = sum(1 for h in settings if not h.get("ok"))
    yield GaugeMetricFamily(
        "iotuner_drifted_settings",
        "Held settings whose live value differs from the plan at the last check",
        value=drifted,
    )


def _events(counts: dict[str, Any]) -> Iterator[Metric]:
    total = CounterMetricFamily(
        "iotuner_events", "Events since the daemon started, by kind", labels=["kind"]
    )
    for kind in KINDS:
        total.add_metric([kind], _number(counts.get(kind)) or 0)
    yield total


def _workload(workload: dict[str, Any], classes: dict[str, None]) -> Iterator[Metric]:
    current = workload.get("class")
    family = GaugeMetricFamily(
        "iotuner_workload_class", "1 for the live workload's current class", labels=["class"]
    )
    for name in classes:
        family.add_metric([name], 1 if name == current else 0)
    yield family
    devices = workload.get("devices") or {}
    if not isinstance(devices, dict):
        return
    # (metric, help, field in the state, factor to base units)
    per_device = (
        ("iotuner_device_util_ratio", "Share of time the device was busy", "util_percent", 0.01),
        ("iotuner_device_read_bytes_per_second", "Bytes read per second", "read_mbps", MB),
        ("iotuner_device_write_bytes_per_second", "Bytes written per second", "write_mbps", MB),
        ("iotuner_device_avg_request_bytes", "Average request size", "avg_request_kb", 1024),
        ("iotuner_device_read_ratio", "Share of requests that are reads", "read_fraction", 1),
        ("iotuner_device_queue_depth", "Average requests in flight", "queue_depth", 1),
    )
    for name, help_text, key, factor in per_device:
        family = GaugeMetricFamily(name, help_text, labels=["device"])
        for device, sample in sorted(devices.items()):
            value = _number(sample.get(key)) if isinstance(sample, dict) else None
            if value is not None:
                family.add_metric([str(device)], value * factor)
        yield family


def _retune(state: dict[str, Any]) -> Iterator[Metric]:
    retune = state.get("retune")
    retune = retune if isinstance(retune, dict) else {}
    # The daemon says "retuning" while trials run; the re-tune's own state says "running".
    running = state.get("state") == "retuning" or retune.get("state") == "running"
    yield GaugeMetricFamily(
        "iotuner_retune_running", "1 while a re-tune's trials run", value=1 if running else 0
    )
    gain = _number(retune.get("gain"))
    if gain is not None:
        yield GaugeMetricFamily(
            "iotuner_last_retune_gain_ratio",
            "The last re-tune's measured gain (best / baseline throughput, under the never-worse "
            "rule's confirmation)",
            value=gain,
        )


def _follow(follow: dict[str, Any]) -> Iterator[Metric]:
    """[follow]: captures taken and warm starts made since the daemon started."""
    for key, name, help_text in (
        ("captures", "iotuner_follow_captures", "Captures taken when the counters moved"),
        ("warm_starts", "iotuner_follow_warm_starts",
         "Remembered tunes reused for a returning workload, without a search"),
    ):  # fmt: skip
        total = CounterMetricFamily(name, help_text)
        total.add_metric([], _number(follow.get(key)) or 0)
        yield total
