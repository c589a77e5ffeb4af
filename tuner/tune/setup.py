"""What a tune searches on a target: its space, the current settings, the rules' suggestions."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from probes.hostfs import HostFS
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.rules.engine import evaluate
from tuner.rules.model import RuleBase, Workload
from tuner.search.space import APP, HOST, Point, SearchSpace, Value, space_for
from tuner.topology import Machine, Topology
from tuner.trials.fio import fio_size, writes
from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError


def tune_space(
    topology: Topology,
    devices: tuple[str, ...],
    workload: Workload,
    app: bool,
    dirtyable: int | None = None,
) -> SearchSpace:
    """Queue settings of the device the I/O enters, dirty ratios when the workload writes.

    A ratio the host leaves to its bytes twin counts as `ratio_in_use` of `dirtyable` (default:
    `host_dirtyable_bytes(topology)`), so the space holds the baseline.
    """
    entry = devices[0]  # the layer reads and writes enter: DESIGN.md, "tune the layer..."
    dev = topology.block_device(entry)
    queues = {entry: dev.queue} if dev is not None and dev.queue is not None else {}
    vm = topology.vm if writes(workload.fio) else None
    if vm is not None:
        if dirtyable is None:
            dirtyable = host_dirtyable_bytes(topology)
        vm = replace(
            vm,
            dirty_ratio=ratio_in_use(vm.dirty_ratio, vm.dirty_bytes, dirtyable),
            dirty_background_ratio=ratio_in_use(
                vm.dirty_background_ratio, vm.dirty_background_bytes, dirtyable
            ),
        )
    return space_for(queues, vm, app=app)


def current_point(
    space: SearchSpace, tunables: Tunables, workload: Workload, dirtyable: int | None = None
) -> Point:
    """The host as it is, on the space's grid (application parameters: the workload's own).

    A dirty ratio the host leaves to its bytes twin (it reads 0) is that byte count's nearest
    ratio of `dirtyable`, so the baseline measures the threshold the host really has.
    """
    raw: dict[tuple[str, str], Any] = {}
    for dim in space.dimensions:
        fallback = dim.choices[0] if dim.kind == "categorical" else dim.low
        if dim.target == APP:
            raw[dim.name] = _app_value(dim.key, workload.fio.get(dim.key), fallback)
            continue
        try:
            raw[dim.name] = tunables.read(dim.key, dim.target)
            if dim.key in BYTES_OF_RATIO and raw[dim.name] == 0:
                in_bytes = tunables.read(BYTES_OF_RATIO[dim.key], dim.target)
                raw[dim.name] = ratio_in_use(0, _as_int(in_bytes), dirtyable)
        except TunableError:
            raw[dim.name] = fallback
    return space.repair(space.snap(raw))


def _as_int(value: object) -> int | None:
    """An int tunable's value, None for any other kind."""
    return value if isinstance(value, int) else None


def _app_value(key: str, value: Any, fallback: Value) -> Value:
    """A workload's fio option in its dimension's units (bs "16k" -> 16384 bytes, direct 0 or
    1); `fallback` (fio's default) when absent or not one value (a range of block sizes)."""
    if value is None:
        return fallback
    try:
        if key == "bs":
            return fio_size(value)
        if key == "direct":
            return 0 if str(value).strip().lower() in ("0", "false", "no", "off", "") else 1
        return int(value)
    except (TypeError, ValueError):
        return fallback


# The space varies the dirty ratios (they scale with the host, and the kernel keeps one of each
# pair: writing a ratio zeroes its bytes twin); the rules recommend byte counts (a stream needs
# so many MB in flight, whatever the memory). A bytes recommendation becomes its ratio twin.
RATIO_OF_BYTES = {
    "vm.dirty_background_bytes": "vm.dirty_background_ratio",
    "vm.dirty_bytes": "vm.dirty_ratio",
}
BYTES_OF_RATIO = {ratio: in_bytes for in_bytes, ratio in RATIO_OF_BYTES.items()}
_MEMINFO_KEYS = ("MemFree", "Active(file)", "Inactive(file)")


