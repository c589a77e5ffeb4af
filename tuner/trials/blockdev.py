"""What trials need to know about the live host's block devices, read through the probes.

Kernel names come from device numbers (`st_rdev` of a device node, `/sys/dev/block/M:m`), so
`/dev/disk/by-id/...` links and `/dev/root` resolve like any name; mounts, partitions, stacks and
btrfs members come from probes/storage.py, the same code `iotuner probe` runs. Every function
reads through the HostFS it is given (`probes.host_root.live_host()` on the live machine, a
fixture tree in the tests): none opens a reader of `/` itself.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from probes.hostfs import HostFS
from probes.mounts import mount_holding, mounts_by_point
from probes.storage import probe_storage
from tuner.topology.model import Mount, Topology

DEFAULT_READAHEAD_KB = 128  # the kernel's default, when a device does not say


def live_storage(fs: HostFS) -> Topology:
    """The host's block devices, stacks, mounts and btrfs file systems (milliseconds)."""
    found = probe_storage(fs)
    return Topology(
        root=str(fs.root),
        nodes=found.nodes,
        edges=found.edges,
        mounts=found.mounts,
        filesystems=found.filesystems,
    )


def block_number(path: str) -> tuple[int, int] | None:
    """(major, minor) of a block device node (links followed), or None when it is not one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def kernel_name(fs: HostFS, number: tuple[int, int]) -> str | None:
    """The kernel name (sda1, loop3, dm-0) of a device number, from /sys/dev/block."""
    real = fs.realpath(f"sys/dev/block/{number[0]}:{number[1]}")
    return PurePosixPath(real).name if real else None


def device_bytes(fs: HostFS, name: str) -> int | None:
    """A block device's size in bytes (`size` counts 512-byte sectors whatever the device)."""
    sectors = fs.read_int(f"sys/class/block/{name}/size")
    return None if sectors is None else sectors * 512


def mount_of_path(path: Path, topology: Topology) -> Mount | None:
    """The mount whose file system holds `path` (the longest mount point above it)."""
    return mount_holding(str(path.resolve()), mounts_by_point(topology.mounts))


def devices_of_mount(mount: Mount, topology: Topology) -> tuple[str, ...]:
    """Kernel names of the block devices a mounted file system's I/O reaches first.

    One device for most; every member for a multi-device btrfs, whose mount table names only
    one of them. Empty for tmpfs, proc, sysfs, network and FUSE mounts: no block device.
    """
    if mount.kname is None:
        return ()
    for multi in topology.filesystems:
        if mount.kname in multi.devices:
            return tuple(sorted(multi.devices))
    return (mount.kname,)


def readahead_bytes(
    fs: HostFS, names: tuple[str, ...], topology: Topology, path: Path | None = None
) -> int:
    """The largest readahead window in front of `names` (a partition uses its disk's queue;
    btrfs reads ahead through its own backing-device setting, DESIGN.md), in bytes."""
    windows = [DEFAULT_READAHEAD_KB]
    for name in names:
        device = topology.block_device(name)
        disk = name
        if device is not None and device.partition is not None and device.parent:
            disk = device.parent.removeprefix("block:")
        value = fs.read_int(f"sys/class/block/{disk}/queue/read_ahead_kb")
        if value is not None:
            windows.append(value)
    for multi in topology.filesystems:
        if set(multi.devices) & set(names):
            value = fs.read_int(f"sys/fs/btrfs/{multi.uuid}/bdi/read_ahead_kb")
            if value is not None:
                windows.append(value)
    if path is not None and (value := _file_bdi_readahead_kb(fs, path)) is not None:
        windows.append(value)
    return max(windows) * 1024


def _file_bdi_readahead_kb(fs: HostFS, path: Path) -> int | None:
    """read_ahead_kb of the backing device (bdi) that a file's reads go through."""
    try:
        st_dev = os.stat(path).st_dev
    except OSError:
        return None
    return fs.read_int(f"sys/class/bdi/{os.major(st_dev)}:{os.minor(st_dev)}/read_ahead_kb")


def cached_below(names: tuple[str, ...], topology: Topology) -> tuple[str, str] | None:
    """(loop, device under it) for a loop device in the stack under `names` that reads a file
    on a block device through the page cache (direct I/O off), or None. That file's pages
    outlive drop_caches' moment and fio's invalidation, which only reaches the top device."""
    seen: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        device = topology.block_device(name)
        loop = device.loop if device is not None else None
        if loop is not None and loop.direct_io is False and loop.backing_device is not None:
            return name, loop.backing_device
        pending.extend(topology.lower_devices(name))
    return None
