"""Storage facts: disks, arrays (md, multi-device btrfs), partitions and mounts.

Alignment is judged against the md array a partition belongs to (md over partitions) or lies
on (partitions of an md device): a start that is not a multiple of the chunk makes every
chunk-sized request straddle two members.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tuner.facts.index import TopologyIndex
from tuner.facts.rates import is_optical
from tuner.facts.target import Target
from tuner.facts.xfs import XfsGeometry, read_xfs_geometry
from tuner.topology.model import BlockDevice, Mount

PARITY_LEVELS = frozenset(("raid4", "raid5", "raid6"))
# btrfs stripes every striped profile in 64 KiB elements (BTRFS_STRIPE_LEN).
BTRFS_STRIPE_BYTES = 64 * 1024
_BTRFS_STRIPED = frozenset(("raid0", "raid10", "raid5", "raid6"))
_RAID_CONTROLLER_CLASS = 0x0104  # mass storage, RAID bus controller


@dataclass(frozen=True)
class Array:
    """A striped or mirrored set: its level, chunk and member device names."""

    name: str
    level: str | None
    chunk_bytes: int | None
    members: tuple[str, ...]
    width: int  # devices in the stripe (md raid_disks; spares are members but not in it)

    @property
    def data_members(self) -> int | None:
        """Members carrying data in one stripe."""
        return data_members(self.level, self.width)

    @property
    def stripe_width_bytes(self) -> int | None:
        """chunk x data members; None without a chunk."""
        data = self.data_members
        return None if self.chunk_bytes is None or data is None else self.chunk_bytes * data


def data_members(level: str | None, count: int) -> int | None:
    """Members that carry data in a stripe: raid0 n, raid5 n-1, raid6 n-2, raid10 n/2, mirrors 1.

    raid10 assumes two copies (md's default near=2 layout, and btrfs's raid10).
    """
    if level is None or count <= 0:
        return None
    by_level = {
        "raid0": count,
        "raid4": count - 1,
        "raid5": count - 1,
        "raid6": count - 2,
        "raid10": count // 2,
    }
    if level in by_level:
        return max(1, by_level[level])
    if level in ("raid1", "raid1c3", "raid1c4", "linear", "single", "dup"):
        return 1
    return None


def find_arrays(ix: TopologyIndex) -> tuple[list[Array], dict[str, Array]]:
    """Every array, and a lookup: md arrays by their name, multi-device btrfs by each member's."""
    found: list[Array] = []
    lookup: dict[str, Array] = {}
    for dev in ix.blocks:
        if dev.md is not None and dev.size_bytes != 0:
            members = dev.md.members or tuple(ix.lower(dev.name, "member"))
            width = dev.md.raid_disks or len(members)
            array = Array(dev.name, dev.md.level, dev.md.chunk_bytes, members, width)
            found.append(array)
            lookup[dev.name] = array
    for multi in ix.topology.filesystems:
        if len(multi.devices) > 1:
            level = multi.data_profile
            chunk = BTRFS_STRIPE_BYTES if level in _BTRFS_STRIPED else None
            array = Array(
                multi.label or multi.uuid, level, chunk, multi.devices, len(multi.devices)
            )
            found.append(array)
            for name in multi.devices:
                lookup.setdefault(name, array)
    return found, lookup


def array_under(ix: TopologyIndex, arrays: dict[str, Array], dev: BlockDevice) -> Array | None:
    """The md array a partition belongs to (a member) or lies on (its disk is the array)."""
    for upper in ix.upper(dev.name, "member"):
        if upper in arrays:
            return arrays[upper]
    disk = ix.whole(dev)
    return arrays.get(disk.name) if disk.md is not None else None


def _distinct(values: Sequence[object]) -> list[object]:
    return sorted({v for v in values if v is not None}, key=str)