def dirtyable_bytes(meminfo: str) -> int | None:
    """The memory the kernel takes the dirty ratios of, from /proc/meminfo's text.

    mm/page-writeback.c (global_dirtyable_memory) counts free pages plus the file LRU lists
    (Active(file) + Inactive(file)) less the reserves it keeps for itself; meminfo does not show
    those reserves (tens of MB), so this is slightly above the kernel's figure, well inside the
    one percent a ratio can express. None when a line is missing.
    """
    found: dict[str, int] = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name.strip() in _MEMINFO_KEYS and fields and fields[0].isdigit():
            found[name.strip()] = int(fields[0]) * 1024  # meminfo counts kB (KiB)
    if len(found) != len(_MEMINFO_KEYS):
        return None
    return sum(found.values())


def host_dirtyable_bytes(topology: Topology) -> int | None:
    """`dirtyable_bytes` of the probed host's /proc/meminfo; its MemTotal (the figure the rules'
    facts use) when meminfo lacks the lines; None when neither is known."""
    text = HostFS(Path(topology.root)).read("proc/meminfo")
    found = dirtyable_bytes(text) if text is not None else None
    if found is None:
        found = next((m.memory_bytes for m in topology.of_type(Machine) if m.memory_bytes), None)
    return found


def ratio_for_bytes(value: int, dirtyable: int) -> int:
    """The whole percentage of `dirtyable` closest to `value` bytes, at least 1.

    The kernel's threshold for a ratio r is r * dirtyable / 100, so this is the ratio whose
    threshold is nearest the byte count asked for; 0 would mean "start at once" (background)
    or stall every writer (limit), which no byte recommendation means.
    """
    if dirtyable <= 0:
        raise ValueError(f"dirtyable memory {dirtyable}: must be positive")
    return max(1, round(value * 100 / dirtyable))


def ratio_in_use(ratio: int | None, in_bytes: int | None, dirtyable: int | None) -> int | None:
    """A dirty ratio as the kernel applies it: with its bytes twin set the ratio reads 0 and
    the threshold is the twin, as `ratio_for_bytes`; `ratio` itself otherwise (also when
    `dirtyable` is unknown)."""
    if ratio == 0 and in_bytes and dirtyable:
        return ratio_for_bytes(in_bytes, dirtyable)
    return ratio


def recommended_points(
    base: RuleBase,
    topology: Topology,
    workload: Workload,
    space: SearchSpace,
    current: Point,
    dirtyable: int | None = None,
    read_devices: Collection[str] = (),
) -> list[Point]:
    """The rule base's recommendations for this host and workload, as one point of the space.

    `read_devices`: devices the trials read without a file system (a device target); the rules
    take reads to enter there, as on a mounted device. A recommended vm.dirty_*_bytes goes
    into its ratio dimension as `ratio_for_bytes` of `dirtyable` (default:
    `host_dirtyable_bytes(topology)`); a ratio recommended outright wins over a translated one.
    """
    options = FactOptions(live=True, read_devices=frozenset(read_devices))
    result = evaluate(base, collect(topology, options), workload.name)
    names = set(space.names())
    named: dict[tuple[str, str], Value] = {}
    translated: dict[tuple[str, str], Value] = {}
    for finding in result.findings:
        for setting in finding.settings:
            slot = (setting.key, setting.target)
            ratio = (RATIO_OF_BYTES.get(setting.key, ""), HOST)
            if setting.value is None:
                continue
            if slot in names:
                named[slot] = setting.value
            elif ratio in names:
                if dirtyable is None:
                    dirtyable = host_dirtyable_bytes(topology)
                if dirtyable:
                    translated[ratio] = ratio_for_bytes(int(setting.value), dirtyable)
    suggested = {**current, **translated, **named}
    if suggested == current:
        return []
    return [space.repair(space.snap(suggested))]
