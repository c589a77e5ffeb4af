"""The tunables' fixture host (tests/tunables/hostroot.py) with what identities are made of."""

from __future__ import annotations

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import QUEUE, build_host

BACKING = "/dev/shm/lab-disk0.img"
WWN = "0x5000c500a1b2c3d4"


def identity_host(tree: SysTree) -> SysTree:
    """loop3 over BACKING; sda with WWN and serial in udev's database; sdb with nothing."""
    build_host(tree)
    tree.file("sys/block/loop3/loop/backing_file", BACKING)
    tree.file("sys/block/sda/dev", "8:0")
    udev = (f"E:ID_WWN={WWN}", "E:ID_SERIAL=ST4000NM_Z1Z2X3", "E:ID_PATH=pci-0000:00:1f.2-ata-1")
    tree.file("run/udev/data/b8:0", "\n".join(udev))
    tree.files("sys/block/sdb/queue", QUEUE).file("sys/block/sdb/dev", "8:16")
    tree.file("sys/block/sdb/mq/0/nr_tags", 32)
    tree.file("sys/class/net/eth0/address", "52:54:00:12:34:56")
    return tree
