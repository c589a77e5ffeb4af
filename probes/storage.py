"""Storage: block devices with their path to the controller, their stacks, and the mounts.

Assembles probes/block.py (devices), probes/storage_path.py (hops to the PCI function, or
probes/pmem.py's NUMA node for persistent memory outside PCI),
probes/storage_links.py (SAS and SATA link rates of those hops),
probes/stacks.py (md, dm, loop, btrfs, slaves/holders) and probes/mounts.py (mount table).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from probes.block import find_block_dirs, read_block_device
from probes.hostfs import HostFS
from probes.ids import MACHINE_ID, block_id
from probes.mounts import mount_holding, mounts_by_point, probe_mounts
from probes.pmem import local_parent
from probes.stacks import backing_path, probe_btrfs, stack_edges, with_stack_info
from probes.storage_links import with_links
from probes.storage_path import StoragePaths
from tuner.topology.model import BlockDevice, Mount, MultiDeviceFs, Node, StackEdge


@dataclass(frozen=True)
class StorageFound:
    """What the storage probe found: hops and block devices (tree nodes), stacks, mounts."""

    nodes: tuple[Node, ...]
    edges: tuple[StackEdge, ...]
    mounts: tuple[Mount, ...]
    filesystems: tuple[MultiDeviceFs, ...]


def probe_storage(fs: HostFS) -> StorageFound:
    """Every block device, the storage path above each, their stacks and the mount table."""
    entries = find_block_dirs(fs)
    paths = StoragePaths(fs)
    devices: dict[str, BlockDevice] = {}
    for entry in entries:
        parent = block_id(entry.disk) if entry.disk is not None else paths.parent_of(entry.real)
        if parent == MACHINE_ID:  # outside PCI: persistent memory sits on its NUMA node
            parent = local_parent(fs, entry.real)
        devices[entry.name] = with_stack_info(fs, entry, read_block_device(fs, entry, parent))
    mounts = probe_mounts(fs, list(devices.values()))
    filesystems = probe_btrfs(fs)
    _add_mount_facts(devices, mounts, filesystems)
    return StorageFound(
        nodes=(*with_links(fs, paths.nodes(), [e.real for e in entries]), *devices.values()),
        edges=tuple(stack_edges(fs, entries, devices)),
        mounts=tuple(mounts),
        filesystems=tuple(filesystems),
    )


def _add_mount_facts(
    devices: dict[str, BlockDevice], mounts: list[Mount], filesystems: list[MultiDeviceFs]
) -> None:
    """Fill each loop's backing device and each file-system member's type, in place."""
    fs_types: dict[str, str] = {}
    for mount in mounts:
        if mount.kname is not None:
            fs_types.setdefault(mount.kname, mount.fstype)
    for multi in filesystems:
        # Only one member of a multi-device file system appears in the mount table.
        for name in multi.devices:
            fs_types.setdefault(name, multi.fstype)
    by_point = mounts_by_point(mounts)
    for name, device in devices.items():
        if device.fs_type is None and name in fs_types:
            device = dataclasses.replace(device, fs_type=fs_types[name])
        loop = device.loop
        path = backing_path(loop) if loop is not None else None
        holder = mount_holding(path, by_point) if path is not None else None
        if loop is not None and holder is not None and holder.kname is not None:
            loop = dataclasses.replace(loop, backing_device=holder.kname)
            device = dataclasses.replace(device, loop=loop)
        devices[name] = device
