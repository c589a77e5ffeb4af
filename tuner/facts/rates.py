"""Expected streaming rate of a disk, by device class, bounded by the disk's own link.

The figures are sustained sequential rates of current devices, deliberately round: they say
what a path must carry when its disks stream together, not what one model measures.

- HDD, 200 MB/s: 7200 rpm enterprise drives of 4-20 TB stream 180-280 MB/s on the outer
  tracks and about a third less on the inner ones (the zoned-bandwidth lesson).
- SATA SSD, 500 MB/s: SATA 6 Gb/s carries 600 MB/s, and drives reach 500-550 of it.
- SAS SSD, 1000 MB/s: 12 Gb/s SAS carries 1200 MB/s per lane; drives stream 900-1100.
- NVMe, 3000 MB/s: a PCIe 3.0 x4 drive streams about 3000-3500 MB/s; faster drives are held to
  3000 so the figure stays a floor most of them reach, and every NVMe drive is bounded by its
  own PCIe link (a Gen3 x2 link gives 1969 MB/s).
- A disk's own SAS or SATA link bounds it too: an HDD on a 1.5 Gb/s link streams 150 MB/s.
- Unknown, None: virtual disks (virtio, a hypervisor's emulated controller), whose rate is the
  host's and not the device's; disks with no PCI controller; optical drives; unknown rotation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tuner.facts.links import lane_mbps, pcie_mbps
from tuner.topology.model import BlockDevice, PciFunction, StoragePort

HDD_MBPS = 200.0
SATA_SSD_MBPS = 500.0
SAS_SSD_MBPS = 1000.0
NVME_MBPS = 3000.0
_CLASS_MBPS = {"hdd": HDD_MBPS, "sata_ssd": SATA_SSD_MBPS, "sas_ssd": SAS_SSD_MBPS}

# PCI vendors of emulated devices: virtio (Red Hat), VMware, Microsoft Hyper-V, VirtualBox.
VIRTUAL_PCI_VENDORS = frozenset((0x1AF4, 0x15AD, 0x1414, 0x80EE))
# SCSI vendor strings emulated disks report behind a generic controller.
VIRTUAL_SCSI_VENDORS = frozenset(("QEMU", "VMWARE", "MSFT", "VBOX", "GOOGLE", "AMAZON"))
_OPTICAL = re.compile(r"^sr\d+$")  # SCSI CD/DVD drives: block devices, but not storage to tune


def is_optical(dev: BlockDevice) -> bool:
    """True for CD/DVD drives (sr0...), which report themselves rotational."""
    return _OPTICAL.fullmatch(dev.name) is not None


def is_virtual_disk(
    dev: BlockDevice, hops: Sequence[StoragePort], controller: PciFunction | None
) -> bool:
    """True when the disk is emulated by a hypervisor: its speed is the host's, not a class's."""
    if any(hop.kind == "virtio" for hop in hops):
        return True
    if controller is not None and controller.vendor_id in VIRTUAL_PCI_VENDORS:
        return True
    return (dev.vendor or "").strip().upper() in VIRTUAL_SCSI_VENDORS


def device_class(
    dev: BlockDevice, hops: Sequence[StoragePort], controller: PciFunction | None
) -> str | None:
    """hdd, sata_ssd, sas_ssd or nvme; None for virtual disks and unknown rotation.

    `hops` are the storage ports between the disk and its controller, nearest first. A
    solid-state disk is SATA when an ata port lies on its path or it answers SCSI inquiry as
    "ATA" (a SATA drive on a SAS HBA); otherwise, behind a SCSI host, it is SAS. A disk with
    no PCI controller (zram, nbd, a platform device) has no class: nothing says what it is.
    """
    if controller is None or dev.kind not in ("disk", "nvme") or is_optical(dev):
        return None
    if is_virtual_disk(dev, hops, controller):
        return None
    if dev.kind == "nvme":
        return "nvme"
    if dev.rotational is None:
        return None
    if dev.rotational:
        return "hdd"
    sata = any(hop.kind == "ata_port" for hop in hops) or (dev.vendor or "").strip() == "ATA"
    return "sata_ssd" if sata else "sas_ssd"


def own_lane_mbps(hops: Sequence[StoragePort]) -> float | None:
    """MB/s of one lane of the nearest port with a known rate: one disk streams over one lane."""
    for hop in hops:
        if hop.link_gbps is not None:
            return lane_mbps(hop.link_gbps)
    return None


def expected_mbps(
    dev: BlockDevice, hops: Sequence[StoragePort], controller: PciFunction | None
) -> float | None:
    """The streaming MB/s a disk of this class gives, bounded by its own link; None if unknown."""
    kind = device_class(dev, hops, controller)
    if kind is None:
        return None
    if kind == "nvme":
        link = pcie_mbps(controller.link) if controller is not None else None
        return min(NVME_MBPS, link) if link else NVME_MBPS
    rate = _CLASS_MBPS[kind]
    lane = own_lane_mbps(hops)
    return min(rate, lane) if lane else rate
