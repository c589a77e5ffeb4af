"""Storage stacks: md arrays, device-mapper targets, loop devices, and what sits on what.

Reads, per block device: md/{level,chunk_size,raid_disks,dev-*}, dm/{name,uuid},
loop/{backing_file,offset,dio}, slaves/* (of devices outside the PCI tree); and
sys/fs/btrfs/<uuid>/{label,devices/*,allocation/data/<profile>/} for multi-device btrfs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping

from probes.block import BlockDir
from probes.hostfs import HostFS
from probes.ids import MACHINE_ID
from tuner.topology.model import BlockDevice, DmInfo, LoopInfo, MdInfo, MultiDeviceFs, StackEdge

BTRFS_DIR = "sys/fs/btrfs"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_BTRFS_PROFILES = frozenset(
    ("single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6")
)
_EDGE_KIND = {"md": "member", "dm": "dm", "loop": "loop", "partition": "partition"}
_DELETED = " (deleted)"


def read_md(fs: HostFS, base: str) -> MdInfo:
    """An md array's level, chunk size in bytes, disk count and members (from md/dev-*)."""
    members = [name[4:] for name in fs.listdir(f"{base}/md") if name.startswith("dev-")]
    if not members:
        members = fs.listdir(f"{base}/slaves")
    chunk = fs.read_int(f"{base}/md/chunk_size")
    return MdInfo(
        level=fs.read(f"{base}/md/level") or None,
        # Levels that do not stripe (raid1, linear) report a chunk of 0.
        chunk_bytes=chunk or None,
        raid_disks=fs.read_int(f"{base}/md/raid_disks"),
        members=tuple(members),
    )


def read_dm(fs: HostFS, base: str) -> DmInfo:
    """A device-mapper device's name and uuid (empty uuid -> None)."""
    return DmInfo(name=fs.read(f"{base}/dm/name") or None, uuid=fs.read(f"{base}/dm/uuid") or None)


def read_loop(fs: HostFS, base: str) -> LoopInfo:
    """A loop device's backing file, offset and direct-I/O flag; all None when it is unbound."""
    dio = fs.read_int(f"{base}/loop/dio")
    return LoopInfo(
        backing_file=fs.read(f"{base}/loop/backing_file") or None,
        backing_device=None,  # known once the mount table is read (probes/storage.py)
        offset_bytes=fs.read_int(f"{base}/loop/offset"),
        direct_io=None if dio is None else dio != 0,
    )


def with_stack_info(fs: HostFS, entry: BlockDir, device: BlockDevice) -> BlockDevice:
    """The device with its md, dm or loop details added, chosen by its kernel name."""
    if entry.disk is not None:
        return device
    name = entry.name
    if name.startswith("md"):
        return dataclasses.replace(device, md=read_md(fs, entry.base))
    if name.startswith("dm-"):
        return dataclasses.replace(device, dm=read_dm(fs, entry.base))
    if name.startswith("loop"):
        return dataclasses.replace(device, loop=read_loop(fs, entry.base))
    return device


def backing_path(loop: LoopInfo) -> str | None:
    """The loop's backing file as a path (without the kernel's " (deleted)" mark)."""
    path = loop.backing_file
    if path is not None and path.endswith(_DELETED):
        path = path[: -len(_DELETED)]
    return path


def stack_edges(
    fs: HostFS, entries: Iterable[BlockDir], devices: Mapping[str, BlockDevice]
) -> list[StackEdge]:
    """Who sits on whom: partitions on disks, arrays on members, dm and loop on their devices."""
    edges: dict[StackEdge, None] = {}

    def add(upper: str, lower: str) -> None:
        kind = _EDGE_KIND.get(devices[upper].kind, "member")
        edges[StackEdge(upper=upper, lower=lower, kind=kind)] = None

    for entry in entries:
        device = devices.get(entry.name)
        if device is None:
            continue
        if entry.disk is not None and entry.disk in devices:
            add(entry.name, entry.disk)
        # Only stacking drivers (md, dm, bcache) have slaves, and none sits below a PCI
        # function; `holders/` mirrors `slaves/`, so reading it would find no other edge.
        if entry.disk is None and device.parent == MACHINE_ID:
            for lower in _linked(fs, f"{entry.base}/slaves", devices):
                add(entry.name, lower)
        loop = device.loop
        if loop is not None and loop.backing_device not in (None, entry.name):
            add(entry.name, str(loop.backing_device))
    return list(edges)


def _linked(fs: HostFS, rel: str, devices: Mapping[str, BlockDevice]) -> list[str]:
    found = []
    for name in fs.listdir(rel):
        if name in devices:
            found.append(name)
        elif fs.realpath(f"{rel}/{name}") is None:
            fs.warn(f"{rel}/{name}: dangling link ({fs.readlink(f'{rel}/{name}') or 'no target'})")
        # else: a device no probe lists (an NVMe path device); nothing to link to
    return found


def probe_btrfs(fs: HostFS) -> list[MultiDeviceFs]:
    """Mounted btrfs file systems: label, member devices (kernel names) and data profile."""
    found = []
    for uuid in fs.listdir(BTRFS_DIR):
        if not _UUID.fullmatch(uuid):
            continue  # `features` and other non-filesystem entries
        base = f"{BTRFS_DIR}/{uuid}"
        found.append(
            MultiDeviceFs(
                fstype="btrfs",
                uuid=uuid,
                label=fs.read(f"{base}/label") or None,
                devices=tuple(fs.listdir(f"{base}/devices")),
                data_profile=_data_profile(fs.listdir(f"{base}/allocation/data")),
            )
        )
    return found


def _data_profile(entries: list[str]) -> str | None:
    profiles = [name for name in entries if name in _BTRFS_PROFILES]
    # Older mkfs.btrfs left an empty `single` chunk beside the chosen profile until a balance.
    chosen = [name for name in profiles if name != "single"] or profiles
    return "+".join(chosen) if chosen else None
