"""tests/host_settings.py: what moved on the host, and after which lab test."""

from __future__ import annotations

from tests.host_settings import moved, read_settings
from tests.sysfs_tree import SysTree

VM = {"dirty_ratio": 20, "dirty_background_ratio": 10, "dirty_bytes": 0,
      "dirty_background_bytes": 0, "dirty_expire_centisecs": 3000,
      "dirty_writeback_centisecs": 500}  # fmt: skip


def host(tree: SysTree) -> SysTree:
    tree.files("proc/sys/vm", VM)  # type: ignore[arg-type]
    tree.file("proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456")
    return tree


def test_a_host_left_as_found_has_nothing_moved(tree: SysTree) -> None:
    before = read_settings(host(tree).root)
    assert before["net.ipv4.tcp_rmem"] == "4096 131072 6291456"  # as sysctl prints it
    assert "net.core.rmem_max" not in before  # a key this kernel lacks is left out
    assert moved(before, read_settings(tree.root)) == []


def test_tuneds_ratios_left_behind_are_named(tree: SysTree) -> None:
    before = read_settings(host(tree).root)
    tree.file("proc/sys/vm/dirty_ratio", 40).file("proc/sys/vm/dirty_bytes", 0)
    tree.file("proc/sys/net/ipv4/tcp_rmem", "4096 131072 33554432")
    assert moved(before, read_settings(tree.root)) == [
        "vm.dirty_ratio 20 -> 40", "net.ipv4.tcp_rmem 4096 131072 6291456 -> 4096 131072 33554432"
    ]  # fmt: skip
