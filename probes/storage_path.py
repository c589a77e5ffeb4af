"""The storage path: the hops between a disk's controller (a PCI function) and the disk.

A disk's resolved sysfs directory names every device on the way down, e.g.
`.../0000:03:00.0/host4/port-4:0/expander-4:0/port-4:0:1/end_device-4:0:1/target4:0:1/
4:0:1:0/block/sdb`. Each named device after the innermost PCI function becomes a StoragePort
(emitted once, however many disks share it); class directories (`block`, `nvme`, `scsi_host`)
only group and are skipped. A disk with no PCI function on its path (loop, md, dm, zram, pmem)
hangs from the machine.

Reads: sys/devices/virtual/nvme-subsystem/nvme-subsysN/ (the controllers of a multipath
NVMe namespace, whose own directory is virtual).
"""

from __future__ import annotations

import re

from probes.devpath import below_pci, nearest_pci
from probes.hostfs import HostFS
from probes.ids import MACHINE_ID, pci_id, port_id
from tuner.topology.model import StoragePort

_HOP_KINDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind)
    for pattern, kind in (
        (r"host\d+$", "scsi_host"),
        (r"ata\d+$", "ata_port"),
        (r"port-\d+(:\d+)+$", "sas_port"),
        (r"expander-\d+(:\d+)+$", "expander"),
        (r"end_device-\d+(:\d+)+$", "end_device"),
        (r"target\d+:\d+:\d+$", "target"),
        (r"\d+:\d+:\d+:\d+$", "lun"),
        (r"nvme\d+$", "nvme_ctrl"),
        (r"virtio\d+$", "virtio"),
    )
)
_NVME_SUBSYSTEM = re.compile(r"^(sys/devices/virtual/nvme-subsystem/nvme-subsys\d+)/")
_NVME_CTRL = re.compile(r"nvme\d+$")


def hop_kind(name: str) -> str | None:
    """The StoragePort kind of a path component; None for grouping directories."""
    for pattern, kind in _HOP_KINDS:
        if pattern.match(name):
            return kind
    # Device names carry an instance number; class directories (block, nvme, mmc_host) do not.
    return "other" if any(ch in "0123456789" for ch in name) else None


def path_hops(real: str) -> tuple[str | None, list[tuple[str, str]]]:
    """(controller PCI address, [(hop name, kind)...]) for a disk's resolved directory."""
    controller = nearest_pci(real)
    if controller is None:
        return None, []
    below = below_pci(real)[:-1]  # the last component is the disk itself
    hops = [(name, kind) for name in below if (kind := hop_kind(name)) is not None]
    return controller, hops


class StoragePaths:
    """Collects the hops of many disks, each hop once, and tells each disk its parent id."""

    def __init__(self, fs: HostFS) -> None:
        self.fs = fs
        self.ports: dict[str, StoragePort] = {}
        self._subsystems: dict[str, str | None] = {}

    def parent_of(self, real: str) -> str:
        """The id of the node a whole disk hangs from, recording the hops on its way."""
        match = _NVME_SUBSYSTEM.match(real)
        if match is not None:
            # A multipath namespace lives under its subsystem; hang it below a controller.
            ctrl_real = self._subsystem_controller(match.group(1))
            if ctrl_real is not None:
                real = f"{ctrl_real}/{real.rsplit('/', 1)[-1]}"
        controller, hops = path_hops(real)
        if controller is None:
            return MACHINE_ID
        parent = pci_id(controller)
        for name, kind in hops:
            node_id = port_id(name)
            if node_id not in self.ports:
                self.ports[node_id] = StoragePort(id=node_id, parent=parent, name=name, kind=kind)
            parent = node_id
        return parent

    def _subsystem_controller(self, subsystem: str) -> str | None:
        if subsystem not in self._subsystems:
            ctrls = [n for n in self.fs.listdir(subsystem) if _NVME_CTRL.match(n)]
            # A tree node has one parent: with several paths, the first controller stands for all.
            self._subsystems[subsystem] = (
                self.fs.realpath(f"{subsystem}/{ctrls[0]}") if ctrls else None
            )
        return self._subsystems[subsystem]

    def nodes(self) -> list[StoragePort]:
        """The hops found so far, in discovery order."""
        return list(self.ports.values())
