"""Storage stacks: md, dm and loop details, the edges between devices, multi-device btrfs."""

from __future__ import annotations

from probes.hostfs import HostFS
from probes.stacks import probe_btrfs, read_loop, read_md
from probes.storage import StorageFound, probe_storage
from tests.probes.storage_fixtures import (
    VIRTUAL,
    dm_on,
    full_host,
    lab_loops,
    md_raid5,
    sas_disks,
    sata_disk,
    virtual_disk,
)
from tests.sysfs_tree import SysTree
from tuner.topology.model import BlockDevice, DmInfo, LoopInfo, MdInfo, MultiDeviceFs, StackEdge


def blocks(found: StorageFound) -> dict[str, BlockDevice]:
    return {n.name: n for n in found.nodes if isinstance(n, BlockDevice)}


def test_md_raid5_over_three_partitions(tree: SysTree) -> None:
    md_raid5(tree, sas_disks(tree))
    fs = HostFS(tree.root)
    found = probe_storage(fs)
    md0 = blocks(found)["md0"]
    assert md0.md == MdInfo("raid5", 512 * 1024, 3, ("sdb1", "sdc1", "sdd1"))
    assert md0.kind == "md" and md0.parent == "machine"
    members = [e for e in found.edges if e.upper == "md0"]
    assert members == [StackEdge("md0", f"{d}1", "member") for d in ("sdb", "sdc", "sdd")]
    assert StackEdge("sdb1", "sdb", "partition") in found.edges
    assert fs.warnings == []


def test_md_members_from_slaves_when_md_dir_lists_none(tree: SysTree) -> None:
    parts = sas_disks(tree)
    md0 = md_raid5(tree, parts)
    for name in ("sdb1", "sdc1", "sdd1"):
        (tree.root / md0 / f"md/dev-{name}/block").unlink()
        (tree.root / md0 / f"md/dev-{name}").rmdir()
    tree.file(f"{md0}/md/level", "raid1")
    tree.file(f"{md0}/md/chunk_size", 0)
    assert read_md(HostFS(tree.root), "sys/block/md0") == MdInfo(
        "raid1", None, 3, ("sdb1", "sdc1", "sdd1")
    )


def test_dm_on_a_partition(tree: SysTree) -> None:
    sda = sata_disk(tree)
    dm_on(tree, f"{sda}/sda2")
    found = probe_storage(HostFS(tree.root))
    dm0 = blocks(found)["dm-0"]
    assert dm0.dm == DmInfo(name="vg0-lv0", uuid="LVM-Xy12abc")
    assert dm0.kind == "dm"
    assert StackEdge("dm-0", "sda2", "dm") in found.edges


def test_loop_backed_by_a_file_on_a_mounted_loop_device(tree: SysTree) -> None:
    sata_disk(tree)
    lab_loops(tree)
    fs = HostFS(tree.root)
    found = probe_storage(fs)
    devs = blocks(found)
    assert devs["loop4"].loop == LoopInfo(
        backing_file="/mnt/iotuner-bus/disk4.img",
        backing_device="loop3",
        offset_bytes=0,
        direct_io=True,
    )
    assert StackEdge("loop4", "loop3", "loop") in found.edges
    # The bus image itself sits on the root file system, on sda1.
    assert StackEdge("loop3", "sda1", "loop") in found.edges
    assert devs["loop3"].fs_type == "ext4"
    assert fs.warnings == []


def test_loop_backing_file_deleted_or_on_no_block_device(tree: SysTree) -> None:
    sata_disk(tree)
    virtual_disk(tree, "loop1", "7:1", {"loop/backing_file": "/tmp/old.img (deleted)"})
    virtual_disk(tree, "loop2", "7:2", {"loop/backing_file": "/dev/shm/ram.img"})
    tree.file("proc/mounts", "/dev/sda1 / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n")
    found = probe_storage(HostFS(tree.root))
    devs = blocks(found)
    loop1, loop2 = devs["loop1"].loop, devs["loop2"].loop
    assert loop1 is not None and loop1.backing_device == "sda1"
    assert loop2 is not None and loop2.backing_device is None
    assert [e.upper for e in found.edges if e.kind == "loop"] == ["loop1"]


def test_unbound_loop_is_still_a_loop_device(tree: SysTree) -> None:
    virtual_disk(tree, "loop0", "7:0", {"size": 0})
    assert read_loop(HostFS(tree.root), "sys/block/loop0") == LoopInfo(None, None, None, None)
    loop0 = blocks(probe_storage(HostFS(tree.root)))["loop0"]
    assert loop0.kind == "loop" and loop0.parent == "machine"


def test_btrfs_raid0_over_two_loop_devices(tree: SysTree) -> None:
    lab_loops(tree)
    found = probe_storage(HostFS(tree.root))
    assert found.filesystems == (
        MultiDeviceFs(
            fstype="btrfs",
            uuid="4f1c2a9e-8d7b-4c3e-9a1f-2b3c4d5e6f70",
            label="scratch",
            devices=("loop5", "loop6"),
            data_profile="raid0",
        ),
    )
    # btrfs is not a block device: no edge and no node for it.
    assert all(e.kind != "fs" for e in found.edges)
    assert {blocks(found)[n].fs_type for n in ("loop5", "loop6")} == {"btrfs"}


def test_btrfs_profile_prefers_the_chosen_one_over_leftover_single(tree: SysTree) -> None:
    base = "sys/fs/btrfs/0a1b2c3d-0000-4000-8000-00000000abcd"
    tree.dir(f"{base}/allocation/data/single").dir(f"{base}/allocation/data/raid1")
    tree.file(f"{base}/label", "")
    (found,) = probe_btrfs(HostFS(tree.root))
    assert (found.data_profile, found.label, found.devices) == ("raid1", None, ())


def test_edges_are_deduplicated(tree: SysTree) -> None:
    full_host(tree)
    edges = probe_storage(HostFS(tree.root)).edges
    assert len(edges) == len(set(edges))


def test_slaves_link_to_nowhere_warns(tree: SysTree) -> None:
    md0 = md_raid5(tree, sas_disks(tree))
    tree.link(f"{md0}/slaves/sdz1", "../../../pci0000:00/gone/sdz1")
    fs = HostFS(tree.root)
    found = probe_storage(fs)
    assert len([e for e in found.edges if e.upper == "md0"]) == 3
    assert fs.warnings == [
        "sys/block/md0/slaves/sdz1: dangling link (../../../pci0000:00/gone/sdz1)"
    ]


def test_missing_md_and_dm_attributes_give_none(tree: SysTree) -> None:
    tree.dir(f"{VIRTUAL}/md9")
    virtual_disk(tree, "md9", "9:9", {})
    virtual_disk(tree, "dm-3", "253:3", {})
    devs = blocks(probe_storage(HostFS(tree.root)))
    assert devs["md9"].md == MdInfo(None, None, None, ())
    assert devs["dm-3"].dm == DmInfo(None, None)