def array_facts(ix: TopologyIndex, array: Array) -> dict[str, object]:
    """The catalogue's facts of one array, from its members' whole disks."""
    devices = [dev for name in array.members if (dev := ix.topology.block_device(name))]
    wholes = [ix.whole(dev) for dev in devices]
    models = _distinct([dev.model.strip() if dev.model else None for dev in wholes])
    sizes = _distinct([dev.size_bytes for dev in devices])
    spinning = {dev.rotational for dev in wholes}
    rates = [rate for dev in wholes if (rate := ix.rate.get(dev.name)) is not None]
    mixed: bool | None = {True, False} <= spinning
    if not mixed and None in spinning:
        mixed = None  # a member of unknown kind might be the odd one out
    return {
        "name": array.name,
        "level": array.level,
        "is_parity": array.level in PARITY_LEVELS,
        "chunk_bytes": array.chunk_bytes,
        "member_count": len(array.members),
        "data_members": array.data_members,
        "stripe_width_bytes": array.stripe_width_bytes,
        "models": ",".join(map(str, models)) if models else None,
        "model_count": len(models) if models else None,
        "size_count": len(sizes) if sizes else None,
        "mixed_rotational": mixed,
        "slowest_member_mbps": min(rates) if rates else None,
        "fastest_member_mbps": max(rates) if rates else None,
    }


def is_data_disk(dev: BlockDevice) -> bool:
    """Whole devices that hold data: not partitions, empty slots, unbound loops, CD drives."""
    if dev.kind == "partition" or dev.size_bytes == 0 or is_optical(dev):
        return False
    return dev.loop is None or dev.loop.backing_file is not None


def disk_facts(
    ix: TopologyIndex, dev: BlockDevice, mounted: set[str], read: frozenset[str] = frozenset()
) -> dict[str, object]:
    """The catalogue's facts of one whole device; `read`: devices the workload reads directly."""
    queue = dev.queue
    controller = ix.controller.get(dev.name)
    members = len(ix.lower(dev.name, "member")) + len(ix.lower(dev.name, "dm"))
    if not members and dev.md is not None:
        members = len(dev.md.members)
    return {
        "name": dev.name,
        "kind": dev.kind,
        "model": dev.model.strip() if dev.model else None,
        "rotational": dev.rotational,
        "is_nvme": dev.kind == "nvme",
        "is_physical": controller is not None
        and dev.kind in ("disk", "nvme")
        and dev.name not in ix.emulated,
        "size_bytes": dev.size_bytes,
        "scheduler": queue.scheduler if queue else None,
        "schedulers": ",".join(queue.schedulers) if queue else None,
        "read_ahead_kb": queue.read_ahead_kb if queue else None,
        "nr_requests": queue.nr_requests if queue else None,
        "max_sectors_kb": queue.max_sectors_kb if queue else None,
        "max_hw_sectors_kb": queue.max_hw_sectors_kb if queue else None,
        "write_cache": queue.write_cache if queue else None,
        "readahead_from_limits": readahead_from_limits(dev),
        "expected_mbps": ix.rate.get(dev.name),
        "controller": controller.address if controller else None,
        "numa_node": ix.numa_node(controller.id) if controller else None,
        "behind_raid_controller": controller is not None
        and controller.class_code is not None
        and controller.class_code >> 8 == _RAID_CONTROLLER_CLASS,
        "member_count": members,
        "mounted": dev.name in mounted,
        "reads_enter": dev.name in mounted or dev.name in read,
        "entry": _entry(dev.name, mounted, read),
    }


def readahead_from_limits(dev: BlockDevice) -> bool:
    """True when a rotational device's readahead is what kernels 6.17 and later derive from
    its limits, twice max_sectors_kb (above the classic 128 KB): the kernel's choice, not an
    administrator's (written once, it stays until the limits change again). Measured on a
    loop device marked rotational: 128 -> 1024 KB on writing max_sectors_kb 512; this VM's
    rotational vda defaults to 8192 with max_sectors_kb 4096."""
    queue = dev.queue
    if not dev.rotational or queue is None:
        return False
    ra, limit = queue.read_ahead_kb, queue.max_sectors_kb
    return ra is not None and limit is not None and ra > 128 and ra == 2 * limit


def _entry(name: str, mounted: set[str], read: frozenset[str]) -> str | None:
    """How reads reach the device, for evidence lines; None when they do not start there."""
    if name in mounted:
        return "holding a mounted file system"
    return "read directly by the workload" if name in read else None


