"""The storage probe as the host assembler sees it: one call, a consistent tree and stacks."""

from __future__ import annotations

import dataclasses

import pytest

from probes.hostfs import HostFS
from probes.ids import MACHINE_ID, block_id, port_id
from probes.storage import StorageFound, probe_storage
from tests.probes.storage_fixtures import full_host, virtual_disk
from tests.sysfs_tree import SysTree
from tuner.topology.model import BlockDevice, StackEdge, StoragePort


def test_full_host_tree_is_consistent(tree: SysTree) -> None:
    full_host(tree)
    fs = HostFS(tree.root)
    found = probe_storage(fs)
    ids = [node.id for node in found.nodes]
    assert len(ids) == len(set(ids))
    for node in found.nodes:
        assert node.parent is not None
        assert node.parent in ids or node.parent == MACHINE_ID or node.parent.startswith("pci:")
    names = {n.name for n in found.nodes if isinstance(n, BlockDevice)}
    assert names == {
        *("sda", "sda1", "sda2", "sdb", "sdb1", "sdc", "sdc1", "sdd", "sdd1", "nvme0n1"),
        *("md0", "dm-0", "loop3", "loop4", "loop5", "loop6"),
    }
    assert all(isinstance(n, StoragePort | BlockDevice) for n in found.nodes)
    assert fs.warnings == []


def test_disks_hang_from_their_last_hop(tree: SysTree) -> None:
    full_host(tree)
    found = probe_storage(HostFS(tree.root))
    parents = {n.name: n.parent for n in found.nodes}
    assert parents["sda"] == port_id("0:0:0:0")
    assert parents["sdc"] == port_id("4:0:1:0")
    assert parents["nvme0n1"] == port_id("nvme0")
    assert parents["sda2"] == block_id("sda")
    assert parents["md0"] == parents["loop4"] == MACHINE_ID


def test_mounted_devices_get_their_file_system_type(tree: SysTree) -> None:
    full_host(tree)
    found = probe_storage(HostFS(tree.root))
    fs_types = {n.name: n.fs_type for n in found.nodes if isinstance(n, BlockDevice)}
    assert (fs_types["sda1"], fs_types["loop3"], fs_types["sda2"]) == ("ext4", "ext4", None)
    assert [m.kname for m in found.mounts if m.kname] == ["sda1", "loop3", "loop5"]


def test_loop_backing_file_under_an_escaped_mount_point(tree: SysTree) -> None:
    virtual_disk(tree, "loop3", "7:3", {})
    virtual_disk(tree, "loop4", "7:4", {"loop/backing_file": "/mnt/lab bus/disk4.img"})
    tree.file("proc/self/mounts", r"/dev/loop3 /mnt/lab\040bus ext4 rw 0 0")
    found = probe_storage(HostFS(tree.root))
    assert found.edges == (StackEdge("loop4", "loop3", "loop"),)


def test_result_is_frozen(tree: SysTree) -> None:
    found = probe_storage(HostFS(tree.root))
    assert found == StorageFound(nodes=(), edges=(), mounts=(), filesystems=())
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.nodes = ()  # type: ignore[misc]


def test_broken_tree_warns_and_never_raises(tree: SysTree) -> None:
    full_host(tree)
    sda = "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    tree.file(f"{sda}/size", "abc")
    tree.file(f"{sda}/queue/scheduler", "")
    tree.link("sys/block/loop9", "../devices/virtual/block/loop9")
    tree.link("sys/devices/virtual/block/md0/slaves/sdq1", "../../nowhere/sdq1")
    tree.file("proc/self/mounts", "half-a-line\n/dev/sda1 / ext4 rw 0 0")
    fs = HostFS(tree.root)
    found = probe_storage(fs)
    assert block_id("sda") in {n.id for n in found.nodes}
    assert fs.warnings == [
        "sys/block/loop9: dangling link (../devices/virtual/block/loop9)",
        "sys/block/sda/size: expected an integer, got 'abc'",
        "sys/block/sda/queue/scheduler: empty",
        "proc/self/mounts: line 1 has 1 fields, expected at least 3",
        "sys/block/md0/slaves/sdq1: dangling link (../../nowhere/sdq1)",
    ]
