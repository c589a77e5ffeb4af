"""What a tune searches on a target: its space, the current settings, the rules' suggestions."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from probes.hostfs import HostFS, digits
from tuner.facts import collect
from tuner.facts.host import dirty_limit_bytes
from tuner.facts.target import FactOptions
from tuner.rules.engine import evaluate
from tuner.rules.model import Finding, RuleBase, Workload
from tuner.rules.to_plan import plan_from_findings
from tuner.search.space import APP, HOST, Point, SearchSpace, SpaceContext, Value, space_for
from tuner.topology.model import Machine, Topology
from tuner.topology.walk import queues_below, reads_enter
from tuner.trials.fio import fio_size, is_buffered, reads, writes
from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError
from tuner.tunables.domain import Dimension, widened
from tuner.tunables.sysroot import SysRoot
from tuner.tune.objective import objective_for


@dataclass(frozen=True)
class TuneSetup:
    """What a tune starts from: the host's topology, the space over the target's devices, the
    point the host is at now (the baseline) and the rule base's suggestions."""

    topology: Topology
    space: SearchSpace
    baseline: Point
    suggested: list[Point]


def prepare_tune(
    base: RuleBase,
    topology: Topology,
    devices: tuple[str, ...],
    workload: Workload,
    tunables: Tunables,
    *,
    app: bool = False,
    read_devices: Collection[str] = (),
) -> TuneSetup:
    """The one set-up `iotuner tune` (and through it the daemon's re-tune) and the tune
    benchmark share: the space over the target's storage stack (tune_space) cut to the
    findings' ranges (bounded), the current point read through `tunables` (current_point) and
    the rules' suggestions (recommended_points), with dirty thresholds counted in the host's
    dirtyable bytes."""
    dirtyable = host_dirtyable_bytes(topology)
    findings = tune_findings(base, topology, workload, read_devices)
    space = tune_space(topology, devices, workload, app, dirtyable, sys=tunables.sys)
    baseline = current_point(space, tunables, workload, dirtyable)
    space = bounded(space, findings, baseline)
    suggested = recommended_points(base, topology, workload, space, baseline, dirtyable,
                                   read_devices=read_devices, findings=findings)  # fmt: skip
    return TuneSetup(topology, space, baseline, suggested)


def tune_space(
    topology: Topology,
    devices: tuple[str, ...],
    workload: Workload,
    app: bool,
    dirtyable: int | None = None,
    *,
    sys: SysRoot | None = None,
) -> SearchSpace:
    """Every searchable key of the registry over the target's storage stack, domains read
    below `sys` (default: the topology's root).

    The I/O enters at `devices[0]` (DESIGN.md: tune the layer the reads enter): readahead
    there (a partition's disk), the request-queue keys on every device below it whose queue
    the requests wait in (an md array's or dm volume's members; a plain disk or a loop device
    itself). The other devices of a multi-device file system are not added: btrfs reads ahead
    through its own window, and the stripe lab's rows are measured on the first member.
    Readahead only when the workload reads (a pure writer's plan should not carry a readahead
    its trials could not feel), dirty thresholds when it writes, in bytes of `dirtyable`
    memory (default: `host_dirtyable_bytes(topology)`; a host on the ratios counts as the
    bytes they amount to, so the space holds the baseline). Without a dirtyable figure they
    are left out. The keys an expert adds for hard disks and small random requests (merging,
    completion CPU, writeback throttling, the scheduler's own parameters) say themselves
    where the workload can feel them (their `dimension`, from `small_random`, `buffered` and
    the device's rotational flag).
    """
    if sys is None:
        sys = SysRoot(topology.root)
    entry = reads_enter(topology, devices[0])
    queued = queues_below(topology, devices[0])
    if writes(workload.fio) and dirtyable is None:
        dirtyable = host_dirtyable_bytes(topology)
    context = SpaceContext(
        dirtyable=dirtyable,
        reads=reads(workload.fio),
        writes=writes(workload.fio),
        entries=frozenset({entry}),
        queued=frozenset(queued),
        small_random=objective_for(workload.fio) == "iops",
        buffered=is_buffered(workload.fio),
    )
    targets = {"device": list(dict.fromkeys((entry, *queued))), "host": [HOST]}
    return space_for(sys, targets, context=context, app=app)


def tune_findings(
    base: RuleBase, topology: Topology, workload: Workload, read_devices: Collection[str] = ()
) -> tuple[Finding, ...]:
    """What the rule base finds on this host for this workload. `read_devices`: devices the
    trials read without a file system (a device target); the rules take reads to enter
    there, as on a mounted device. A user's fio job gets the findings of the built-in
    profiles it resembles (`Workload.resembles`)."""
    options = FactOptions(live=True, read_devices=frozenset(read_devices))
    facts = collect(topology, options)
    return evaluate(base, facts, workload.name, workload.resembles).findings


