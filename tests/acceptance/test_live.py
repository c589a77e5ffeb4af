"""A read-only probe of the machine the tests run on."""

from __future__ import annotations

import os

import psutil
import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tuner.topology.model import BlockDevice, NumaNode, PciFunction

# Each reads the block devices of the whole host (pyproject.toml, whole_host).
pytestmark = [pytest.mark.live, pytest.mark.whole_host]


def test_live_host_topology_matches_what_the_kernel_says() -> None:
    topology = probe_host(HostFS("/"))
    numa = topology.of_type(NumaNode)
    assert sorted(cpu for node in numa for cpu in node.cpus) == sorted(topology.cpu.online)
    assert len(topology.cpu.online) == psutil.cpu_count()
    assert len(topology.of_type(PciFunction)) == len(os.listdir("/sys/bus/pci/devices"))
    names = {b.name for b in topology.of_type(BlockDevice)}
    assert set(os.listdir("/sys/block")) <= names
    for name in os.listdir("/sys/block"):
        real = os.path.realpath(f"/sys/block/{name}")
        dev = topology.block_device(name)
        assert dev is not None
        on_pci = "/pci" in real
        assert (topology.pci_function_of(dev.id) is not None) == on_pci, name
        with open(f"/sys/block/{name}/size") as fh:
            assert dev.size_bytes == int(fh.read()) * 512
    assert topology.tcp.congestion_control is not None
    assert any(irq.counts and sum(irq.counts) > 0 for irq in topology.irqs)
