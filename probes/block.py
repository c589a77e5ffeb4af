"""Block devices: which exist, where their sysfs directories are, and their attributes.

Reads: sys/block/*, sys/class/block/* (old dumps lack one or the other), and per device
dev, size, removable, partition, start, serial, wwid, device/{model,vendor,serial,wwid},
queue/{rotational,read_ahead_kb,scheduler,nr_requests,max_sectors_kb,max_hw_sectors_kb,
write_cache,rq_affinity,nomerges,logical_block_size,physical_block_size,minimum_io_size,
optimal_io_size}. Partitions of disks missing from sys/class/block are found by listing the
disk's directory for subdirectories holding a `partition` file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import NamedTuple

from probes.hostfs import HostFS, digits
from probes.ids import block_id
from probes.pmem import pmem_mode
from probes.printable import printable
from tuner.topology.model import BlockDevice, PartitionInfo, QueueSettings

SECTOR_BYTES = 512  # `size` and `start` count 512-byte sectors whatever the device's blocks
_NATURAL = re.compile(r"([0-9]+)")
_U32 = (0, 2**32 - 1)
# What each queue attribute can hold on a real device; anything else is a warning and None.
_QUEUE_RANGES: dict[str, tuple[int, int]] = {
    "read_ahead_kb": _U32,
    "nr_requests": _U32,
    "max_sectors_kb": _U32,
    "max_hw_sectors_kb": _U32,
    "rq_affinity": (0, 2),
    "nomerges": (0, 2),
    "logical_block_size": (512, 65536),
    "physical_block_size": (512, 2**31),
    "minimum_io_size": _U32,
    "optimal_io_size": _U32,
}
_MAX_SECTORS = 2**63 // SECTOR_BYTES
_SCHEDULER = re.compile(r"[A-Za-z0-9_.-]+")
# Per-path devices of NVMe native multipath (nvme0c0n1) are hidden halves of nvme0n1.
_NVME_PATH_DEVICE = re.compile(r"nvme\d+c\d+n\d+$")


@dataclass(frozen=True)
class BlockDir:
    """Where one block device lives: `base` is the path its attributes are read through."""

    name: str
    base: str
    real: str
    disk: str | None = None  # the whole disk's name, for a partition

    @property
    def is_virtual(self) -> bool:
        """True for devices the kernel keeps under /sys/devices/virtual (loop, md, dm, zram)."""
        return self.real.startswith("sys/devices/virtual/")


def natural_key(name: str) -> tuple[str | int, ...]:
    """Sort key putting sda, sda1, sda2, sdb, sdaa and nvme1n1 before nvme10n1."""
    return tuple(int(p) if digits(p) else p for p in _NATURAL.split(name))


def find_block_dirs(fs: HostFS) -> list[BlockDir]:
    """Every block device in sys/block and sys/class/block, disks and partitions, sorted."""
    in_block = set(fs.listdir("sys/block"))
    in_class = set(fs.listdir("sys/class/block"))
    listings = (("sys/block", in_block), ("sys/class/block", in_class))
    wholes: dict[str, BlockDir] = {}
    for name in sorted(in_block | in_class, key=natural_key):
        if _NVME_PATH_DEVICE.match(name):
            continue
        bases = [f"{top}/{name}" for top, listed in listings if name in listed]
        found = _resolve_links(fs, bases)
        if found is not None:
            wholes[name] = BlockDir(name, *found)
    entries: list[BlockDir] = []
    for entry in wholes.values():
        holder = PurePosixPath(entry.real).parent.name
        if holder in wholes:
            # A partition's directory sits inside its disk's, in both layouts.
            entries.append(BlockDir(entry.name, entry.base, entry.real, disk=holder))
            continue
        entries.append(entry)
        if entry.name not in in_class:
            entries.extend(_listed_partitions(fs, entry, wholes))
    return sorted(entries, key=lambda e: natural_key(e.name))


def _resolve_links(fs: HostFS, bases: list[str]) -> tuple[str, str] | None:
    """(base, resolved path) of the first link that resolves; a warning for each that dangles.

    When every link dangles (virtual devices a capture left out) one warning says so.
    """
    found: tuple[str, str] | None = None
    dangling = []
    for base in bases:
        real = fs.realpath(base)
        if real is None:
            dangling.append(base)
        elif found is None:
            found = (base, real)
    for base in dangling if found is not None else dangling[:1]:
        fs.warn(f"{base}: dangling link ({fs.readlink(base) or 'no target'})")
    return found


def _listed_partitions(fs: HostFS, disk: BlockDir, known: dict[str, BlockDir]) -> list[BlockDir]:
    return [
        BlockDir(sub, f"{disk.base}/{sub}", f"{disk.real}/{sub}", disk.name)
        for sub in fs.listdir(disk.real)
        if sub.startswith(disk.name)
        and sub not in known
        and fs.exists(f"{disk.real}/{sub}/partition")
    ]


class _Identity(NamedTuple):
    model: str | None = None
    vendor: str | None = None
    serial: str | None = None
    wwn: str | None = None


def read_block_device(fs: HostFS, entry: BlockDir, parent: str) -> BlockDevice:
    """The attributes of one block device; partitions carry PartitionInfo and no queue."""
    base = entry.base
    major, minor = _read_devnum(fs, f"{base}/dev")
    size = fs.read_int(f"{base}/size", expected=True, low=0, high=_MAX_SECTORS)
    is_partition = entry.disk is not None
    partition = _read_partition(fs, base) if is_partition else None
    queue = None if is_partition else read_queue(fs, f"{base}/queue")
    rotational = (
        fs.read_int(f"{base}/queue/rotational", low=0, high=1) if queue is not None else None
    )
    removable = None if is_partition else fs.read_int(f"{base}/removable", low=0, high=1)
    ident = _Identity() if is_partition or entry.is_virtual else _read_identity(fs, base)
    return BlockDevice(
        id=block_id(entry.name),
        parent=parent,
        name=entry.name,
        devtype="partition" if is_partition else "disk",
        major=major,
        minor=minor,
        size_bytes=None if size is None else size * SECTOR_BYTES,
        rotational=None if rotational is None else rotational != 0,
        removable=None if removable is None else removable != 0,
        model=ident.model,
        vendor=ident.vendor,
        serial=ident.serial,
        wwn=ident.wwn,
        queue=queue,
        partition=partition,
        pmem_mode=None if is_partition else pmem_mode(entry.real),
    )


def _read_partition(fs: HostFS, base: str) -> PartitionInfo:
    start = fs.read_int(f"{base}/start", expected=True, low=0, high=_MAX_SECTORS)
    return PartitionInfo(
        number=fs.read_int(f"{base}/partition", expected=True, low=0, high=2**20),
        start_bytes=None if start is None else start * SECTOR_BYTES,
    )


def _read_devnum(fs: HostFS, rel: str) -> tuple[int | None, int | None]:
    text = fs.read(rel, expected=True)
    if text is None:
        return None, None
    major, sep, minor = text.partition(":")
    if not sep or not digits(major) or not digits(minor) or max(len(major), len(minor)) > 10:
        fs.warn(f"{rel}: expected major:minor, got {text[:40]!r}")
        return None, None
    return int(major), int(minor)


def _read_identity(fs: HostFS, base: str) -> _Identity:
    # SCSI and NVMe controllers keep these on `device`; virtio and NVMe namespaces on the disk.
    def first(*names: str) -> str | None:
        for name in names:
            value = fs.read(f"{base}/{name}")
            if value:
                return printable(value)  # one line: an identity is shown in one
        return None

    return _Identity(
        model=first("device/model"),
        vendor=first("device/vendor"),
        serial=first("device/serial", "serial"),
        wwn=first("wwid", "device/wwid"),
    )


def read_queue(fs: HostFS, queue: str) -> QueueSettings | None:
    """The request-queue attributes under `queue` (a `.../queue` path); None when it is absent."""
    if fs.realpath(queue) is None:
        fs.warn(f"{queue}: missing")
        return None
    ints = {
        name: fs.read_int(f"{queue}/{name}", low=low, high=high)
        for name, (low, high) in _QUEUE_RANGES.items()
    }
    scheduler, schedulers = read_scheduler(fs, f"{queue}/scheduler")
    return QueueSettings(
        scheduler=scheduler,
        schedulers=schedulers,
        write_cache=fs.read(f"{queue}/write_cache") or None,
        **ints,
    )


def read_scheduler(fs: HostFS, rel: str) -> tuple[str | None, tuple[str, ...]]:
    """The active I/O scheduler and the available ones, from `[none] mq-deadline` and the like."""
    text = fs.read(rel)
    if text is None:
        return None, ()
    active, names = parse_scheduler(text)
    if not names and text:
        fs.warn(f"{rel}: expected scheduler names, got {text[:60]!r}")
    elif not names:
        fs.warn(f"{rel}: empty")
    elif active is None:
        fs.warn(f"{rel}: no active scheduler marked in {text[:60]!r}")
    return active, names


def parse_scheduler(text: str) -> tuple[str | None, tuple[str, ...]]:
    """Split a scheduler line into (active, available); a lone name is the active one.

    Every word must be a name or one [name]; a line with any other word, or two marked,
    is malformed and gives (None, ()): no name is ever taken from half a word.
    """
    words = text.split()
    names = tuple(word[1:-1] if word.startswith("[") else word for word in words)
    marked = [word[1:-1] for word in words if word.startswith("[")]
    if (
        not all(_SCHEDULER.fullmatch(name) for name in names)
        or len(marked) > 1
        or any(word.startswith("[") != word.endswith("]") for word in words)
    ):
        return None, ()
    if len(marked) == 1:
        return marked[0], names
    if len(names) == 1:
        return names[0], names
    return None, names
