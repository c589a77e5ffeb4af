"""Scaling trials: 1, 2, ..., N devices of a group read at once, then each one alone.

One fio run per point, one job per busy device: sequential 1 MiB reads, direct I/O, queue
depth 8. The job only reads, so fio opens each device read-only: nothing is ever written. The
sum of the jobs' bandwidth is the group's throughput with that many devices busy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from probes.host_root import live_host
from tuner.bottleneck.groups import Group
from tuner.trials.blockdev import cached_below, live_storage
from tuner.trials.faults import TrialFault
from tuner.trials.fio import escape_path, parse_result, run_fio
from tuner.trials.targets import TrialTarget

BLOCK = "1M"
IODEPTH = 8
RAMP_S = 0.5  # the loop and throttle queues fill in well under this


@dataclass(frozen=True)
class Point:
    """`busy` devices read at once: their summed MB/s and each one's share."""

    busy: int
    total_mbps: float
    per_device_mbps: tuple[float, ...]


@dataclass(frozen=True)
class Scaling:
    """A group's curve: `points[k-1]` has the first k devices busy; `solo_mbps[i]` is device i
    read alone (the first point's own figure for the first device). `flagged`: why the figures
    may be memory's rather than the devices', or None."""

    devices: tuple[str, ...]
    solo_mbps: tuple[float, ...]
    points: tuple[Point, ...]
    seconds: float
    flagged: str | None = None

    @property
    def totals(self) -> tuple[float, ...]:
        """The curve: summed MB/s with 1..N devices busy."""
        return tuple(point.total_mbps for point in self.points)


Progress = Callable[[str], None]


def device_path(name: str) -> str:
    """The device node of a kernel name (cciss!c0d0 -> /dev/cciss/c0d0)."""
    return "/dev/" + name.replace("!", "/")


def job_text(paths: Sequence[str], runtime_s: float, ramp_s: float = RAMP_S) -> str:
    """The fio job file reading `paths` at once, one job each, never writing."""
    lines = [
        f"; written by iotuner: bottleneck, {len(paths)} device(s) busy",
        "[global]",
        "rw=read",  # fio opens the devices read-only for a read-only job
        f"bs={BLOCK}",
        "direct=1",
        "ioengine=libaio",
        f"iodepth={IODEPTH}",
        "time_based=1",
        f"runtime={round(runtime_s * 1000)}ms",
        f"ramp_time={round(ramp_s * 1000)}ms",
    ]
    for index, path in enumerate(paths):
        lines += [f"[dev{index}]", "filename=" + escape_path(path)]
    return "\n".join(lines) + "\n"


def read_at_once(
    paths: Sequence[str], runtime_s: float, devices: tuple[str, ...] = ()
) -> tuple[float, ...]:
    """MB/s (10^6 bytes) of each of `paths` (kernel names `devices`) while all are read at
    once; TrialFault naming the device that failed (tuner/trials/faults.py)."""
    timeout = 3 * (runtime_s + RAMP_S) + 60
    doc = run_fio(job_text(paths, runtime_s), timeout_s=timeout, what=", ".join(paths),
                  devices=devices)  # fmt: skip
    parse_result(doc)  # raises on a failed job
    rates = {
        str(job.get("jobname")): float((job.get("read") or {}).get("bw_bytes", 0)) / 1e6
        for job in doc.get("jobs", [])
    }
    return tuple(rates.get(f"dev{index}", 0.0) for index in range(len(paths)))


def run_scaling(group: Group, runtime_s: float = 3.0, progress: Progress | None = None) -> Scaling:
    """Read the group's first 1, 2, ..., N devices at once, then devices 2..N alone.

    BadInput when a device is not a non-empty block device: fio never starts then.
    """
    started = time.monotonic()
    paths = [device_path(name) for name in group.devices]
    for path in paths:
        TrialTarget.device(path)  # a block device with a size, or BadInput
    points: list[Point] = []
    for busy in range(1, len(paths) + 1):
        if progress is not None:
            progress(f"{group.component.label}: {busy} of {len(paths)} devices busy")
        rates = _numbered(len(points) + 1, f"{busy} of {len(paths)} busy", paths[:busy],
                          runtime_s, group.devices[:busy])  # fmt: skip
        points.append(Point(busy, sum(rates), rates))
    solos = [points[0].total_mbps]
    for name, path in zip(group.devices[1:], paths[1:], strict=True):
        if progress is not None:
            progress(f"{group.component.label}: {name} alone")
        run = len(points) + len(solos)
        solos.append(_numbered(run, f"{name} alone", [path], runtime_s, (name,))[0])
    return Scaling(
        group.devices, tuple(solos), tuple(points), time.monotonic() - started, _cached(group)
    )


def _numbered(
    number: int, what: str, paths: Sequence[str], runtime_s: float, devices: tuple[str, ...]
) -> tuple[float, ...]:
    """read_at_once, a fault in it numbered as the group's `number`th fio run (`what`)."""
    try:
        return read_at_once(paths, runtime_s, devices)
    except TrialFault as fault:
        raise fault.at(number, what) from None


def _cached(group: Group) -> str | None:
    """Direct I/O skips the page cache of the devices read, not that of a file a loop device
    below them reads through it: repeated passes may then come from memory."""
    below = cached_below(group.devices, live_storage(live_host()))
    if below is None:
        return None
    return f"{below[0]} reads a file on {below[1]} through the page cache: figures may be memory's"
