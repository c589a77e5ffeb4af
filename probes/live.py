"""What only the running host can tell: udev's identity properties, psutil's CPU figures and
the host's (derived) machine id.

Used when the probed root is `/`. udev knows a disk's model, serial and WWN from its own
inquiries (ATA IDENTIFY, SCSI VPD pages) and the file-system type from blkid, none of which
sysfs shows for every device; psutil gives the memory and CPU counts without parsing /proc.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import psutil

from probes.hostfs import HostFS
from probes.identity import read_machine_id
from tuner.topology.model import BlockDevice, Machine, Node, Topology

_UDEV_FIELDS = {
    "model": "ID_MODEL",
    "serial": "ID_SERIAL",
    "wwn": "ID_WWN",
    "fs_type": "ID_FS_TYPE",
}


def udev_block_properties() -> dict[str, dict[str, str]]:
    """ID_* properties of every block device udev knows, by kernel name (empty without udev)."""
    try:
        import pyudev

        context = pyudev.Context()
        found: dict[str, dict[str, str]] = {}
        for device in context.list_devices(subsystem="block"):
            props: Any = device.properties
            found[device.sys_name] = {k: str(props[k]) for k in props if k.startswith("ID_")}
        return found
    except Exception:  # libudev missing or unusable: sysfs alone still gives the topology
        return {}


def enrich_live(topology: Topology, fs: HostFS) -> Topology:
    """Fill identity fields sysfs lacked from udev, and the machine's memory from psutil."""
    udev = udev_block_properties()
    if not udev and fs.is_live:
        fs.warn("udev: no device properties available (libudev missing or udevd not running)")
    nodes: list[Node] = []
    for node in topology.nodes:
        if isinstance(node, BlockDevice) and node.name in udev:
            node = _with_udev(node, udev[node.name])
        elif isinstance(node, Machine):
            # Read here, not through fs: a capture for a bug report should not carry it.
            node = dataclasses.replace(
                node, memory_bytes=psutil.virtual_memory().total, machine_id=read_machine_id()
            )
        nodes.append(node)
    cpu = topology.cpu
    freq = psutil.cpu_freq()
    if cpu.max_mhz is None and freq is not None and freq.max:
        cpu = dataclasses.replace(cpu, max_mhz=float(freq.max))
    return dataclasses.replace(topology, nodes=tuple(nodes), cpu=cpu)


def _with_udev(dev: BlockDevice, props: dict[str, str]) -> BlockDevice:
    # sysfs wins where it had a value: udev's ID_* strings are sanitised copies of it.
    return dataclasses.replace(
        dev,
        model=dev.model or props.get("ID_MODEL"),
        serial=dev.serial or props.get("ID_SERIAL_SHORT") or props.get("ID_SERIAL"),
        wwn=dev.wwn or props.get("ID_WWN"),
        fs_type=dev.fs_type or props.get("ID_FS_TYPE"),
    )
