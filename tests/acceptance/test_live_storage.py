"""The storage probe on this machine (read-only): vda behind virtio, loop devices virtual."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from probes.hostfs import HostFS
from probes.ids import MACHINE_ID
from probes.storage import probe_storage
from tuner.topology.model import BlockDevice, StoragePort

# Each reads the block devices of the whole host (pyproject.toml, whole_host).
pytestmark = [pytest.mark.live, pytest.mark.whole_host]


def test_vda_hangs_from_a_virtio_hop_on_a_pci_function() -> None:
    if not Path("/sys/block/vda").exists():
        pytest.skip("this host has no virtio disk vda")
    found = probe_storage(HostFS("/"))
    nodes = {node.id: node for node in found.nodes}
    vda = next(n for n in found.nodes if isinstance(n, BlockDevice) and n.name == "vda")
    hop = nodes[str(vda.parent)]
    assert isinstance(hop, StoragePort) and hop.kind == "virtio"
    assert hop.name == os.path.realpath("/sys/block/vda").split("/")[-3]
    assert hop.parent is not None and hop.parent.startswith("pci:")
    pci = hop.parent.removeprefix("pci:")
    assert f"/{pci}/" in os.path.realpath("/sys/block/vda")
    assert vda.queue is not None and vda.queue.scheduler is not None
    assert vda.size_bytes == int(Path("/sys/block/vda/size").read_text()) * 512


def test_loop_devices_are_virtual() -> None:
    loops = [name for name in os.listdir("/sys/block") if name.startswith("loop")]
    if not loops:
        pytest.skip("this host has no loop devices")
    found = probe_storage(HostFS("/"))
    devices = {n.name: n for n in found.nodes if isinstance(n, BlockDevice)}
    for name in loops:
        assert devices[name].parent == MACHINE_ID, name
        assert devices[name].kind == "loop", name


def test_root_mount_maps_to_a_block_device() -> None:
    found = probe_storage(HostFS("/"))
    names = {n.name for n in found.nodes if isinstance(n, BlockDevice)}
    root = [m for m in found.mounts if m.mountpoint == "/" and m.device.startswith("/dev/")]
    if not root:
        pytest.skip("the root file system is not on a block device here")
    assert root[-1].kname in names
