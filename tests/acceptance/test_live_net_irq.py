"""The network and IRQ probes on this machine (read-only): eth0 on its PCI function, virtio IRQs."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.hostfs import HostFS
from probes.irq import probe_irqs
from probes.net import probe_net

pytestmark = pytest.mark.live

VIRTIO_VENDOR = "0x1af4"


def virtio_functions() -> set[str]:
    return {
        device.name
        for device in Path("/sys/bus/pci/devices").glob("*")
        if (device / "vendor").exists() and (device / "vendor").read_text().strip() == VIRTIO_VENDOR
    }


def test_eth0_is_found_on_a_pci_function() -> None:
    if not Path("/sys/class/net/eth0").exists():
        pytest.skip("this host has no eth0")
    devices, tcp = probe_net(HostFS("/"))
    eth0 = next(device for device in devices if device.name == "eth0")
    assert eth0.parent is not None and eth0.parent.startswith("pci:")
    assert not eth0.virtual
    assert eth0.mtu and eth0.rx_queues
    lo = next(device for device in devices if device.name == "lo")
    assert (lo.virtual, lo.parent) == (True, "machine")
    assert tcp.tcp_rmem is not None and len(tcp.tcp_rmem) == 3


def test_virtio_devices_have_irqs_with_counts() -> None:
    virtio = virtio_functions()
    if not virtio or not Path("/proc/interrupts").exists():
        pytest.skip("no virtio PCI devices here")
    fs = HostFS("/")
    irqs = probe_irqs(fs)
    owners = {irq.device for irq in irqs if irq.device in virtio}
    assert owners, "no IRQ was attributed to a virtio PCI function"
    counted = [irq for irq in irqs if irq.device in virtio and sum(irq.counts) > 0]
    assert counted
    cpus = len(counted[0].counts)
    assert all(len(irq.counts) == cpus for irq in irqs)
    assert not [w for w in fs.warnings if w.startswith("proc/interrupts")]
