"""Per-request device latency from the kernel's block tracepoints, in a tracefs instance of
iotuner's own (so nothing another tracer set up is touched).

    with LatencySampler(major, minor) as sampler:   # None when tracefs is not there
        ...
        for request in sampler.drain(): ...          # (size in bytes, ms issue -> complete)

The instance `iotuner-online-PID` enables `block_rq_issue` and `block_rq_complete` filtered to
one device; `drain` reads what `trace_pipe` holds without blocking and pairs each completion
with its issue by (sector, sectors). It is removed on close, also when a signal unwinds the
stack; one a killed iotuner left is removed by the next sampler (`remove_stale`). The instance
itself is made and removed as `iotuner capture` makes its own (tuner/trace_instance.py); the
line parsing is still this module's (tuner/capture/events.py parses the same lines more fully).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from probes.hostfs import digits
from tuner.trace_instance import create_instance, kernel_dev, remove_instance

TRACEFS_ROOTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
PREFIX = "iotuner-online-"
BUFFER_KB = 1024
"""Per-CPU ring size: a second of events at 10,000 requests/s (two lines of ~110 bytes each)
fits twice; beyond that the kernel overwrites the oldest and the sample thins, it never
blocks the I/O."""
MAX_DRAIN_BYTES = 8 << 20
"""The most one drain reads: the rest of a flood is left to the kernel's overwrite, so a fast
device costs bounded parsing time per second."""
MAX_PENDING = 65536
"""Issued requests waiting for their completion: more means lost completions (overruns)."""

_LINE = re.compile(
    r"\s(\d+\.\d+): block_rq_(issue|complete): \d+,\d+ (\S+) (?:\d+ )?\(.*?\) (\d+) \+ (\d+)"
)


@dataclass(frozen=True)
class Request:
    """One completed request: its size and the time from issue to completion."""

    size_bytes: int
    ms: float


def parse_line(line: str) -> tuple[str, float, int, int] | None:
    """("issue" | "complete", seconds, sector, sectors) of one trace line, or None for lines
    that are not a data request of these events (flushes carry no sectors)."""
    found = _LINE.search(line)
    if found is None:
        return None
    stamp, kind, rwbs, sector, sectors = found.groups()
    if int(sectors) == 0 or not ("R" in rwbs or "W" in rwbs):
        return None
    return kind, float(stamp), int(sector), int(sectors)


class Pairing:
    """Matches completions to issues; what the trace text says, no I/O of its own."""

    def __init__(self) -> None:
        self._issued: dict[tuple[int, int], float] = {}
        self.unmatched = 0

    def feed(self, lines: list[str]) -> list[Request]:
        """The requests completed in `lines` (issue lines are remembered)."""
        done: list[Request] = []
        for line in lines:
            parsed = parse_line(line)
            if parsed is None:
                continue
            kind, stamp, sector, sectors = parsed
            if kind == "issue":
                if len(self._issued) >= MAX_PENDING:
                    self._issued.clear()  # completions were lost: start afresh
                self._issued[(sector, sectors)] = stamp
                continue
            issued = self._issued.pop((sector, sectors), None)
            if issued is None or stamp < issued:
                self.unmatched += 1
                continue
            done.append(Request(sectors * 512, (stamp - issued) * 1000.0))
        return done


def tracefs_root() -> Path | None:
    """Where tracefs is mounted with instances, or None (then there is no per-request sample)."""
    return next((root for root in TRACEFS_ROOTS if (root / "instances").is_dir()), None)


def remove_stale(root: Path) -> list[Path]:
    """Remove instances of this module whose process is gone (a kill -9); the removed ones."""
    removed = []
    with contextlib.suppress(OSError):
        for path in (root / "instances").iterdir():
            pid = path.name.removeprefix(PREFIX)
            if path.name.startswith(PREFIX) and digits(pid) and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    path.rmdir()
                    removed.append(path)
    return removed


class LatencySampler:
    """A tracefs instance tracing one device's requests; `drain` returns what completed."""

    def __init__(self, root: Path, major: int, minor: int) -> None:
        self.path = root / "instances" / f"{PREFIX}{os.getpid()}"
        self.dev = kernel_dev(major, minor)
        self._fd: int | None = None
        self._rest = b""
        self.pairing = Pairing()

    @classmethod
    def open(cls, major: int, minor: int) -> LatencySampler | None:
        """A started sampler for the device, or None when tracefs cannot be used here."""
        root = tracefs_root()
        if root is None:
            return None
        remove_stale(root)
        sampler = cls(root, major, minor)
        try:
            sampler.start()
        except OSError:
            sampler.close()
            return None
        return sampler

    def start(self) -> None:
        """Make the instance, filter and enable the events, open the pipe (non-blocking)."""
        create_instance(self.path, [self.dev], BUFFER_KB)
        self._fd = os.open(self.path / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)

    def drain(self) -> list[Request]:
        """The requests completed since the last drain (at most MAX_DRAIN_BYTES read)."""
        if self._fd is None:
            return []
        chunks, read = [self._rest], 0
        while read < MAX_DRAIN_BYTES:
            try:
                chunk = os.read(self._fd, 1 << 16)
            except OSError as err:
                if err.errno == errno.EAGAIN:
                    break
                raise
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
        data = b"".join(chunks)
        whole, _, self._rest = data.rpartition(b"\n")
        return self.pairing.feed(whole.decode(errors="replace").splitlines())

    def close(self) -> None:
        """Disable the events and remove the instance (the pipe must be closed first)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        with contextlib.suppress(OSError):
            remove_instance(self.path)

    def __enter__(self) -> LatencySampler:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def device_numbers(name: str, sys_block: Path = Path("/sys/block")) -> tuple[int, int] | None:
    """(major, minor) of a block device from /sys/block/NAME/dev, or None."""
    try:
        major, _, minor = (sys_block / name / "dev").read_text().strip().partition(":")
    except OSError:
        return None
    return (int(major), int(minor)) if digits(major) and digits(minor) else None


def requests_by_size(requests: list[Request]) -> Iterator[tuple[int, list[float]]]:
    """(size class, latencies) with the class a power of two of KiB (4 KiB, 8 KiB ...)."""
    classes: dict[int, list[float]] = {}
    for request in requests:
        size_class = 1 << max(0, (max(request.size_bytes, 1) - 1).bit_length())
        classes.setdefault(size_class, []).append(request.ms)
    yield from sorted(classes.items())
