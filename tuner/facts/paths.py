"""Shared paths: how far each component that several devices share is oversubscribed.

A component is a storage controller (its PCIe link), a SAS or SATA port carrying more than one
disk (lanes x lane rate), a PCI bridge, root port or switch port with controllers or NICs below
(its own PCIe link), and a PCI host bridge with disks or NICs below (capacity unknown: sysfs
does not say what the socket's root complex or inter-socket link carries).

Both ends of a PCIe link report it, so a bridge whose only child function trains the same link
(a root port above a switch's upstream port, a downstream port above its one HBA) is the same
path as that child and is not listed twice: the child, nearer the devices, stands for it.
"""

from __future__ import annotations

from tuner.facts.index import Below, TopologyIndex
from tuner.facts.links import pcie_mbps, port_capacity_mbps
from tuner.facts.target import Target
from tuner.topology.model import PciFunction, PciHostBridge, StoragePort

KIND = "path"
PORT_KINDS = frozenset(("sas_port", "ata_port"))


def demand_mbps(below: Below, rates: dict[str, float | None]) -> float | None:
    """Sum of the expected streaming rates of the disks below; None when none is known.

    Disks of unknown rate add nothing, so a mixed set gives a floor rather than no answer.
    """
    known = [rate for dev in below.disks if (rate := rates.get(dev.name)) is not None]
    if below.disks and not known:
        return None
    return round(sum(known), 1)


def oversubscription(demand: float | None, capacity: float | None) -> float | None:
    """demand / capacity, to two places (3200 over 2400 -> 1.33); None when either is unknown."""
    if demand is None or not capacity:
        return None
    return round(demand / capacity, 2)


def is_pass_through(ix: TopologyIndex, bridge: PciFunction) -> bool:
    """True when a bridge's only child function trains the same link (one link, two ends)."""
    children = [n for n in ix.topology.children(bridge.id) if isinstance(n, PciFunction)]
    if len(children) != 1:
        return False
    up, down = bridge.link, children[0].link
    if up is None or down is None or None in (up.speed_gts, up.width):
        return False
    return (up.speed_gts, up.width) == (down.speed_gts, down.width)


def path_facts(
    ix: TopologyIndex, name: str, component: str, capacity: float | None, below: Below
) -> dict[str, object]:
    """The catalogue's facts of one shared component."""
    demand = demand_mbps(below, ix.rate)
    behind_bridge = component in ("bridge", "root_port")
    return {
        "name": name,
        "component": component,
        "capacity_mbps": capacity,
        "demand_mbps": demand,
        "oversubscription": oversubscription(demand, capacity),
        "disk_count": len(below.disks),
        "controller_count": len(below.controllers),
        "nic_count": len(below.network),
        "controllers": ",".join(fn.address for fn in below.controllers),
        "nics": ",".join(nic.name for nic in below.nics),
        # The whole root complex always holds both on a server: only a bridge says they share.
        "has_nic_and_storage": behind_bridge and bool(below.controllers and below.network),
    }


def bridge_component(ix: TopologyIndex, bridge: PciFunction) -> str:
    """root_port for a bridge directly on a host bridge, else bridge (switch ports)."""
    parent = ix.topology.node(bridge.parent) if bridge.parent else None
    return "root_port" if isinstance(parent, PciHostBridge) else "bridge"


def path_targets(ix: TopologyIndex) -> list[Target]:
    """Every shared component with its demand, capacity and what sits below it."""
    targets = []
    for fn in ix.storage_controllers:
        facts = path_facts(ix, fn.address, "controller", pcie_mbps(fn.link), ix.below_of(fn.id))
        targets.append(Target(KIND, fn.address, facts))
    for port in ix.topology.of_type(StoragePort):
        below = ix.below_of(port.id)
        if port.kind in PORT_KINDS and len(below.disks) > 1:
            facts = path_facts(ix, port.name, "port", port_capacity_mbps(port), below)
            targets.append(Target(KIND, port.name, facts))
    for fn in ix.functions:
        below = ix.below_of(fn.id)
        if not fn.is_bridge or not (below.controllers or below.network):
            continue
        if is_pass_through(ix, fn):
            continue
        component = bridge_component(ix, fn)
        facts = path_facts(ix, fn.address, component, pcie_mbps(fn.link), below)
        targets.append(Target(KIND, fn.address, facts))
    for host in ix.topology.of_type(PciHostBridge):
        below = ix.below_of(host.id)
        if below.disks or below.nics:
            facts = path_facts(ix, host.name, "host_bridge", None, below)
            targets.append(Target(KIND, host.name, facts))
    return targets
