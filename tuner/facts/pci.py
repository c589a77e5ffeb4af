"""PCI function facts: the storage and network controllers, their links and what they carry."""

from __future__ import annotations

from probes.pciids import pci_class_name
from tuner.facts.index import TopologyIndex
from tuner.facts.links import pcie_max_mbps, pcie_mbps
from tuner.facts.paths import demand_mbps
from tuner.facts.target import Target
from tuner.topology import PciFunction, PciLink

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


def nic_demand_mbps(ix: TopologyIndex, fn: PciFunction) -> float | None:
    """What a network controller's interfaces carry one way at link speed (10 Gb/s: 1250 MB/s)."""
    speeds = [nic.speed_mbps for nic in ix.below_of(fn.id).nics if nic.speed_mbps]
    return round(sum(speeds) / 8, 1) if speeds else None


def function_facts(ix: TopologyIndex, fn: PciFunction, role: str) -> dict[str, object]:
    """The catalogue's facts of one storage or network controller."""
    link = fn.link
    demand = (
        demand_mbps(ix.below_of(fn.id), ix.rate) if role == "storage" else nic_demand_mbps(ix, fn)
    )
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
        "link_fraction": link_fraction(link),
        "demand_mbps": demand,
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
