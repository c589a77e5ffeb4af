"""Block devices: enumeration across sys/block and sys/class/block, attributes, queue settings."""

from __future__ import annotations

import pytest

from probes.block import find_block_dirs, parse_scheduler, read_block_device
from probes.hostfs import HostFS
from probes.ids import block_id
from tests.probes.storage_fixtures import (
    SATA_PCI,
    VIRTUAL,
    disk,
    nvme_disk,
    partition,
    sata_disk,
)
from tests.sysfs_tree import SysTree
from tuner.topology.model import BlockDevice, PartitionInfo


def devices(fs: HostFS) -> dict[str, BlockDevice]:
    return {e.name: read_block_device(fs, e, "parent") for e in find_block_dirs(fs)}


def test_sata_disk_attributes(tree: SysTree) -> None:
    sata_disk(tree)
    fs = HostFS(tree.root)
    sda = devices(fs)["sda"]
    assert (sda.id, sda.devtype, sda.major, sda.minor) == (block_id("sda"), "disk", 8, 0)
    assert sda.size_bytes == 100 * 1024**3
    assert (sda.rotational, sda.removable) == (True, False)
    assert (sda.model, sda.vendor, sda.wwn) == ("Samsung SSD 870", "ATA", "naa.5002538e40a1b2c3")
    assert sda.partition is None and sda.kind == "disk"
    assert fs.warnings == []


def test_queue_settings(tree: SysTree) -> None:
    sata_disk(tree)
    queue = devices(HostFS(tree.root))["sda"].queue
    assert queue is not None
    assert (queue.scheduler, queue.schedulers) == ("none", ("mq-deadline", "kyber", "none"))
    assert (queue.read_ahead_kb, queue.nr_requests, queue.write_cache) == (128, 256, "write back")
    assert (queue.max_sectors_kb, queue.max_hw_sectors_kb) == (1280, 32767)
    assert (queue.rq_affinity, queue.nomerges) == (1, 0)
    assert (queue.logical_block_size, queue.physical_block_size) == (512, 4096)
    assert (queue.minimum_io_size, queue.optimal_io_size) == (4096, 0)


def test_partitions_start_offsets_and_parent(tree: SysTree) -> None:
    sata_disk(tree)
    found = devices(HostFS(tree.root))
    sda1, sda2 = found["sda1"], found["sda2"]
    assert sda1.partition == PartitionInfo(number=1, start_bytes=2048 * 512)
    assert sda2.partition == PartitionInfo(number=2, start_bytes=2099200 * 512)
    assert (sda1.devtype, sda1.kind, sda1.queue) == ("partition", "partition", None)
    assert sda1.size_bytes == 1024**3 and (sda1.major, sda1.minor) == (8, 1)
    assert [e.disk for e in find_block_dirs(HostFS(tree.root))] == [None, "sda", "sda"]


def test_nvme_namespace_scheduler_and_identity(tree: SysTree) -> None:
    nvme_disk(tree)
    nvme = devices(HostFS(tree.root))["nvme0n1"]
    assert nvme.queue is not None
    assert (nvme.queue.scheduler, nvme.queue.schedulers) == ("none", ("none", "mq-deadline"))
    assert (nvme.model, nvme.serial, nvme.wwn) == (
        "Dell Ent NVMe",
        "S4ABC123",
        "eui.0025388b91b2c3d4",
    )
    assert nvme.rotational is False and nvme.kind == "nvme"


@pytest.mark.parametrize(
    ("text", "active", "names"),
    [
        ("mq-deadline kyber [none]", "none", ("mq-deadline", "kyber", "none")),
        ("none", "none", ("none",)),
        ("[none] mq-deadline", "none", ("none", "mq-deadline")),
        ("noop anticipatory deadline [cfq]", "cfq", ("noop", "anticipatory", "deadline", "cfq")),
        ("noop deadline", None, ("noop", "deadline")),
        ("", None, ()),
        # Malformed: no name is taken from a word that is not one (issue 17).
        ("[[none] mq-deadline]]", None, ()),
        ("[none] [mq-deadline]", None, ()),
        ("[none] mq\x1b[31m", None, ()),
    ],
)
def test_parse_scheduler(text: str, active: str | None, names: tuple[str, ...]) -> None:
    assert parse_scheduler(text) == (active, names)


def test_old_dump_without_sys_class_block(tree: SysTree) -> None:
    sata_disk(tree)
    for name in ("sda", "sda1", "sda2"):
        (tree.root / f"sys/class/block/{name}").unlink()
    fs = HostFS(tree.root)
    entries = find_block_dirs(fs)
    assert [(e.name, e.disk) for e in entries] == [("sda", None), ("sda1", "sda"), ("sda2", "sda")]
    assert entries[1].base == "sys/block/sda/sda1"
    assert devices(fs)["sda2"].partition == PartitionInfo(2, 2099200 * 512)
    assert fs.warnings == []


def test_device_only_in_sys_class_block(tree: SysTree) -> None:
    nvme_disk(tree)
    (tree.root / "sys/block/nvme0n1").unlink()
    (entry,) = find_block_dirs(HostFS(tree.root))
    assert (entry.name, entry.base) == ("nvme0n1", "sys/class/block/nvme0n1")


