"""Persistent memory: which NUMA node pmem disks and device-dax devices sit on, and their mode.

NVDIMM namespaces hang from an ACPI bus (`.../ACPI0012:00/ndbus0/region1/pfn1.0/block/pmem1.2`),
not from PCI, so no controller gives their locality: the devices between the block device and
its region carry `numa_node`, the node whose memory controller holds them (hwloc places them
by it too). The directory above `block/` names the namespace's mode: `pfnX.Y` is fsdax (pages
the kernel can map for DAX mounts), `bttX.Y` sector mode (a block translation table: atomic
sectors, slower), `namespaceX.Y` raw.

device-dax devices (/dev/daxX.Y) are character devices with no block layer. With the kmem
driver their memory is handed to the kernel as system RAM of NUMA node `target_node`.

Reads: `numa_node` of up to four directories above a block device that sits outside PCI and
sys/devices/virtual; sys/bus/dax/devices/* (sys/class/dax/* before Linux 5.1) with each one's
size, target_node and driver (link), and the numa_node above it.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from probes.hostfs import HostFS
from probes.ids import MACHINE_ID
from probes.numa import MAX_NODES, numa_id
from tuner.topology.model import DaxDevice

DAX_DIRS = ("sys/bus/dax/devices", "sys/class/dax")
_DAX_NAME = re.compile(r"dax[0-9]{1,5}\.[0-9]{1,5}$")
_MODES = (
    (re.compile(r"pfn[0-9]+\.[0-9]+$"), "fsdax"),
    (re.compile(r"btt[0-9]+\.[0-9]+$"), "sector"),
    (re.compile(r"namespace[0-9]+\.[0-9]+$"), "raw"),
)
_LEVELS = 4  # block device -> namespace/pfn/btt -> region: the node is found within a few
_MAX_BYTES = 2**63 - 1


def pmem_mode(real: str) -> str | None:
    """fsdax, sector or raw for a pmem disk's resolved directory; None for any other disk."""
    parts = real.split("/")
    if len(parts) < 3 or parts[-2] != "block" or not any(p.startswith("ndbus") for p in parts):
        return None
    holder = parts[-3]
    return next((mode for pattern, mode in _MODES if pattern.match(holder)), None)


def node_above(fs: HostFS, real: str) -> int | None:
    """The NUMA node the nearest of a device's parents reports (up to four levels); None for
    none, or -1 (no locality)."""
    path = PurePosixPath(real).parent
    for _ in range(_LEVELS):
        if str(path) in ("sys/devices", "sys", "."):
            return None
        rel = f"{path}/numa_node"
        if fs.exists(rel):
            value = fs.read_int(rel, low=-1, high=MAX_NODES - 1)
            return None if value is None or value < 0 else value
        path = path.parent
    return None


def local_parent(fs: HostFS, real: str) -> str:
    """The id a device outside PCI hangs from: its NUMA node where sysfs gives one."""
    if real.startswith("sys/devices/virtual/"):
        return MACHINE_ID
    node = node_above(fs, real)
    return MACHINE_ID if node is None else numa_id(node)


def probe_dax(fs: HostFS) -> list[DaxDevice]:
    """Every device-dax device, under the NUMA node it is local to."""
    names: dict[str, str] = {}
    for top in DAX_DIRS:
        for name in fs.listdir(top):
            if _DAX_NAME.match(name):
                names.setdefault(name, f"{top}/{name}")
    found = []
    for name, link in sorted(names.items()):
        real = fs.realpath(link)
        if real is None:
            fs.warn(f"{link}: dangling link ({fs.readlink(link) or 'no target'})")
            continue
        target = fs.read_int(f"{real}/target_node", low=-1, high=MAX_NODES - 1)
        found.append(
            DaxDevice(
                id=f"dax:{name}",
                parent=local_parent(fs, real),
                name=name,
                size_bytes=fs.read_int(f"{real}/size", low=0, high=_MAX_BYTES),
                driver=fs.link_name(f"{real}/driver"),
                target_node=None if target is None or target < 0 else target,
            )
        )
    return found
