"""PCI function facts: the storage and network controllers, their links and what they carry."""

from __future__ import annotations

from probes.pciids import pci_class_name
from tuner.facts.index import TopologyIndex
from tuner.facts.links import pcie_max_mbps, pcie_mbps
from tuner.facts.paths import demand_mbps
from tuner.facts.target import Target
from tuner.topology.model import PciFunction, PciHostBridge, PciLink

KIND = "pci_function"


def downtrained(link: PciLink | None) -> bool | None:
    """True when the link runs slower or narrower than the device allows; None if unknown."""
    if link is None or (link.speed_gts is None and link.width is None):
        return None
    return link.downtrained


def link_fraction(link: PciLink | None) -> float | None:
    """Share of its maximum the link carries as trained (x4 5 GT/s of x8 8 GT/s: 0.25)."""
    now, best = pcie_mbps(link), pcie_max_mbps(link)
    return round(now / best, 2) if now and best else None


def link_partners(ix: TopologyIndex, fn: PciFunction) -> list[PciFunction]:
    """The functions one link carries: every function of `fn`'s device (itself included).

    Functions 0000:60:00.0 and 0000:60:00.1 are two ports of one chip behind one link. SR-IOV
    virtual functions are left out: their traffic is their physical function's.
    """
    device = fn.address.rpartition(".")[0]
    partners = [
        other
        for other in ix.topology.children(fn.parent)
        if isinstance(other, PciFunction)
        and other.address.rpartition(".")[0] == device
        and not other.virtual_function
    ]
    return partners or [fn]


def nic_demand_mbps(ix: TopologyIndex, fn: PciFunction) -> float | None:
    """What the interfaces on a network controller's link carry one way at their link speed
    (two 10 Gb/s ports: 2500 MB/s); ports whose speed is unknown (link down) count nothing."""
    speeds = [
        nic.speed_mbps
        for partner in link_partners(ix, fn)
        for nic in ix.below_of(partner.id).nics
        if nic.speed_mbps
    ]
    return round(sum(speeds) / 8, 1) if speeds else None


def built_in(ix: TopologyIndex, fn: PciFunction) -> str | None:
    """Why a function is part of the board and cannot move to another slot; None if it can.

    The firmware's SMBIOS type 41 records (sysfs `index`) list on-board devices only; a
    function of the same chip counts too. A PCIe endpoint straight on a root bus is integrated
    in the root complex or chipset, unless the firmware names a slot for it (a virtual
    machine's devices sit in slots on its root bus).
    """
    for partner in link_partners(ix, fn):
        if partner.onboard_index is not None:
            label = f" '{partner.label}'" if partner.label else ""
            return f"the firmware lists it as on-board device {partner.onboard_index}{label}"
    parent = ix.topology.node(fn.parent) if fn.parent else None
    if fn.slot is None and isinstance(parent, PciHostBridge):
        return f"it sits on root bus {parent.domain}:{parent.bus}, in no slot"
    return None


def link_short(link_mbps: float | None, demand: float | None) -> bool | None:
    """True when the link carries less than what is below it needs; False when it carries that,
    or when that need is unknown (nothing shows the link short); None without a link."""
    if link_mbps is None:
        return None
    return demand is not None and link_mbps < demand


def function_facts(ix: TopologyIndex, fn: PciFunction, role: str) -> dict[str, object]:
    """The catalogue's facts of one storage or network controller."""
    link = fn.link
    demand = (
        demand_mbps(ix.below_of(fn.id), ix.rate) if role == "storage" else nic_demand_mbps(ix, fn)
    )
    fraction = link_fraction(link)
    short = link_short(pcie_mbps(link), demand)
    why_built_in = built_in(ix, fn)
    return {
        "name": fn.address,
        "role": role,
        "class_name": None if fn.class_code is None else pci_class_name(fn.class_code),
        "link_speed_gts": link.speed_gts if link else None,
        "link_width": link.width if link else None,
        "link_max_speed_gts": link.max_speed_gts if link else None,
        "link_max_width": link.max_width if link else None,
        "link_mbps": pcie_mbps(link),
        "link_max_mbps": pcie_max_mbps(link),
        "downtrained": downtrained(link),
        "link_fraction": fraction,
        "demand_mbps": demand,
        "link_short": short,
        "link_starved": None if fraction is None or short is None else short and fraction < 0.5,
        "built_in": why_built_in is not None,
        "built_in_because": why_built_in,
        "slot": fn.slot,
        "numa_node": ix.numa_node(fn.id),
    }


def controllers_with_roles(ix: TopologyIndex) -> list[tuple[PciFunction, str]]:
    """Storage controllers, then network controllers, each with its role."""
    return [
        *((fn, "storage") for fn in ix.storage_controllers),
        *((fn, "network") for fn in ix.network_controllers),
    ]


def pci_function_targets(ix: TopologyIndex) -> list[Target]:
    """One target per storage or network controller."""
    return [
        Target(KIND, fn.address, function_facts(ix, fn, role))
        for fn, role in controllers_with_roles(ix)
    ]
