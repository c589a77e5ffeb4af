"""One capture: the named devices' block requests for a time, folded into a fingerprint.

found = capture([device("/dev/sdb")], seconds=60)   # a Fingerprint
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import BinaryIO

from probes.host_root import live_host
from tuner.capture import fingerprint as fp
from tuner.capture.events import Completion, Issue, Record, parse_record, split, trace_lines
from tuner.capture.stats import DeviceStats
from tuner.capture.tracefs import instance, lost, read_pages
from tuner.errors import BadInput
from tuner.trace_instance import kernel_dev
from tuner.trials.blockdev import block_number, device_bytes, kernel_name

MAX_SECONDS = 24 * 3600
TRACE_BYTES = 64 << 20
"""The optional raw trace stops growing here (the statistics go on)."""
BATCH = 4096
"""trace_pipe lines read from a recording are folded in this many at a time."""
_DEV = itemgetter(1)
_LOST = re.compile(r"CPU:\d+ \[LOST (\d+) EVENTS\]")


@dataclass(frozen=True)
class Device:
    """A device to capture: its kernel name, number, size and class (hdd, ssd, unknown)."""

    name: str
    major: int
    minor: int
    size_bytes: int
    kind: str
    read_ahead_kb: int | None = None
    """The device's readahead when captured: a buffered reader's windows against it tell
    whether the reader advised sequential access (the kernel then doubles its window)."""


def device(text: str) -> Device:
    """The block device named `text` (/dev/sdb, or sdb); BadInput when it is not one."""
    path = text if text.startswith("/") else f"/dev/{text}"
    if not path.isprintable() or len(path) > 256:
        raise BadInput(f"--device {text[:60]!r}: not a device name")
    number = block_number(path)
    if number is None:
        raise BadInput(f"--device {text}: not a block device")
    fs = live_host()
    name = kernel_name(fs, number)
    size = device_bytes(fs, name) if name else None
    if not name or not size:
        raise BadInput(f"--device {text}: no such device or it is empty (size 0)")
    parent = fs.realpath(f"sys/class/block/{name}/..")
    queue = f"sys/block/{name}/queue/rotational"
    if fs.read_int(queue) is None and parent:
        queue = f"sys/block/{Path(parent).name}/queue/rotational"
    rotational = fs.read_int(queue)
    kind = "unknown" if rotational is None else {1: "hdd", 0: "ssd"}.get(rotational, "unknown")
    read_ahead = fs.read_int(queue.removesuffix("rotational") + "read_ahead_kb")
    return Device(name=name, major=number[0], minor=number[1], size_bytes=size, kind=kind,
                  read_ahead_kb=read_ahead)  # fmt: skip


class Collector:
    """Records in, per-device statistics out; the optional raw trace bounded in size.

    Records come from the ring buffer's pages (`add`, in time order) or, for a recorded
    trace, from trace_pipe text (`line`); both reach the statistics in batches."""

    def __init__(self, devices: Iterable[Device], trace: BinaryIO | None = None) -> None:
        self.devices = {kernel_dev(d.major, d.minor): d for d in devices}
        self.stats = {key: DeviceStats(d.size_bytes) for key, d in self.devices.items()}
        self.trace = trace
        self.trace_bytes = 0
        self.events = self.unparsed = self.lost = 0
        self._lines: list[Record] = []

    def line(self, text: str) -> None:
        """Fold in one trace_pipe line (kept until BATCH lines or the fingerprint)."""
        if not text.strip():
            return
        record = parse_record(text)
        if record is None:
            lost = _LOST.search(text)
            if lost:
                self.lost += int(lost.group(1))
            else:
                self.unparsed += 1
            return
        self._lines.append(record)
        if len(self._lines) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Fold in the lines kept so far."""
        held, self._lines = self._lines, []
        self.add(*split(held))

    def add(self, issues: list[Issue], completions: list[Completion]) -> None:
        """Fold in issues and completions of any of the devices, each in time order."""
        devs = {*map(_DEV, issues), *map(_DEV, completions)}
        for dev in devs:
            mine = (issues, completions)
            if len(devs) > 1:
                mine = ([i for i in issues if i[1] == dev], [c for c in completions if c[1] == dev])
            stats = self.stats.get(dev)
            if stats is None:  # the kernel filter let through another device: never counted
                self.unparsed += len(mine[0]) + len(mine[1])
                continue
            self.events += len(mine[0]) + len(mine[1])
            stats.add_records(*mine)
        if self.trace is not None and self.trace_bytes < TRACE_BYTES:
            text = "".join(trace_lines(issues, completions)).encode()
            self.trace.write(text[: TRACE_BYTES - self.trace_bytes])
            self.trace_bytes += len(text)

    def fingerprint(self, seconds: float, where: str = "capture") -> fp.Fingerprint:
        """The fingerprint of everything folded in so far, over `seconds` of capture."""
        self.flush()
        refused = sum(s.refused for s in self.stats.values())
        devices = []
        for key, stats in self.stats.items():
            d = self.devices[key]
            summary = stats.summary(seconds)
            summary["by_process"] = summary["by_process"][: fp.MAX_PROCESSES]
            known = {} if d.read_ahead_kb is None else {"read_ahead_kb": d.read_ahead_kb}
            devices.append({"device": d.name[:16], "class": d.kind,
                            "size_bytes": d.size_bytes, **known, **summary})  # fmt: skip
        data = {
            "schema": fp.SCHEMA,
            "version": fp.VERSION,
            "kernel": _kernel(),
            "source": "tracefs",
            "seconds": round(seconds, 3),
            "events": self.events - refused,
            "unparsed": self.unparsed + refused,
            "lost": self.lost,
            "devices": devices,
        }
        return fp.check(data, where)


def _kernel() -> str:
    release = os.uname().release
    return re.sub(r"[^A-Za-z0-9_.+~-]", "_", release)[:64] or "unknown"


def capture(
    devices: list[Device],
    seconds: float,
    *,
    trace: BinaryIO | None = None,
    stop: Callable[[], bool] | None = None,
    ready: Callable[[], None] | None = None,
) -> fp.Fingerprint:
    """Capture `devices` for `seconds` (or until `stop()`) in a tracefs instance of its own;
    `ready()` is called once the kernel records their events (to start what is captured)."""
    if not 0 < seconds <= MAX_SECONDS:
        raise BadInput(f"--seconds {seconds:g}: expected more than 0 and at most {MAX_SECONDS}")
    collector = Collector(devices, trace)
    with instance([kernel_dev(d.major, d.minor) for d in devices]) as where:
        began = time.monotonic()
        if ready is not None:
            ready()
        read_pages(where, seconds, collector.add, stop)
        took = time.monotonic() - began
        collector.lost += lost(where)
    return collector.fingerprint(took)
