"""The mount table: escapes decoded, each block-device source mapped to its kernel name."""

from __future__ import annotations

from probes.hostfs import HostFS
from probes.mounts import (
    mount_holding,
    mounts_by_point,
    probe_mounts,
    read_mount_table,
    unescape,
)
from tests.sysfs_tree import SysTree
from tuner.topology.model import BlockDevice, DmInfo, Mount


def dev(name: str, major: int, minor: int, dm_name: str | None = None) -> BlockDevice:
    dm = DmInfo(dm_name, None) if dm_name else None
    return BlockDevice(id=f"block:{name}", parent=None, name=name, major=major, minor=minor, dm=dm)


DEVICES = [dev("sda1", 8, 1), dev("sda2", 8, 2), dev("dm-0", 253, 0, "vg0-lv0")]


def test_escaped_space_and_options(tree: SysTree) -> None:
    tree.file("proc/self/mounts", r"/dev/sda2 /mnt/lab\040bus ext4 rw,noatime,data=ordered 0 0")
    (mount,) = probe_mounts(HostFS(tree.root), DEVICES)
    assert mount == Mount(
        device="/dev/sda2",
        mountpoint="/mnt/lab bus",
        fstype="ext4",
        options=("rw", "noatime", "data=ordered"),
        kname="sda2",
    )


def test_unescape_tab_newline_backslash() -> None:
    assert unescape(r"a\011b\012c\134d") == "a\tb\nc\\d"


def test_self_mounts_preferred_then_proc_mounts(tree: SysTree) -> None:
    tree.file("proc/mounts", "/dev/sda1 / ext4 rw 0 0")
    assert [m.mountpoint for m in read_mount_table(HostFS(tree.root))] == ["/"]
    tree.file("proc/self/mounts", "/dev/sda2 /srv xfs rw 0 0")
    assert [m.mountpoint for m in read_mount_table(HostFS(tree.root))] == ["/srv"]


def test_kernel_names_of_sources(tree: SysTree) -> None:
    tree.file("dev/sda2", "")
    tree.link("dev/disk/by-uuid/0d2c-11aa", "../../sda2")
    tree.file(
        "proc/self/mounts",
        "\n".join(
            [
                "/dev/sda1 / ext4 rw 0 0",
                "/dev/mapper/vg0-lv0 /data xfs rw 0 0",
                "/dev/vg0/lv0 /data2 xfs rw 0 0",
                "/dev/disk/by-uuid/0d2c-11aa /boot ext4 rw 0 0",
                "/dev/disk/by-uuid/gone /old ext4 rw 0 0",
                "/dev/sdz9 /nowhere ext4 rw 0 0",
                "server:/export /home nfs rw 0 0",
                "tmpfs /tmp tmpfs rw 0 0",
            ]
        ),
    )
    fs = HostFS(tree.root)
    knames = [m.kname for m in probe_mounts(fs, DEVICES)]
    assert knames == ["sda1", "dm-0", "dm-0", "sda2", None, None, None, None]
    assert fs.warnings == []


def test_dev_root_off_the_live_host_stays_unknown(tree: SysTree) -> None:
    tree.file("proc/mounts", "/dev/root / ext3 rw 0 0")
    (mount,) = probe_mounts(HostFS(tree.root), DEVICES)
    assert (mount.device, mount.kname) == ("/dev/root", None)


def test_malformed_line_warns_and_the_rest_is_read(tree: SysTree) -> None:
    tree.file("proc/self/mounts", "/dev/sda1 / ext4 rw 0 0\ngarbage\n\n/dev/sda2 /srv xfs rw 0 0")
    fs = HostFS(tree.root)
    assert [m.mountpoint for m in probe_mounts(fs, DEVICES)] == ["/", "/srv"]
    assert fs.warnings == ["proc/self/mounts: line 2 has 1 fields, expected at least 3"]


def test_no_mount_table_is_empty(tree: SysTree) -> None:
    fs = HostFS(tree.root)
    assert probe_mounts(fs, DEVICES) == [] and fs.warnings == []


def test_mount_holding_takes_the_longest_mount_point() -> None:
    mounts = [
        Mount("/dev/sda1", "/", "ext4", kname="sda1"),
        Mount("/dev/loop3", "/mnt/bus", "ext4", kname="loop3"),
        Mount("/dev/sda2", "/mnt/bus", "ext4", kname="sda2"),  # mounted over loop3
    ]
    by_point = mounts_by_point(mounts)
    assert mount_holding("/mnt/bus/disk1.img", by_point) == mounts[2]
    assert mount_holding("/mnt/bus2/disk1.img", by_point) == mounts[0]
    assert mount_holding("/mnt/bus", by_point) == mounts[2]
    assert mount_holding("/x", {}) is None
