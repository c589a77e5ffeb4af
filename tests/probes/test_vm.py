"""The vm.dirty_* writeback thresholds."""

from __future__ import annotations

from probes.hostfs import HostFS
from probes.vm import probe_vm
from tests.sysfs_tree import SysTree
from tuner.topology.model import VmSettings


def test_dirty_settings_read(tree: SysTree) -> None:
    tree.files(
        "proc/sys/vm",
        {
            "dirty_ratio": 20,
            "dirty_background_ratio": 10,
            "dirty_bytes": 0,
            "dirty_background_bytes": 0,
            "dirty_expire_centisecs": 3000,
        },
    )
    assert probe_vm(HostFS(tree.root)) == VmSettings(20, 10, 0, 0, 3000)


def test_missing_settings_are_unknown_without_warnings(tree: SysTree) -> None:
    tree.file("proc/sys/vm/dirty_ratio", 40)
    fs = HostFS(tree.root)
    assert probe_vm(fs) == VmSettings(dirty_ratio=40)
    assert fs.warnings == []
