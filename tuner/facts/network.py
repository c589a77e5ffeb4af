"""Network facts: the bandwidth-delay product of the path, and each physical interface."""

from __future__ import annotations

from tuner.facts.catalog import NIC_SETTING_FACTS
from tuner.facts.index import TopologyIndex
from tuner.facts.target import Target
from tuner.topology.model import NetDevice


def bdp_bytes(link_gbps: float | None, rtt_ms: float | None) -> int | None:
    """Bytes in flight to fill a path: link_gbps x 1e9 / 8 x rtt_ms / 1000.

    10 Gb/s over 100 ms holds 125,000,000 bytes; a socket buffer smaller than that caps the
    stream at buffer / rtt, whatever the link.
    """
    if link_gbps is None or rtt_ms is None or link_gbps <= 0 or rtt_ms <= 0:
        return None
    return round(link_gbps * 1e9 / 8 * rtt_ms / 1000)


def nic_facts(ix: TopologyIndex, nic: NetDevice) -> dict[str, object]:
    """The catalogue's facts of one physical interface; a setting's fact is None where its
    tunable could not read it (no ethtool output, n/a)."""
    fn = ix.topology.pci_function_of(nic.id)
    settings = dict(nic.settings)
    return {
        **{fact: settings.get(fact) for fact in NIC_SETTING_FACTS},
        "name": nic.name,
        "speed_mbps": nic.speed_mbps,
        "mtu": nic.mtu,
        "driver": nic.driver,
        "pci_address": fn.address if fn else None,
        "numa_node": ix.numa_node(fn.id) if fn else None,
        "rx_queues": nic.rx_queues,
    }


def nic_targets(ix: TopologyIndex) -> list[Target]:
    """One target per physical interface (loopback, bridges, tunnels and the like are left out)."""
    return [Target("nic", nic.name, nic_facts(ix, nic)) for nic in ix.nics]
