"""The search space: which settings a tune varies, over which values, and how points are kept valid.

A point is a dict `{(key, target): value}`: block keys name a device ("loop3"), vm keys the target
"host", application parameters (fio's bs in bytes, iodepth, numjobs, direct) the target "app".
Domains follow the hardware: sizes and depths on log scales, the schedulers the device offers,
request sizes up to what the device accepts. Points that break a rule between two keys are
repaired deterministically (as the kernel itself would resolve them), never rejected, so every
point the optimiser proposes can be measured.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from tuner.topology.model import QueueSettings, VmSettings
from tuner.tunables.domain import Dimension, Value

__all__ = ["Dimension", "Value"]
Point = dict[tuple[str, str], Value]

APP = "app"
HOST = "host"
# The most requests a queue accepts with scheduler none is the hardware tag depth; loop devices
# and most SATA disks have 128 (nvme has more, so callers may pass the device's own figure).
DEFAULT_NONE_DEPTH = 128
# With a scheduler the kernel allows up to 2048 (MAX_SCHED_RQ); past 1024 nothing improves.
SCHED_MAX_REQUESTS = 1024
DEVICE_KEYS = (
    "block.read_ahead_kb",
    "block.nr_requests",
    "block.max_sectors_kb",
    "block.scheduler",
)
HOST_KEYS = ("vm.dirty_background_bytes", "vm.dirty_bytes")
MIB = 1 << 20
APP_KEYS = ("bs", "iodepth", "numjobs", "direct")


@dataclass(frozen=True)
class SearchSpace:
    """The dimensions a tune varies, plus what `repair` needs to keep points valid.

    `none_depth` maps a device to the most requests it accepts with scheduler none.
    """

    dimensions: tuple[Dimension, ...]
    none_depth: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [d.name for d in self.dimensions]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate dimensions in {names}")

    def names(self) -> list[tuple[str, str]]:
        """The (key, target) of every dimension, in order."""
        return [d.name for d in self.dimensions]

    def snap(self, point: Mapping[tuple[str, str], Value]) -> Point:
        """`point` moved onto the space: every dimension snapped, then repaired.

        Keys the space does not vary are dropped; a missing dimension is an error.
        """
        missing = [n for n in self.names() if n not in point]
        if missing:
            raise ValueError(f"point lacks {missing}")
        return self.repair({d.name: d.snap(point[d.name]) for d in self.dimensions})

    def repair(self, point: Point) -> Point:
        """A valid point close to `point`, the same every time for the same input.

        - vm.dirty_background_bytes must stay below vm.dirty_bytes: when it does not, it becomes
          half of dirty_bytes, the threshold the kernel falls back to in that case
          (domain_dirty_limits in mm/page-writeback.c), so the repaired point is the one the
          kernel would really run.
        - block.nr_requests with scheduler none is capped at the hardware depth, as the kernel
          refuses more (EINVAL).
        """
        fixed = dict(point)
        bg, dirty = ("vm.dirty_background_bytes", HOST), ("vm.dirty_bytes", HOST)
        if bg in fixed and dirty in fixed and int(fixed[bg]) >= int(fixed[dirty]):
            fixed[bg] = max(int(fixed[dirty]) // 2 // MIB, 1) * MIB
            if int(fixed[bg]) >= int(fixed[dirty]):  # only when dirty_bytes is 1 MiB
                fixed[dirty] = int(fixed[bg]) + MIB
        for (key, target), value in point.items():
            if key == "block.scheduler" and value == "none":
                nr = ("block.nr_requests", target)
                depth = self.none_depth.get(target, DEFAULT_NONE_DEPTH)
                if nr in fixed and int(fixed[nr]) > depth:
                    fixed[nr] = depth
        return fixed

    def complete(self, partial: Mapping[tuple[str, str], Value], base: Point) -> Point:
        """`partial` (say a rule's recommendation) with the other dimensions taken from `base`."""
        merged: dict[tuple[str, str], Value] = dict(base)
        merged.update({k: v for k, v in partial.items() if k in set(self.names())})
        return self.snap(merged)

    def distance(self, a: Point, b: Point) -> float:
        """Euclidean distance between two points on the dimensions' unit scales."""
        return math.sqrt(sum(d.distance(a[d.name], b[d.name]) ** 2 for d in self.dimensions))


def point_key(point: Mapping[tuple[str, str], Value]) -> tuple[tuple[str, str, Value], ...]:
    """A hashable, order-independent form of a point (for de-duplication)."""
    return tuple(sorted((key, target, value) for (key, target), value in point.items()))


def _widened(dim: Dimension, current: int | None) -> Dimension:
    """`dim` with its range stretched to hold the current value, so the baseline is a point."""
    if current is None or dim.low <= current <= dim.high:
        return dim
    if current <= 0 and dim.log:
        return dim  # read_ahead_kb 0 (off) has no place on a log scale: the baseline snaps up
    low = min(dim.low, current // dim.step * dim.step)
    high = max(dim.high, -(-current // dim.step) * dim.step)
    return replace(dim, low=max(low, 1) if dim.log else low, high=high)


def device_dimensions(
    device: str,
    queue: QueueSettings,
    keys: Iterable[str] = DEVICE_KEYS,
    none_depth: int = DEFAULT_NONE_DEPTH,
) -> list[Dimension]:
    """The block-queue dimensions of one device, with domains read from its queue settings."""
    wanted = set(keys)
    dims: list[Dimension] = []
    if "block.read_ahead_kb" in wanted:
        # 128 KB is the kernel default; 64 MB is far past where any disk stops gaining.
        ra = Dimension("block.read_ahead_kb", device, "int", 128, 65536, log=True, step=4)
        dims.append(_widened(ra, queue.read_ahead_kb))
    schedulers = tuple(queue.schedulers)
    vary_scheduler = "block.scheduler" in wanted and len(schedulers) > 1
    if "block.nr_requests" in wanted:
        only_none = not vary_scheduler and queue.scheduler == "none"
        high = none_depth if only_none else SCHED_MAX_REQUESTS
        nr = Dimension("block.nr_requests", device, "int", 4, high, log=True)
        dims.append(_widened(nr, queue.nr_requests))
    if "block.max_sectors_kb" in wanted and queue.max_hw_sectors_kb:
        hw = queue.max_hw_sectors_kb
        if hw > 64:  # below that there is nothing to choose
            ms = Dimension("block.max_sectors_kb", device, "int", 64, hw, log=True, step=4)
            dims.append(_widened(ms, queue.max_sectors_kb))
    if vary_scheduler:
        dims.append(Dimension("block.scheduler", device, "categorical", choices=schedulers))
    return dims


def host_dimensions(vm: VmSettings, dirtyable: int) -> list[Dimension]:
    """vm.dirty_background_bytes and vm.dirty_bytes (always together: repair links them).

    Byte counts, not ratios: a ratio moves in steps of 1 % of dirtyable memory, 240 MB on a
    24 GiB host and 2.5 GB on a 256 GiB one, so the small thresholds that start writeback at
    once cannot be said in ratios (on the lab's single disk a 256 MiB write burst went from 76
    to 99 MB/s with a 16 MiB background threshold; 1 %, the smallest ratio, changed nothing:
    docs/benchmarks.md). Domains in MiB steps on log scales (writeback's effect is
    proportional): background 4 MiB to half of `dirtyable`, the limit 16 MiB to 80 % of it,
    the top ends of the ratio domains before. `vm`'s *_bytes are the thresholds in use, a
    ratio the caller turned into bytes (tuner.tune.setup.bytes_in_use).
    """
    bg = Dimension("vm.dirty_background_bytes", HOST, "int", 4 * MIB,
                   max(dirtyable // 2, 8 * MIB), log=True, step=MIB)  # fmt: skip
    dirty = Dimension("vm.dirty_bytes", HOST, "int", 16 * MIB,
                      max(dirtyable * 4 // 5, 32 * MIB), log=True, step=MIB)  # fmt: skip
    return [_widened(bg, vm.dirty_background_bytes), _widened(dirty, vm.dirty_bytes)]


def app_dimensions() -> list[Dimension]:
    """fio's bs (bytes, powers of two 4 KiB..4 MiB), iodepth 1..64, numjobs 1..8, direct."""
    return [
        Dimension("bs", APP, "int", 4096, 4 << 20, log=True, pow2=True),
        Dimension("iodepth", APP, "int", 1, 64, log=True),
        Dimension("numjobs", APP, "int", 1, 8),
        Dimension("direct", APP, "categorical", choices=(0, 1)),
    ]


def space_for(
    devices: Mapping[str, QueueSettings],
    vm: VmSettings | None = None,
    *,
    keys: Iterable[str] | None = None,
    app: bool = False,
    none_depth: Mapping[str, int] | None = None,
    dirtyable: int | None = None,
) -> SearchSpace:
    """The space a tune searches: `keys` (default: every device and host key) on `devices`.

    `devices` maps a device name to its current queue settings (from the probe); `vm` adds the
    dirty thresholds when given with the host's `dirtyable` memory and wanted (see
    `host_dimensions`); `app` adds fio's parameters (only with --app-params).
    """
    wanted = set(keys) if keys is not None else set(DEVICE_KEYS) | set(HOST_KEYS)
    depths = dict(none_depth or {})
    for device, queue in devices.items():
        # Under scheduler none the queue already holds the hardware depth: the best estimate.
        if device not in depths and queue.scheduler == "none" and queue.nr_requests:
            depths[device] = queue.nr_requests
    dims: list[Dimension] = []
    for device, queue in devices.items():
        depth = depths.get(device, DEFAULT_NONE_DEPTH)
        dims.extend(device_dimensions(device, queue, wanted & set(DEVICE_KEYS), depth))
    if vm is not None and dirtyable and wanted & set(HOST_KEYS):
        dims.extend(host_dimensions(vm, dirtyable))
    if app:
        dims.extend(app_dimensions())
    return SearchSpace(tuple(dims), {d: depths.get(d, DEFAULT_NONE_DEPTH) for d in devices})
