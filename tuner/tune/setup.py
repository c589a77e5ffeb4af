"""What a tune searches on a target: its space, the current settings, the rules' suggestions."""

from __future__ import annotations

from typing import Any

from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.rules.engine import evaluate
from tuner.rules.model import RuleBase, Workload
from tuner.search.space import APP, Point, SearchSpace, Value, space_for
from tuner.topology import Topology
from tuner.trials.fio import fio_size, writes
from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError


def tune_space(
    topology: Topology, devices: tuple[str, ...], workload: Workload, app: bool
) -> SearchSpace:
    """Queue settings of the device the I/O enters, dirty ratios when the workload writes."""
    entry = devices[0]  # the layer reads and writes enter: DESIGN.md, "tune the layer..."
    dev = topology.block_device(entry)
    queues = {entry: dev.queue} if dev is not None and dev.queue is not None else {}
    vm = topology.vm if writes(workload.fio) else None
    return space_for(queues, vm, app=app)


def current_point(space: SearchSpace, tunables: Tunables, workload: Workload) -> Point:
    """The host as it is, on the space's grid (application parameters: the workload's own)."""
    raw: dict[tuple[str, str], Any] = {}
    for dim in space.dimensions:
        fallback = dim.choices[0] if dim.kind == "categorical" else dim.low
        if dim.target == APP:
            raw[dim.name] = _app_value(dim.key, workload.fio.get(dim.key), fallback)
            continue
        try:
            raw[dim.name] = tunables.read(dim.key, dim.target)
        except TunableError:
            raw[dim.name] = fallback
    return space.repair(space.snap(raw))


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


def recommended_points(
    base: RuleBase, topology: Topology, workload: Workload, space: SearchSpace, current: Point
) -> list[Point]:
    """The rule base's recommendations for this host and workload, as one point of the space."""
    result = evaluate(base, collect(topology, FactOptions(live=True)), workload.name)
    names = set(space.names())
    suggested = dict(current)
    for finding in result.findings:
        for setting in finding.settings:
            slot = (setting.key, setting.target)
            if slot in names and setting.value is not None:
                suggested[slot] = setting.value
    if suggested == current:
        return []
    return [space.repair(space.snap(suggested))]