def test_virtual_devices_and_hidden_nvme_paths(tree: SysTree) -> None:
    disk(tree, f"{VIRTUAL}/loop0", "loop0", "7:0")
    tree.link("sys/class/block/nvme0c0n1", "../../devices/pci0000:00/nowhere/nvme0c0n1")
    fs = HostFS(tree.root)
    (entry,) = find_block_dirs(fs)
    assert entry.name == "loop0" and entry.is_virtual
    assert fs.warnings == []


def test_malformed_size_warns_and_reads_on(tree: SysTree) -> None:
    sda = sata_disk(tree)
    tree.file(f"{sda}/size", "abc")
    fs = HostFS(tree.root)
    found = devices(fs)["sda"]
    assert found.size_bytes is None and found.queue is not None
    assert fs.warnings == ["sys/block/sda/size: expected an integer, got 'abc'"]


def test_empty_scheduler_warns(tree: SysTree) -> None:
    sda = sata_disk(tree)
    tree.file(f"{sda}/queue/scheduler", "")
    fs = HostFS(tree.root)
    queue = devices(fs)["sda"].queue
    assert queue is not None and (queue.scheduler, queue.schedulers) == (None, ())
    assert queue.nr_requests == 256
    assert fs.warnings == ["sys/block/sda/queue/scheduler: empty"]


def test_dangling_sys_block_link_warns(tree: SysTree) -> None:
    sata_disk(tree)
    tree.link("sys/block/loop0", "../devices/virtual/block/loop0")
    tree.link("sys/class/block/loop0", "../../devices/virtual/block/loop0")
    fs = HostFS(tree.root)
    assert sorted(devices(fs)) == ["sda", "sda1", "sda2"]
    assert fs.warnings == ["sys/block/loop0: dangling link (../devices/virtual/block/loop0)"]


def test_missing_queue_dir_warns(tree: SysTree) -> None:
    lun = f"{SATA_PCI}/ata2/host1/target1:0:0/1:0:0:0"
    base = disk(tree, f"{lun}/block/sdb", "sdb", "8:16", queue={})
    partition(tree, base, "sdb1", 1, 2048, "8:17")
    fs = HostFS(tree.root)
    sdb = devices(fs)["sdb"]
    assert (sdb.queue, sdb.rotational, sdb.size_bytes) == (None, None, 100 * 1024**3)
    assert fs.warnings == ["sys/block/sdb/queue: missing"]


def test_malformed_dev_warns(tree: SysTree) -> None:
    sda = sata_disk(tree)
    tree.file(f"{sda}/dev", "eight")
    fs = HostFS(tree.root)
    assert (devices(fs)["sda"].major, devices(fs)["sda"].minor) == (None, None)
    assert fs.warnings == ["sys/block/sda/dev: expected major:minor, got 'eight'"]


def test_empty_root_finds_nothing(tree: SysTree) -> None:
    fs = HostFS(tree.root)
    assert find_block_dirs(fs) == [] and fs.warnings == []


def test_one_dangling_link_of_two_is_named(tree: SysTree) -> None:
    sata_disk(tree)
    tree.link("sys/block/sda", "../devices/gone/sda")
    fs = HostFS(tree.root)
    (entry,) = [e for e in find_block_dirs(fs) if e.disk is None]
    assert entry.base == "sys/class/block/sda"
    assert fs.warnings == ["sys/block/sda: dangling link (../devices/gone/sda)"]


def test_impossible_queue_values_are_warnings_not_facts(tree: SysTree) -> None:
    sda = sata_disk(tree)
    tree.file(f"{sda}/queue/read_ahead_kb", "-128").file(f"{sda}/size", "-1")
    tree.file(f"{sda}/queue/logical_block_size", "0")
    fs = HostFS(tree.root)
    found = devices(fs)["sda"]
    assert found.queue is not None
    assert (found.queue.read_ahead_kb, found.queue.logical_block_size) == (None, None)
    assert found.size_bytes is None
    assert sorted(fs.warnings) == [
        "sys/block/sda/queue/logical_block_size: 0 is implausible (expected 512 to 65536); ignored",
        "sys/block/sda/queue/read_ahead_kb: -128 is implausible (expected 0 to 4294967295); "
        "ignored",
        "sys/block/sda/size: -1 is implausible (expected 0 to 18014398509481984); ignored",
    ]


def test_a_malformed_scheduler_line_warns(tree: SysTree) -> None:
    sda = sata_disk(tree)
    tree.file(f"{sda}/queue/scheduler", "[[none] mq-deadline]]")
    fs = HostFS(tree.root)
    queue = devices(fs)["sda"].queue
    assert queue is not None and (queue.scheduler, queue.schedulers) == (None, ())
    assert fs.warnings == [
        "sys/block/sda/queue/scheduler: expected scheduler names, got '[[none] mq-deadline]]'"
    ]


def test_block_directories_that_are_files_warn_instead_of_hiding_every_disk(
    tree: SysTree,
) -> None:
    tree.file("sys/class/block", "x").file("sys/block", "")
    fs = HostFS(tree.root)
    assert find_block_dirs(fs) == []
    assert fs.warnings == [
        "sys/block: not a directory; its entries are not read",
        "sys/class/block: not a directory; its entries are not read",
    ]
