"""The mount table, each source mapped to the kernel name of the block device it is.

Reads: proc/self/mounts, else proc/mounts; dev/... links (by-uuid, by-id, mapper, vg/lv) where
the root holds them. On the live host `/dev/root` is found by stat()ing the mount point.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath

from probes.hostfs import HostFS
from tuner.topology.model import BlockDevice, Mount

_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape(field: str) -> str:
    """Decode the kernel's octal escapes in a mount-table field (`\\040` is a space)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def read_mount_table(fs: HostFS) -> list[Mount]:
    """The mount table's lines in order, without kernel names."""
    rel = "proc/self/mounts"
    text = fs.read(rel)
    if text is None:
        # Captures from other tools may hold neither; the devices are found all the same.
        rel = "proc/mounts"
        text = fs.read(rel)
    mounts = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 3:
            fs.warn(f"{rel}: line {number} has {len(fields)} fields, expected at least 3")
            continue
        options = tuple(unescape(fields[3]).split(",")) if len(fields) > 3 else ()
        mounts.append(Mount(unescape(fields[0]), unescape(fields[1]), fields[2], options))
    return mounts


class KernelNames:
    """Maps a mount source (`/dev/sda1`, `/dev/mapper/vg-lv`, `UUID` links) to a kernel name."""

    def __init__(self, fs: HostFS, devices: Sequence[BlockDevice]) -> None:
        self.fs = fs
        self.names = {dev.name for dev in devices}
        self.dm_names = {dev.dm.name: dev.name for dev in devices if dev.dm and dev.dm.name}
        self.numbers = {
            (dev.major, dev.minor): dev.name for dev in devices if dev.major is not None
        }

    def of(self, source: str, mountpoint: str) -> str | None:
        """The kernel name of the block device `source` names, or None when it is not one."""
        if not source.startswith("/dev/"):
            return None
        rest = source[len("/dev/") :]
        if rest in self.names:
            return rest
        if rest.startswith("mapper/") and rest[len("mapper/") :] in self.dm_names:
            return self.dm_names[rest[len("mapper/") :]]
        real = self.fs.realpath(source)
        if real is not None and (name := PurePosixPath(real).name) in self.names:
            return name
        if rest == "root" and self.fs.is_live:
            return self._live_number(mountpoint)
        vg, sep, lv = rest.partition("/")
        if sep and "/" not in lv:
            # /dev/VG/LV is the dm device LVM names VG-LV, hyphens inside names doubled.
            return self.dm_names.get(f"{vg.replace('-', '--')}-{lv.replace('-', '--')}")
        return None

    def _live_number(self, mountpoint: str) -> str | None:
        try:
            st_dev = os.stat(mountpoint).st_dev
        except OSError:
            return None
        return self.numbers.get((os.major(st_dev), os.minor(st_dev)))


def probe_mounts(fs: HostFS, devices: Sequence[BlockDevice]) -> list[Mount]:
    """The mount table with each block-device source's kernel name filled in."""
    names = KernelNames(fs, devices)
    return [
        Mount(m.device, m.mountpoint, m.fstype, m.options, names.of(m.device, m.mountpoint))
        for m in read_mount_table(fs)
    ]


def mounts_by_point(mounts: Iterable[Mount]) -> dict[str, Mount]:
    """Mount point -> the mount visible there (a later mount hides an earlier one)."""
    return {mount.mountpoint: mount for mount in mounts}


def mount_holding(path: str, by_point: Mapping[str, Mount]) -> Mount | None:
    """The mount whose file system holds `path`: the longest mount point above it."""
    current = PurePosixPath(path)
    for candidate in (current, *current.parents):
        mount = by_point.get(str(candidate))
        if mount is not None:
            return mount
    return None
