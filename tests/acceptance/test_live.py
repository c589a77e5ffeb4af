"""A read-only probe of the machine the tests run on."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import psutil
import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tuner.topology.model import BlockDevice, NumaNode, PciFunction, Topology

# Each reads the block devices of the whole host (pyproject.toml, whole_host).
pytestmark = [pytest.mark.live, pytest.mark.whole_host]


def kernel_block_devices() -> dict[str, tuple[str, int]]:
    """Each block device in /sys/block: its diskseq (the kernel gives a loop device a new one
    each time a file is attached) and its size in bytes, as the kernel says now. A device gone
    between listing and reading is left out, as if it had gone before."""
    found: dict[str, tuple[str, int]] = {}
    for name in os.listdir("/sys/block"):
        base = Path("/sys/block", name)
        try:
            seq = (base / "diskseq").read_text().strip() if (base / "diskseq").exists() else ""
            found[name] = (seq, int((base / "size").read_text()) * 512)
        except OSError:
            continue
    return found


def what_changed(before: dict[str, tuple[str, int]], after: dict[str, tuple[str, int]]) -> str:
    """The devices that appeared, vanished or changed (a new diskseq or size), in one line."""
    said = [f"{n} appeared" for n in sorted(after.keys() - before.keys())]
    said += [f"{n} vanished" for n in sorted(before.keys() - after.keys())]
    said += [f"{n} changed from diskseq {before[n][0]}, {before[n][1]} bytes to diskseq "
             f"{after[n][0]}, {after[n][1]} bytes"
             for n in sorted(before.keys() & after.keys()) if before[n] != after[n]]  # fmt: skip
    return "; ".join(said)


def steady_probe() -> tuple[Topology, dict[str, tuple[str, int]]]:
    """The host probed between two equal readings of its block devices, and that reading.

    whole_host runs this test alone (scripts/test's serial phase; never on an xdist worker:
    tests/conftest.py), but a loop device's detach finishes in the kernel and udev after
    `losetup -d` returns: one that a test before this one freed may still change. Such a
    change is reported (a warning naming the devices) and the probe taken once more; a second
    change fails the test, naming them again."""
    for attempt in (1, 2):
        before = kernel_block_devices()
        topology = probe_host(HostFS("/"))
        after = kernel_block_devices()
        if before == after:
            return topology, after
        changed = what_changed(before, after)
        if attempt == 1:
            warnings.warn(f"block devices changed during the probe, probed again: {changed}",
                          stacklevel=2)  # fmt: skip
    pytest.fail(f"block devices changed during both probes: {changed}")


def test_live_host_topology_matches_what_the_kernel_says() -> None:
    topology, devices = steady_probe()
    numa = topology.of_type(NumaNode)
    assert sorted(cpu for node in numa for cpu in node.cpus) == sorted(topology.cpu.online)
    assert len(topology.cpu.online) == psutil.cpu_count()
    assert len(topology.of_type(PciFunction)) == len(os.listdir("/sys/bus/pci/devices"))
    names = {b.name for b in topology.of_type(BlockDevice)}
    assert set(devices) <= names
    for name, (_, size_bytes) in devices.items():
        real = os.path.realpath(f"/sys/block/{name}")
        dev = topology.block_device(name)
        assert dev is not None
        on_pci = "/pci" in real
        assert (topology.pci_function_of(dev.id) is not None) == on_pci, name
        assert dev.size_bytes == size_bytes, name
    assert topology.tcp.congestion_control is not None
    assert any(irq.counts and sum(irq.counts) > 0 for irq in topology.irqs)