def mounted_devices(ix: TopologyIndex) -> set[str]:
    """Whole devices that are mounted, directly, through a partition, or in a btrfs set."""
    found: set[str] = set()
    for mount in ix.topology.mounts:
        dev = ix.topology.block_device(mount.kname) if mount.kname else None
        if dev is not None:
            found.add(ix.whole(dev).name)
    for multi in ix.topology.filesystems:  # sys/fs/btrfs lists mounted file systems only
        found.update(multi.devices)
    return found


def partition_facts(ix: TopologyIndex, dev: BlockDevice, array: Array | None) -> dict[str, object]:
    """The catalogue's facts of one partition: where it starts against chunk and sector."""
    disk = ix.disk_of(dev)
    start = dev.partition.start_bytes if dev.partition else None
    chunk = array.chunk_bytes if array else None
    sector = disk.queue.physical_block_size if disk and disk.queue else None
    return {
        "name": dev.name,
        "disk": disk.name if disk else None,
        "start_bytes": start,
        "chunk_bytes": chunk,
        "stripe_width_bytes": array.stripe_width_bytes if array else None,
        "misalignment_bytes": start % chunk if start is not None and chunk else None,
        "physical_block_size": sector,
        "misaligned_to_sector": start % sector != 0 if start is not None and sector else None,
    }


def mount_facts(
    ix: TopologyIndex, mount: Mount, array: Array | None, xfs: XfsGeometry | None
) -> dict[str, object]:
    """The catalogue's facts of one mount of a block device."""
    matches: bool | None = None
    if xfs is not None and array is not None and array.stripe_width_bytes is not None:
        matches = (xfs.sunit_bytes, xfs.swidth_bytes) == (
            array.chunk_bytes,
            array.stripe_width_bytes,
        )
    return {
        "name": mount.mountpoint,
        "device": mount.kname,
        "fstype": mount.fstype,
        "options": ",".join(mount.options),
        "atime_updates": "noatime" not in mount.options,
        "on_array": array is not None,
        "chunk_bytes": array.chunk_bytes if array else None,
        "xfs_sunit_bytes": xfs.sunit_bytes if xfs else None,
        "xfs_swidth_bytes": xfs.swidth_bytes if xfs else None,
        "geometry_matches": matches,
    }


def storage_targets(
    ix: TopologyIndex,
    live: bool,
    xfs_reader: Callable[[str], XfsGeometry | None] = read_xfs_geometry,
    *,
    read_devices: frozenset[str] = frozenset(),
) -> dict[str, list[Target]]:
    """Disk, array, partition and mount targets; xfs_info runs only on the live host.

    `read_devices`: whole devices the workload reads without a file system (FactOptions).
    """
    found, arrays = find_arrays(ix)
    mounted = mounted_devices(ix)
    disks: list[Target] = []
    partitions: list[Target] = []
    for dev in ix.blocks:
        if is_data_disk(dev):
            disks.append(Target("disk", dev.name, disk_facts(ix, dev, mounted, read_devices)))
        elif dev.kind == "partition":
            facts = partition_facts(ix, dev, array_under(ix, arrays, dev))
            partitions.append(Target("partition", dev.name, facts))
    return {
        "disk": disks,
        "array": [Target("array", a.name, array_facts(ix, a)) for a in found],
        "partition": partitions,
        "mount": mount_targets(ix, arrays, live, xfs_reader),
    }


def mount_targets(
    ix: TopologyIndex,
    arrays: dict[str, Array],
    live: bool,
    xfs_reader: Callable[[str], XfsGeometry | None],
) -> list[Target]:
    """One target per mount of a known block device (proc, tmpfs and the like have none).

    A later line of the same device, type and options is the same file system seen again (a
    bind mount such as /run/netns, or a second mount): its findings are the first one's.
    """
    targets = []
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    for mount in ix.topology.mounts:
        dev = ix.topology.block_device(mount.kname) if mount.kname else None
        if dev is None or (dev.name, mount.fstype, mount.options) in seen:
            continue
        seen.add((dev.name, mount.fstype, mount.options))
        array = arrays.get(dev.name) or arrays.get(ix.whole(dev).name)
        xfs = xfs_reader(mount.mountpoint) if live and mount.fstype == "xfs" else None
        targets.append(Target("mount", mount.mountpoint, mount_facts(ix, mount, array, xfs)))
    return targets
