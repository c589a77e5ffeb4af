"""The application's own figure: a command that prints one number, or a Prometheus query.

    metric = command_metric("/usr/local/bin/commits --db bench", kind="counter")
    value = metric.read()       # MetricError when it fails

The command is split like a shell would (shlex) but never run through one; it runs with a
timeout, its output is bounded and must be exactly one finite number. A `counter` (commits,
bytes copied) is read at both ends of a slice and its rate is the slice's figure; a `gauge`
(a rate the application computes itself) is read at the end. A Prometheus query is a gauge:
write it as a rate over the slice (`rate(pg_xact_commit_total[10s])`).
"""

from __future__ import annotations

import json
import math
import os
import selectors
import shlex
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from tuner.errors import BadInput, IotunerError

MAX_OUTPUT = 4096
"""One number and a newline; more is not a metric."""
MAX_REPLY = 1 << 20
"""A Prometheus reply for one instant vector of one series is a few hundred bytes."""
KINDS = ("counter", "gauge")


class MetricError(IotunerError):
    """The metric could not be read (exit 1 mid-tune; at the start, BadInput)."""


def parse_number(text: str, source: str) -> float:
    """The one finite number `text` holds (white space around it allowed), else MetricError."""
    words = text.split()
    if len(words) != 1:
        shown = "nothing" if not words else f"{len(words)} words"
        raise MetricError(f"{source} printed {shown}, not one number")
    try:
        value = float(words[0])
    except ValueError:
        raise MetricError(f"{source} printed {words[0][:40]!r}, not a number") from None
    if not math.isfinite(value):
        raise MetricError(f"{source} printed {words[0]}, not a finite number")
    return value


@dataclass(frozen=True)
class Metric:
    """A way to read the application's figure, and whether it is a counter or a gauge."""

    name: str
    kind: str
    read: Callable[[], float]

    @property
    def counter(self) -> bool:
        """True when the slice's figure is the rate of change between two reads."""
        return self.kind == "counter"


def _run(argv: list[str], timeout: float) -> str:
    """The command's standard output (at most MAX_OUTPUT bytes), or MetricError."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, close_fds=True)  # fmt: skip
    except OSError as err:
        raise MetricError(f"metric command {argv[0]}: {err.strerror or err}") from None
    assert proc.stdout is not None
    try:
        out = _bounded_read(proc, timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
    if proc.returncode != 0:
        raise MetricError(f"metric command {argv[0]} exited {proc.returncode}")
    return out


def _bounded_read(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """Read up to MAX_OUTPUT + 1 bytes within `timeout` seconds."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise MetricError(f"metric command took over {timeout:g} s")
            if not selector.select(left):
                continue
            chunk = os.read(proc.stdout.fileno(), MAX_OUTPUT + 1)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise MetricError(f"metric command printed over {MAX_OUTPUT} bytes")
    if proc.wait(max(0.0, deadline - time.monotonic())) is None:  # pragma: no cover
        raise MetricError("metric command did not exit")
    try:
        return b"".join(chunks).decode()
    except UnicodeDecodeError:
        raise MetricError("metric command printed bytes that are not text") from None


def command_metric(text: str, kind: str = "counter", timeout: float = 5.0) -> Metric:
    """A metric read by running `text` (split like a shell, run without one). BadInput for a
    command that cannot be a metric: empty, unbalanced quotes, not found or not executable,
    an unknown kind."""
    if kind not in KINDS:
        raise BadInput(f"--metric-kind {kind}: use {' or '.join(KINDS)}")
    if "\0" in text or "\n" in text:
        raise BadInput("--metric: one command line, without NUL or newline characters")
    try:
        argv = shlex.split(text)
    except ValueError as err:
        raise BadInput(f"--metric {text[:60]!r}: {err}") from None
    if not argv:
        raise BadInput("--metric: give a command that prints one number")
    found = shutil.which(argv[0])
    if found is None:
        raise BadInput(
            f"--metric: {argv[0][:60]!r} is not an executable command (no shell runs it)"
        )
    argv[0] = found
    return Metric(
        argv[0], kind, lambda: parse_number(_run(argv, timeout), f"metric command {argv[0]}")
    )


def prometheus_metric(url: str, query: str, timeout: float = 5.0) -> Metric:
    """A gauge read from a Prometheus server's instant query; the query must return exactly
    one series. BadInput for a URL that is not http(s) or an empty query."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadInput(f"--prometheus {url[:60]!r}: an http:// or https:// URL of the server")
    if not query.strip() or "\0" in query:
        raise BadInput("--prometheus: give a query (a rate over the slice, one series)")
    endpoint = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": query})

    def read() -> float:
        try:
            with urllib.request.urlopen(endpoint, timeout=timeout) as reply:
                raw = reply.read(MAX_REPLY + 1)
        except (OSError, ValueError) as err:
            raise MetricError(f"prometheus {url}: {err}") from None
        if len(raw) > MAX_REPLY:
            raise MetricError(f"prometheus {url}: reply over {MAX_REPLY} bytes")
        return parse_prometheus(raw, query)

    return Metric(f"prometheus {query}", "gauge", read)


def parse_prometheus(raw: bytes, query: str) -> float:
    """The value of a Prometheus instant-query reply holding one sample, else MetricError."""
    try:
        document = json.loads(raw)
        data = document["data"]
        if document.get("status") != "success":
            raise MetricError(f"prometheus query {query!r}: status {document.get('status')!r}")
        if data["resultType"] == "scalar":
            value = data["result"][1]
        else:
            results = data["result"]
            if not isinstance(results, list) or len(results) != 1:
                count = len(results) if isinstance(results, list) else "no"
                raise MetricError(f"prometheus query {query!r} returned {count} series, not one")
            value = results[0]["value"][1]
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise MetricError(f"prometheus query {query!r}: not a query reply ({err})") from None
    if not isinstance(value, str):
        raise MetricError(f"prometheus query {query!r}: value is not a string")
    return parse_number(value, f"prometheus query {query!r}")
