"""The bandwidth-delay product and the NIC facts."""

from __future__ import annotations

from tests.facts.model import ETHERNET, Host, link
from tuner.facts import FactOptions, collect
from tuner.facts.catalog import NIC_SETTING_FACTS
from tuner.facts.network import bdp_bytes
from tuner.topology.model import NetDevice


def test_bdp_of_10_gbps_over_100_ms() -> None:
    assert bdp_bytes(10, 100) == 125_000_000
    assert bdp_bytes(1, 0.5) == 62_500
    assert bdp_bytes(None, 100) is None
    assert bdp_bytes(10, None) is None


def test_nic_facts_and_virtual_interfaces_left_out() -> None:
    host = Host(numa_nodes=2)
    fn = host.function("0000:81:00.0", host.host_bridge("80"), ETHERNET, link(8.0, 8), numa_node=1)
    host.nic("eth0", fn, speed_mbps=10000, mtu=1500)
    host.nodes.append(NetDevice("net:lo", "machine", "lo", mtu=65536, virtual=True))
    nics = collect(host.build(), FactOptions())["nic"]
    assert [nic.name for nic in nics] == ["eth0"]
    assert nics[0].facts == {
        "name": "eth0",
        "speed_mbps": 10000,
        "mtu": 1500,
        "driver": "ixgbe",
        "pci_address": "0000:81:00.0",
        "numa_node": 1,
        "rx_queues": None,
        # What only the NIC tunables read: None on a topology not observed by them.
        **dict.fromkeys(NIC_SETTING_FACTS),
    }
