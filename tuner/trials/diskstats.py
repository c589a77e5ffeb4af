"""Bytes block devices moved, from /proc/diskstats: once, or sampled through a trial.

fio leaves the ramp out of its figures, and on a shared machine the ramp ran up to ten times
faster than the steady state (probably the scheduler favouring a new process at first), so the
device's bytes over the whole run cannot be compared with fio's, even scaled by the ramp. A
sampler thread reads the counters every 20 ms with wall-clock times, and the bytes moved in
fio's own measurement window (placed from when the devices moved: trial.measured_window) are
interpolated.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

DISKSTATS = Path("/proc/diskstats")
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size
INTERVAL_S = 0.02


@dataclass(frozen=True)
class Counters:
    """Bytes read and written on some block devices."""

    read_bytes: int
    write_bytes: int

    def __sub__(self, before: Counters) -> Counters:
        return Counters(self.read_bytes - before.read_bytes, self.write_bytes - before.write_bytes)


@dataclass(frozen=True)
class DiskCounters:
    """One device's cumulative counters from one line of /proc/diskstats."""

    reads: int  # requests completed (after merging: what the device served)
    read_bytes: int
    writes: int
    write_bytes: int
    io_ticks_ms: int  # time with at least one request in flight
    queue_ms: int  # time in queue summed over requests (weighted)

    @property
    def bytes(self) -> Counters:
        """Bytes read and written, as tuner.trials.diskstats counts them."""
        return Counters(self.read_bytes, self.write_bytes)

    def went_back(self, before: DiskCounters) -> bool:
        """True when a counter is below `before`'s: the device was re-attached (or wrapped)."""
        pairs = zip(_fields(self), _fields(before), strict=True)
        return any(now < then for now, then in pairs)


def _fields(c: DiskCounters) -> tuple[int, ...]:
    return (c.reads, c.read_bytes, c.writes, c.write_bytes, c.io_ticks_ms, c.queue_ms)


def read_counters(names: Iterable[str], path: Path = DISKSTATS) -> dict[str, DiskCounters]:
    """The named devices found in /proc/diskstats (one read of the file); OSError passes up."""
    wanted = set(names)
    found: dict[str, DiskCounters] = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        # major minor name | reads merged sectors ms | writes merged sectors ms | in-flight
        # io_ticks time_in_queue | (discards, flushes: newer kernels)
        if len(fields) >= 14 and fields[2] in wanted:
            try:
                n = [int(value) for value in fields[3:14]]
            except ValueError:
                continue
            found[fields[2]] = DiskCounters(n[0], n[2] * SECTOR, n[4], n[6] * SECTOR, n[9], n[10])
    return found


def read_diskstats(names: Iterable[str], path: Path = DISKSTATS) -> dict[str, Counters]:
    """Bytes read and written since boot by each named device found in /proc/diskstats."""
    return {name: c.bytes for name, c in read_counters(names, path).items()}


def total(counters: dict[str, Counters], names: Iterable[str]) -> Counters:
    """The named devices' counters summed (a device missing from the sample counts 0)."""
    picked = [counters[name] for name in names if name in counters]
    return Counters(sum(c.read_bytes for c in picked), sum(c.write_bytes for c in picked))


class Sampler:
    """Samples the devices' counters in a thread while the `with` block runs."""

    def __init__(self, names: Iterable[str], path: Path = DISKSTATS) -> None:
        self.names = tuple(names)
        self.path = path
        self.times: list[float] = []
        self.samples: list[dict[str, Counters]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="diskstats", daemon=True)

    def __enter__(self) -> Sampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self._sample()

    def _sample(self) -> None:
        counters = read_diskstats(self.names, self.path)
        self.times.append(time.time())
        self.samples.append(counters)

    def whole(self, names: Iterable[str]) -> Counters:
        """What the named devices moved from the first sample to the last."""
        names = tuple(names)
        return total(self.samples[-1], names) - total(self.samples[0], names)

    def between(self, start: float, end: float, names: Iterable[str]) -> Counters:
        """What the named devices moved between two wall-clock times, interpolated."""
        names = tuple(names)
        return self._at(end, names) - self._at(start, names)

    def moving(self, names: Iterable[str], *, reads: bool = False) -> tuple[float, float] | None:
        """When the named devices first and last moved bytes (`reads`: read bytes): the sample
        before their counters first changed and the first sample showing their final count;
        None when they never moved."""
        names = tuple(names)
        counts = [total(sample, names) for sample in self.samples]
        if reads:
            counts = [Counters(c.read_bytes, 0) for c in counts]
        changed = [i for i in range(1, len(counts)) if counts[i] != counts[i - 1]]
        if not changed:
            return None
        return self.times[changed[0] - 1], self.times[changed[-1]]

    def _at(self, when: float, names: tuple[str, ...]) -> Counters:
        i = bisect.bisect_right(self.times, when)
        if i == 0:
            return total(self.samples[0], names)
        if i == len(self.times):
            return total(self.samples[-1], names)
        t0, t1 = self.times[i - 1], self.times[i]
        c0, c1 = total(self.samples[i - 1], names), total(self.samples[i], names)
        share = (when - t0) / (t1 - t0) if t1 > t0 else 1.0
        return Counters(
            c0.read_bytes + round((c1.read_bytes - c0.read_bytes) * share),
            c0.write_bytes + round((c1.write_bytes - c0.write_bytes) * share),
        )
