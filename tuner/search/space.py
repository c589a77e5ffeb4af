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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from tuner.tunables.block import DEFAULT_NONE_DEPTH, Scheduler, none_depth
from tuner.tunables.domain import Dimension, SpaceContext, Value
from tuner.tunables.iosched import SchedulerParameter
from tuner.tunables.sysroot import SysRoot
from tuner.tunables.table import IMPLEMENTATIONS

__all__ = ["Dimension", "SpaceContext", "Value"]
Point = dict[tuple[str, str], Value]

APP = "app"
HOST = "host"
MIB = 1 << 20


@dataclass(frozen=True)
class SearchSpace:
    """The dimensions a tune varies, plus what `repair` needs to keep points valid.

    `none_depth` maps a device to the most requests it accepts with scheduler none.
    `resting` holds, for each scheduler parameter searched (bfq's slice_idle, mq-deadline's
    fifo_batch), the value a point that chooses another scheduler keeps it at: the current
    value, or the kernel's default where its scheduler is not in force (SchedulerParameter).
    """

    dimensions: tuple[Dimension, ...]
    none_depth: Mapping[str, int] = field(default_factory=dict)
    resting: Mapping[tuple[str, str], Value] = field(default_factory=dict)

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

        These rules stay here, not in the tunables: each ties two dimensions of one point
        (a tunable's `dimension` sees one key on one target), and the optimiser draws every
        dimension on its own, so only the whole point can be made one the kernel will run.

        - vm.dirty_background_bytes must stay below vm.dirty_bytes: when it does not, it becomes
          half of dirty_bytes, the threshold the kernel falls back to in that case
          (domain_dirty_limits in mm/page-writeback.c), so the repaired point is the one the
          kernel would really run.
        - block.nr_requests with scheduler none is capped at the hardware depth, as the kernel
          refuses more (EINVAL).
        - A scheduler's own parameter (block.bfq_slice_idle, block.deadline_fifo_batch) in a
          point that chooses another scheduler rests at its `resting` value, and the trial
          does not write it (`host_settings`): the device would not have the file. The
          dimension stays (the optimiser needs every point whole) but only the points that
          choose its scheduler move it, so the search varies the scheduler and its parameters
          together instead of fixing the scheduler whenever it tries a parameter.
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
        for name in self.resting:
            if name in fixed and not self.active(fixed, name):
                fixed[name] = self.resting[name]
        return fixed

    def active(self, point: Mapping[tuple[str, str], Value], name: tuple[str, str]) -> bool:
        """False for a scheduler parameter whose scheduler `point` does not choose; True for
        every other dimension (and where the point leaves the scheduler as it is)."""
        key, target = name
        impl = IMPLEMENTATIONS.get(key)
        if not isinstance(impl, SchedulerParameter):
            return True
        chosen = point.get((Scheduler.key, target))
        return chosen is None or chosen == impl.scheduler

    def host_settings(
        self, point: Mapping[tuple[str, str], Value]
    ) -> dict[tuple[str, str], Value | tuple[int, ...]]:
        """What a trial at `point` writes on the host: its settings without the application's
        parameters and without the scheduler parameters its scheduler does not have, each
        as the whole value the key takes (a searched tcp_rmem max with its min and default:
        `Dimension.whole`)."""
        dims = {d.name: d for d in self.dimensions}
        return {
            name: dims[name].whole(value) if name in dims else value
            for name, value in point.items()
            if name[1] != APP and self.active(point, name)
        }

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


APP_MAX_BS = 4 << 20
APP_MAX_NUMJOBS = 8
"""The largest bs and numjobs --app-params may try (a user's file is bounded by both)."""


def app_dimensions() -> list[Dimension]:
    """fio's bs (bytes, powers of two 4 KiB..4 MiB), iodepth 1..64, numjobs 1..8, direct."""
    return [
        Dimension("bs", APP, "int", 4096, APP_MAX_BS, log=True, pow2=True),
        Dimension("iodepth", APP, "int", 1, 64, log=True),
        Dimension("numjobs", APP, "int", 1, APP_MAX_NUMJOBS),
        Dimension("direct", APP, "categorical", choices=(0, 1)),
    ]


def space_for(
    sys: SysRoot,
    targets: Mapping[str, Sequence[str]],
    keys: Iterable[str] | None = None,
    *,
    context: SpaceContext | None = None,
    app: bool = False,
) -> SearchSpace:
    """The space a tune searches: every wanted key's dimension on every target of its scope.

    `targets` maps a scope ("device", "host") to its targets; `keys` (default: every key of
    the registry) are the keys wanted. Each tunable says from the files below `sys` and from
    `context` (dirtyable memory, the stack's layers) what a tune may try on a target, or that
    it is not searched there (tuner/tunables: `Tunable.dimension`). Dimensions come in the
    registry's order, key by key; `app` adds fio's parameters (only with --app-params).
    """
    wanted = set(IMPLEMENTATIONS) if keys is None else set(keys)
    context = context or SpaceContext()
    context = replace(context, keys=frozenset(wanted) if context.keys is None else context.keys)
    devices = list(targets.get("device", ()))
    depths = {dev: context.none_depth.get(dev) or none_depth(sys, dev) for dev in devices}
    context = replace(context, none_depth=depths)
    dims: list[Dimension] = []
    resting: dict[tuple[str, str], Value] = {}
    for key, tunable in IMPLEMENTATIONS.items():
        if key not in wanted:
            continue
        for target in targets.get(tunable.scope, ()):
            dim = tunable.dimension(sys, target, context)
            if dim is not None:
                dims.append(dim)
                if isinstance(tunable, SchedulerParameter):
                    resting[dim.name] = dim.snap(tunable.resting(sys, dim.target))
    if app:
        dims.extend(app_dimensions())
    return SearchSpace(tuple(dims), depths, resting)
