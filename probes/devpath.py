"""Reading a sysfs device path: which PCI functions it passes and what lies below the last one."""

from __future__ import annotations

import re

PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
PCI_ROOT = re.compile(r"^pci([0-9a-fA-F]{4,}):([0-9a-fA-F]{2})$")


def is_pci_address(name: str) -> bool:
    """True for a PCI function address, 4-digit domain or wider."""
    return PCI_ADDRESS.fullmatch(name) is not None


def pci_addresses(real_path: str) -> list[str]:
    """The PCI functions a resolved sysfs path passes through, outermost first."""
    return [part for part in real_path.split("/") if is_pci_address(part)]


def nearest_pci(real_path: str) -> str | None:
    """The innermost PCI function on a resolved sysfs path, or None for virtual devices."""
    found = pci_addresses(real_path)
    return found[-1] if found else None


def below_pci(real_path: str) -> list[str]:
    """The path components after the innermost PCI function (empty when there is none)."""
    parts = real_path.split("/")
    last = max((i for i, part in enumerate(parts) if is_pci_address(part)), default=None)
    return [] if last is None else parts[last + 1 :]
