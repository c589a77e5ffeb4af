"""Hardware classes of whole disks: a disk that appears gets the plan of a held disk like it.

A class is the fleet fingerprint's row of the disk (tuner/fleet/fingerprint.py: class, size,
rotation, model, the storage hops to its controller), so two disks of one class are what a
fleet shares one plan for. A loop device (the lab's disks) also carries the directory of its
backing file: a lab disk joins its own lab's class, never a stranger's loop device of the same
size in /dev/shm (tests and other labs on the machine make those all the time).

Classes come from a probe of the host, which is too heavy for the periodic check: the daemon
takes them when it loads a plan and when a device event passes the cheap `quick` look first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from probes.hostfs import HostFS, digits
from tuner.units import human_bytes

SECTOR = 512
"""/sys/block/*/size counts 512-byte sectors whatever the device's block size."""


@dataclass(frozen=True)
class Quick:
    """What sysfs says of a disk in two reads: enough to rule out most strangers."""

    size_bytes: int
    backing_dir: str | None


@dataclass(frozen=True)
class HardwareClass:
    """A disk's class: `key` (canonical JSON) compares, `summary` is for people."""

    key: str
    summary: str
    size_bytes: int
    backing_dir: str | None

    def admits(self, quick: Quick) -> bool:
        """False when a disk cannot be of this class (another size, another lab)."""
        return quick.size_bytes == self.size_bytes and quick.backing_dir == self.backing_dir


def backing_dir(backing_file: str | None) -> str | None:
    """The directory of a loop device's file ("/dev/shm/lab/d0.img (deleted)" -> "/dev/shm/lab")."""
    if not backing_file:
        return None
    return str(PurePosixPath(backing_file.removesuffix(" (deleted)")).parent)


def quick(root: Path, name: str) -> Quick | None:
    """Size and backing directory of a whole disk from sysfs; None for anything else (a
    partition, an empty loop device, a name that is not a block device)."""
    # /sys/block lists whole disks only; a detached loop device reads size 0.
    fs = HostFS(root)
    sectors = fs.read(f"sys/block/{name}/size") if "/" not in name else None
    if not sectors or not digits(sectors) or int(sectors) == 0:
        return None
    return Quick(int(sectors) * SECTOR, backing_dir(fs.read(f"sys/block/{name}/loop/backing_file")))


def classes(root: Path, names: list[str]) -> dict[str, HardwareClass]:
    """The class of each named whole disk that is here, from one probe of the host."""
    from probes.host import probe_host
    from tuner.fleet.fingerprint import disk_row

    topology = probe_host(HostFS(root))
    found = {}
    for name in names:
        disk = topology.block_device(name)
        if disk is None or disk.kind == "partition" or not disk.size_bytes:
            continue
        row: dict[str, Any] = disk_row(topology, disk)
        if disk.loop is not None:
            row["backing_dir"] = backing_dir(disk.loop.backing_file)
            if row["backing_dir"] is None:
                continue  # an empty loop device is no disk
        key = json.dumps(row, sort_keys=True, separators=(",", ":"))
        found[name] = HardwareClass(key, summary(row), disk.size_bytes, row.get("backing_dir"))
    return found


def summary(row: dict[str, Any]) -> str:
    """One line: "loop 77.0 MiB, file in /dev/shm/lab" or "ssd 894.3 GiB MZ7LH960 via sas"."""
    words = [row["class"], human_bytes(row["size_bytes"])]
    if row.get("model"):
        words.append(str(row["model"]))
    text = " ".join(words)
    hops = [hop[0] for hop in row.get("path") or [] if hop[0] not in ("lun", "target")]
    if hops:
        text += " via " + "/".join(dict.fromkeys(hops))
    if row.get("backing_dir"):
        text += f", file in {row['backing_dir']}"
    return text


class Matcher:
    """Finds the held class of a disk that appears, probing the host only for a disk sysfs
    does not already rule out, and only once for a disk that matched no class."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._strangers: dict[str, tuple[object, Quick]] = {}

    def match(self, name: str, identity: object, held: list[HardwareClass]) -> HardwareClass | None:
        """The class of `name` if it is one of `held`, else None. `identity` tells a new disk
        under a name already ruled out from the one ruled out."""
        found = quick(self.root, name)
        if found is None or self._strangers.get(name) == (identity, found):
            return None
        cls = None
        if any(c.admits(found) for c in held):
            cls = classes(self.root, [name]).get(name)
        if cls is None or cls not in held:
            self._strangers[name] = (identity, found)
            return None
        self._strangers.pop(name, None)
        return cls
