"""Which attachment of a block device a value belongs to (tuner/tunables/diskseq.py), on
fixture trees laid out as the kernel shows loop devices, disks and partitions."""

from __future__ import annotations

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import attach, detach
from tuner.tunables.access import Tunables
from tuner.tunables.base import TargetGone, TargetReplaced
from tuner.tunables.diskseq import disk_sequence, replaced, vacant
from tuner.tunables.sysroot import SysRoot


def test_a_disk_and_its_partition_give_the_disks_number(tree: SysTree) -> None:
    """A partition has no diskseq of its own: /sys/class/block/sda1/.. is its disk's."""
    disk = "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    tree.file(f"{disk}/diskseq", 7).file(f"{disk}/sda1/partition", 1)
    tree.link_to("sys/block/sda", disk).link_to("sys/class/block/sda", disk)
    tree.link_to("sys/class/block/sda1", f"{disk}/sda1")
    sys = SysRoot(tree.root)
    assert disk_sequence(sys, "sda") == 7
    assert disk_sequence(sys, "sda1") == 7


@pytest.mark.parametrize("text", [None, "", "-1", "²", "7 8", str(2**64)])
def test_no_number_where_the_kernel_has_none_or_it_is_not_one(
    tree: SysTree, text: str | None
) -> None:
    """Linux before 5.15 has no file; what is not a 64-bit count is not trusted as one."""
    tree.file("sys/block/loop3/size", 0)
    if text is not None:
        tree.file("sys/block/loop3/diskseq", text)
    assert disk_sequence(SysRoot(tree.root), "loop3") is None
    assert disk_sequence(SysRoot(tree.root), "../loop3") is None


def test_a_detached_loop_device_is_vacant_and_one_over_an_empty_file_is_not(
    tree: SysTree,
) -> None:
    sys = SysRoot(tree.root)
    attach(tree, "loop3", 12)
    assert not vacant(sys, "loop3")
    detach(tree, "loop3", 13)
    assert vacant(sys, "loop3")
    attach(tree, "loop3", 14)
    tree.file("sys/block/loop3/size", 0)  # bound to a file of no bytes: someone's all the same
    assert not vacant(sys, "loop3")


def test_replaced_says_why_unless_it_is_the_same_attachment_or_nobodys(tree: SysTree) -> None:
    sys = SysRoot(tree.root)
    attach(tree, "loop3", 12)
    assert replaced(sys, "loop3", 12) is None
    detach(tree, "loop3", 13)
    assert replaced(sys, "loop3", 12) is None, "detached and free: what was found goes back"
    attach(tree, "loop3", 14, backing="/srv/someone-else.img")
    assert replaced(sys, "loop3", 12) == (
        "the device was replaced since the change (diskseq 12 then, 14 now)"
    )


def test_a_block_original_is_saved_with_its_attachment(host: SysTree) -> None:
    tunables = Tunables(host.root)
    assert tunables.save("block.read_ahead_kb", "loop3").diskseq is None, "no file, no number"
    attach(host, "loop3", 12)
    assert tunables.save("block.read_ahead_kb", "loop3").diskseq == 12
    assert tunables.save("block.scheduler", "/dev/loop3").diskseq == 12
    assert tunables.save("vm.dirty_ratio", "host").diskseq is None


def test_restore_writes_nothing_onto_a_device_that_took_the_name(host: SysTree) -> None:
    tunables = Tunables(host.root)
    attach(host, "loop3", 12)
    saved = tunables.save("block.read_ahead_kb", "loop3")
    tunables.write("block.read_ahead_kb", "loop3", 4096)
    detach(host, "loop3", 13)
    attach(host, "loop3", 14)
    with pytest.raises(TargetReplaced) as err:
        tunables.restore("block.read_ahead_kb", "loop3", saved)
    assert str(err.value) == (
        "block.read_ahead_kb on loop3: the device was replaced since the change "
        "(diskseq 12 then, 14 now): left as it is"
    )
    assert isinstance(err.value, TargetGone)
    assert tunables.read("block.read_ahead_kb", "loop3") == 4096, "the new device's own"


def test_restore_of_a_device_that_is_not_there_says_so_not_replaced(host: SysTree) -> None:
    tunables = Tunables(host.root)
    attach(host, "loop3", 12)
    saved = tunables.save("block.read_ahead_kb", "loop3")
    (host.root / "sys/block/loop3").rename(host.root / "sys/block/loop3.gone")
    with pytest.raises(TargetGone, match=r"no such block device \(/sys/block/loop3\)$"):
        tunables.restore("block.read_ahead_kb", "loop3", saved)
