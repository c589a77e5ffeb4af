"""HostFS: reads inside its root, follows links there, and turns bad files into warnings."""

from __future__ import annotations

import os

from probes.hostfs import HostFS, parse_cpulist, parse_cpumask, read_cpulist
from tests.sysfs_tree import SysTree


def test_relative_and_absolute_links_resolve_inside_the_root(tree: SysTree) -> None:
    tree.file("sys/devices/pci0000:00/0000:00:1f.2/vendor", "0x8086")
    tree.link_to("sys/bus/pci/devices/0000:00:1f.2", "sys/devices/pci0000:00/0000:00:1f.2")
    # An absolute target names the captured machine's /sys, not ours.
    tree.link("sys/class/x/abs", "/sys/devices/pci0000:00/0000:00:1f.2")
    fs = HostFS(tree.root)
    assert fs.realpath("sys/bus/pci/devices/0000:00:1f.2") == "sys/devices/pci0000:00/0000:00:1f.2"
    assert fs.read("sys/class/x/abs/vendor") == "0x8086"
    assert fs.read_int("sys/bus/pci/devices/0000:00:1f.2/vendor") == 0x8086
    assert fs.warnings == []


def test_dangling_and_looping_links_read_as_missing(tree: SysTree) -> None:
    tree.link("sys/block/sdz", "../devices/gone/sdz")
    tree.link("sys/loop/a", "b").link("sys/loop/b", "a")
    fs = HostFS(tree.root)
    assert fs.realpath("sys/block/sdz") is None
    assert fs.read("sys/block/sdz/size") is None
    assert fs.realpath("sys/loop/a") is None
    assert fs.listdir("sys/block/sdz") == []


def test_malformed_integer_is_a_warning_naming_the_file(tree: SysTree) -> None:
    tree.file("sys/block/sda/size", "12x4")
    fs = HostFS(tree.root)
    assert fs.read_int("sys/block/sda/size") is None
    assert fs.warnings == ["sys/block/sda/size: expected an integer, got '12x4'"]


def test_expected_missing_and_unreadable_files_warn(tree: SysTree) -> None:
    tree.file("sys/secret", "1")
    os.chmod(tree.root / "sys/secret", 0)
    tree.dir("sys/adir")
    fs = HostFS(tree.root)
    assert fs.read("sys/nothing", expected=True) is None
    assert fs.read("sys/adir") is None
    assert fs.warnings[0] == "sys/nothing: missing"
    assert "sys/adir: is a directory" in fs.warnings[1]
    if os.geteuid() != 0:  # root reads through mode 0
        assert fs.read("sys/secret", expected=True) is None


def test_listdir_records_entries_for_capture(tree: SysTree) -> None:
    tree.file("sys/block/sda/size", 8).file("sys/block/sdb/size", 8)
    fs = HostFS(tree.root)
    assert fs.listdir("sys/block") == ["sda", "sdb"]
    assert {"sys/block/sda", "sys/block/sdb"} <= fs.touched


def test_cpu_lists_and_masks() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpulist("") == ()
    assert parse_cpumask("00000000,000000ff") == tuple(range(8))
    assert parse_cpumask("0000,00000022,22222222") == (1, 5, 9, 13, 17, 21, 25, 29, 33, 37)


def test_malformed_cpulist_warns(tree: SysTree) -> None:
    tree.file("sys/devices/system/cpu/online", "0-a")
    fs = HostFS(tree.root)
    assert read_cpulist(fs, "sys/devices/system/cpu/online") is None
    assert "expected a CPU list" in fs.warnings[0]
