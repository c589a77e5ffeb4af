"""Devices grouped by what they share above them: a backing device, port, controller, bridge,
PCI root or NUMA node. A group is a candidate bottleneck: its devices' I/O all crosses it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from probes.hostfs import digits
from tuner.topology.model import (
    BlockDevice,
    NumaNode,
    PciFunction,
    PciHostBridge,
    StoragePort,
    Topology,
)


@dataclass(frozen=True)
class Component:
    """Something several devices' I/O crosses; `kind` says what (bus, port, controller...)."""

    id: str
    kind: str
    name: str

    @property
    def label(self) -> str:
        """ "bus loop1", "controller 0000:03:00.0"."""
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Group:
    """Devices (kernel names, in natural order) that all sit below `component`."""

    component: Component
    devices: tuple[str, ...]


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting loop9 before loop10 and sdb before sdc."""
    parts = re.split(r"(\d+)", name)
    return tuple((0, int(p)) if digits(p) else (1, p) for p in parts if p)


def default_devices(topology: Topology) -> tuple[str, ...]:
    """The whole devices worth scaling: non-empty disks, NVMe namespaces and bound loops.

    Partitions, md and dm sit on disks already counted; a device other loop devices read their
    files from is a shared component of theirs (the lab's bus), not a member.
    """
    backing = {edge.lower for edge in topology.edges if edge.kind == "loop"}
    names = [
        dev.name
        for dev in topology.of_type(BlockDevice)
        if dev.devtype == "disk"
        and dev.kind in ("disk", "nvme", "loop")
        and (dev.size_bytes or 0) > 0
        and dev.name not in backing
        and not dev.name.startswith(("zram", "ram"))  # memory, not storage
    ]
    return tuple(sorted(names, key=natural_key))


def components_above(
    topology: Topology, device: str, bus_names: Mapping[str, str] | None = None
) -> list[Component]:
    """What `device`'s I/O crosses, nearest first: the devices it is stacked on (a loop's
    backing device, a partition's disk), then the tree above it and them, then its NUMA node
    (only on a machine with more than one: otherwise every device shares it)."""
    names = bus_names or {}
    lowers = _stack_below(topology, device)
    found = [Component(f"block:{low}", "bus" if low in names else "backing device", low)
             for low in lowers]  # fmt: skip
    for name in (device, *lowers):
        found += _tree_above(topology, name)
    if len(topology.of_type(NumaNode)) > 1:
        node = topology.numa_node_of(f"block:{device}")
        if node is not None:
            found.append(Component(f"numa:{node}", "NUMA node", str(node)))
    unique: dict[str, Component] = {}
    for comp in found:
        unique.setdefault(comp.id, comp)
    return list(unique.values())


def device_groups(
    topology: Topology, devices: Iterable[str], bus_names: Mapping[str, str] | None = None
) -> list[Group]:
    """Groups of two or more of `devices` below one component. Components covering the very
    same devices (a controller and the bridge above it) make one group, named by the nearest."""
    members: dict[str, list[str]] = {}
    rank: dict[str, int] = {}
    comps: dict[str, Component] = {}
    for device in devices:
        for position, comp in enumerate(components_above(topology, device, bus_names)):
            comps[comp.id] = comp
            members.setdefault(comp.id, []).append(device)
            rank[comp.id] = min(rank.get(comp.id, position), position)
    chosen: dict[tuple[str, ...], str] = {}
    for comp_id, names in members.items():
        if len(names) < 2:
            continue
        key = tuple(sorted(set(names), key=natural_key))
        if key not in chosen or rank[comp_id] < rank[chosen[key]]:
            chosen[key] = comp_id
    groups = [Group(comps[comp_id], key) for key, comp_id in chosen.items()]
    return sorted(groups, key=lambda g: (len(g.devices), natural_key(g.devices[0])))


def _stack_below(topology: Topology, device: str) -> list[str]:
    """The devices `device` sits on, transitively, nearest first."""
    order: list[str] = []
    pending = topology.lower_devices(device)
    while pending:
        name = pending.pop(0)
        if name in order or name == device:
            continue
        order.append(name)
        pending += topology.lower_devices(name)
    return order


def _tree_above(topology: Topology, device: str) -> list[Component]:
    found = []
    for node in topology.ancestors(f"block:{device}"):
        if isinstance(node, StoragePort):
            found.append(Component(node.id, node.kind.replace("_", " "), node.name))
        elif isinstance(node, PciFunction):
            found.append(Component(node.id, _pci_kind(topology, node), node.address or node.name))
        elif isinstance(node, PciHostBridge):
            found.append(Component(node.id, "PCI root", node.name))
    return found


def _pci_kind(topology: Topology, function: PciFunction) -> str:
    if function.is_storage_controller:
        return "controller"
    if function.is_bridge:
        above = topology.node(function.parent) if function.parent else None
        return "root port" if isinstance(above, PciHostBridge) else "PCI bridge"
    return "PCI function"