def bounded(space: SearchSpace, findings: tuple[Finding, ...], baseline: Point) -> SearchSpace:
    """`space` with every int dimension a finding gives a `range:` for cut to that range
    (DESIGN.md: the space is what the findings leave open), then widened to hold the
    baseline, so the host as it is stays a measured point. A range outside the hardware's
    domain (or not of numbers) leaves the dimension as the hardware has it."""
    ranges = {(r.key, r.target): r for r in plan_from_findings(findings, "host", None).search}
    dims = []
    for dim in space.dimensions:
        found = ranges.get(dim.name)
        if found is not None and dim.kind == "int":
            dim = _cut(dim, found.low, found.high, baseline.get(dim.name))
        dims.append(dim)
    return replace(space, dimensions=tuple(dims))


def _cut(dim: Dimension, low: object, high: object, current: Value | None) -> Dimension:
    """`dim` within [low, high] and holding `current`; `dim` unchanged when they do not meet."""
    if not isinstance(low, int) or not isinstance(high, int) or bool in (type(low), type(high)):
        return dim
    new_low, new_high = max(dim.low, low), min(dim.high, high)
    if new_low > new_high:
        return dim
    cut = replace(dim, low=new_low, high=new_high)
    return widened(cut, current if isinstance(current, int) else None)


def current_point(
    space: SearchSpace, tunables: Tunables, workload: Workload, dirtyable: int | None = None
) -> Point:
    """The host as it is, on the space's grid (application parameters: the workload's own;
    a setting of several words, the word its dimension searches: `Dimension.part`).

    A dirty threshold the host leaves to its ratio (the bytes read 0) is that ratio of
    `dirtyable`, so the baseline measures the threshold the host really has.
    """
    raw: dict[tuple[str, str], Any] = {}
    for dim in space.dimensions:
        fallback = dim.choices[0] if dim.kind == "categorical" else dim.low
        if dim.target == APP:
            raw[dim.name] = _app_value(dim.key, workload.fio.get(dim.key), fallback)
            continue
        try:
            raw[dim.name] = dim.part(tunables.read(dim.key, dim.target))
            if dim.key in RATIO_OF_BYTES and raw[dim.name] == 0:
                ratio = tunables.read(RATIO_OF_BYTES[dim.key], dim.target)
                in_use = dirty_limit_bytes(0, _as_int(ratio), dirtyable)
                if in_use is None:  # tune_space leaves the thresholds out without dirtyable
                    raise ValueError(f"{dim.key}: no dirtyable memory to turn {ratio} % into")
                raw[dim.name] = in_use
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


# The space varies the dirty thresholds in bytes (ratios are too coarse on large hosts: the
# dirty tunables' `dimension`, tuner/tunables/sysctl.py); the kernel keeps one of each pair,
# and a ratio recommended or in use becomes the byte count it amounts to.
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
        if name.strip() in _MEMINFO_KEYS and fields and digits(fields[0]):
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


def recommended_points(
    base: RuleBase,
    topology: Topology,
    workload: Workload,
    space: SearchSpace,
    current: Point,
    dirtyable: int | None = None,
    read_devices: Collection[str] = (),
    findings: tuple[Finding, ...] | None = None,
) -> list[Point]:
    """The rule base's recommendations for this host and workload, as one point of the space.

    `read_devices` as for `tune_findings`, which gives `findings` when the caller has none. A
    recommended vm.dirty_*_ratio goes
    into its bytes dimension as that share of `dirtyable` (default:
    `host_dirtyable_bytes(topology)`); bytes recommended outright win over translated ones.
    """
    if findings is None:
        findings = tune_findings(base, topology, workload, read_devices)
    names = set(space.names())
    named: dict[tuple[str, str], Value] = {}
    translated: dict[tuple[str, str], Value] = {}
    for finding in findings:
        for setting in finding.settings:
            slot = (setting.key, setting.target)
            twin = (BYTES_OF_RATIO.get(setting.key, ""), HOST)
            if setting.value is None:
                continue
            if slot in names:
                named[slot] = setting.value
            elif twin in names:
                if dirtyable is None:
                    dirtyable = host_dirtyable_bytes(topology)
                in_bytes = dirty_limit_bytes(0, int(setting.value), dirtyable)
                if in_bytes:
                    translated[twin] = in_bytes
    suggested = {**current, **translated, **named}
    if suggested == current:
        return []
    return [space.repair(space.snap(suggested))]
