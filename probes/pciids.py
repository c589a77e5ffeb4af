"""PCI names: vendor and device names from a `pci.ids` database, and short class names.

`pci.ids` is a reference database, not host state: it is looked for under the probed root
first (a gathered archive may carry its own) and then on this machine. Each file is parsed
once per process, only when a name is first needed; only vendor and device lines are kept.

Reads: usr/share/misc/pci.ids, usr/share/hwdata/pci.ids (under the root, then under `/`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from probes.hostfs import HostFS

PCI_IDS_PATHS = ("usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids")

# (class << 8 | subclass) -> short name; the prog-if byte is ignored.
_CLASS_NAMES: dict[int, str] = {
    0x0000: "Unclassified",
    0x0100: "SCSI",
    0x0101: "IDE",
    0x0102: "Floppy",
    0x0104: "RAID",
    0x0105: "ATA",
    0x0106: "SATA",
    0x0107: "SAS",
    0x0108: "NVMe",
    0x0109: "UFS",
    0x0180: "Storage",
    0x0200: "Ethernet",
    0x0201: "Token Ring",
    0x0207: "InfiniBand",
    0x0208: "Fabric",
    0x0280: "Network",
    0x0300: "VGA",
    0x0302: "3D controller",
    0x0380: "Display",
    0x0401: "Audio",
    0x0403: "Audio",
    0x0480: "Multimedia",
    0x0500: "RAM",
    0x0580: "Memory",
    0x0600: "Host bridge",
    0x0601: "ISA bridge",
    0x0604: "PCI bridge",
    0x0680: "Bridge",
    0x0700: "Serial",
    0x0780: "Communication",
    0x0800: "PIC",
    0x0805: "SD host",
    0x0806: "IOMMU",
    0x0880: "System peripheral",
    0x0B40: "Co-processor",
    0x0C00: "FireWire",
    0x0C03: "USB",
    0x0C04: "Fibre Channel",
    0x0C05: "SMBus",
    0x0C06: "InfiniBand",
    0x0C80: "Serial bus",
    0x1080: "Encryption",
    0x1101: "Performance counters",
    0x1180: "Signal processing",
    0x1200: "Accelerator",
    0x1300: "Instrumentation",
}


def pci_class_name(class_code: int) -> str:
    """A short name for a 24-bit PCI class code (0x010802 -> "NVMe"), else "class 0xNNNN"."""
    return _CLASS_NAMES.get(class_code >> 8, f"class 0x{class_code >> 8:04x}")


@dataclass(frozen=True)
class PciIds:
    """Vendor and device names by numeric id."""

    vendors: dict[int, str] = field(default_factory=dict)
    devices: dict[tuple[int, int], str] = field(default_factory=dict)

    def vendor_name(self, vendor: int | None) -> str | None:
        """The vendor's name, or None when unknown."""
        return None if vendor is None else self.vendors.get(vendor)

    def device_name(self, vendor: int | None, device: int | None) -> str | None:
        """The device's name, or None when unknown."""
        if vendor is None or device is None:
            return None
        return self.devices.get((vendor, device))


def parse_pci_ids(text: str) -> PciIds:
    """Parse pci.ids text; subsystem lines, comments and the class section are skipped."""
    # The class section ("C 01  Mass storage controller") follows every vendor; cut it off
    # rather than test each line for it.
    end = text.find("\nC ")
    if end >= 0:
        text = text[:end]
    vendors: dict[int, str] = {}
    devices: dict[tuple[int, int], str] = {}
    vendor = -1
    for line in text.split("\n"):
        first = line[:1]
        try:
            if first == "\t":
                if line[1] != "\t" and vendor >= 0:
                    devices[(vendor, int(line[1:5], 16))] = line[5:].strip()
            elif first and first != "#":
                vendor = int(line[:4], 16)
                vendors[vendor] = line[4:].strip()
        except ValueError:
            # A malformed vendor line must not lend its devices to the vendor above it.
            if first != "\t":
                vendor = -1
    return PciIds(vendors, devices)


@lru_cache(maxsize=4)
def load_pci_ids(path: Path) -> PciIds:
    """Parse one pci.ids file, once per process; an unreadable file gives an empty database."""
    try:
        data = path.read_bytes()
    except OSError:
        return PciIds()
    return parse_pci_ids(data.decode("utf-8", errors="replace"))


def pci_ids_path(fs: HostFS, system_root: Path = Path("/")) -> Path | None:
    """Where the pci.ids to use lives: under the probed root first, then under `system_root`."""
    # On the live host the two coincide; skipping the lookup through `fs` keeps the 1.3 MB
    # database out of what `--gather` captures.
    if not fs.is_live:
        for rel in PCI_IDS_PATHS:
            real = fs.realpath(rel)
            if real is not None and (fs.root / real).is_file():
                return fs.root / real
    for rel in PCI_IDS_PATHS:
        path = system_root / rel
        if path.is_file():
            return path
    return None


def find_pci_ids(fs: HostFS, system_root: Path = Path("/")) -> PciIds | None:
    """The pci.ids database for this root, or None when none is installed (no warning)."""
    path = pci_ids_path(fs, system_root)
    return None if path is None else load_pci_ids(path.resolve())
