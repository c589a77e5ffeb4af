"""trials/blockdev.py on a fixture root: it reads the host it is handed, never `/` itself."""

from __future__ import annotations

from probes.hostfs import HostFS
from tests.sysfs_tree import SysTree
from tuner.topology.model import Topology
from tuner.trials.blockdev import DEFAULT_READAHEAD_KB, device_bytes, kernel_name, readahead_bytes

DISK = "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sdz"


def _disk(tree: SysTree, readahead_kb: int) -> HostFS:
    tree.files(DISK, {"size": 2048, "dev": "8:400"}).file(
        f"{DISK}/queue/read_ahead_kb", readahead_kb
    )
    tree.files(f"{DISK}/sdz1", {"size": 1024, "dev": "8:401", "partition": 1})
    tree.link_to("sys/class/block/sdz", DISK).link_to("sys/class/block/sdz1", f"{DISK}/sdz1")
    tree.link_to("sys/dev/block/8:400", DISK).link_to("sys/dev/block/8:401", f"{DISK}/sdz1")
    return HostFS(tree.root)


def test_names_and_sizes_come_from_the_root_given(tree: SysTree) -> None:
    fs = _disk(tree, 4096)
    assert kernel_name(fs, (8, 401)) == "sdz1"
    assert kernel_name(fs, (8, 402)) is None
    assert device_bytes(fs, "sdz") == 2048 * 512
    assert device_bytes(fs, "sdq") is None


def test_readahead_is_the_given_roots_window_or_the_kernel_default(tree: SysTree) -> None:
    fs = _disk(tree, 4096)
    nothing = Topology(root=str(tree.root), nodes=(), edges=())
    assert readahead_bytes(fs, ("sdz",), nothing) == 4096 * 1024
    assert readahead_bytes(fs, ("sdq",), nothing) == DEFAULT_READAHEAD_KB * 1024
