"""PCI: host bridges and functions, nested as sysfs nests them, with ids, locality and link.

A function's parent is the bridge function just above it in its resolved sysfs path, or its
host bridge (`sys/devices/pciDDDD:BB`). A host bridge nested below a function (Intel VMD,
whose domain 10000 and up sits behind an endpoint) hangs from that function. A bridge that
`sys/bus/pci/devices` leaves out but whose directory is on the path is read from there; one
that is missing altogether is skipped, its functions hung from the next function up. Functions
found outside any `pciDDDD:BB` directory (captures that copy `sys/bus/pci/devices/*` as plain
directories) hang from a host bridge named by their own domain and bus, as lstopo shows them.

Reads: sys/bus/pci/devices/* (links; sys/devices/pci*/ walked when that is missing), and per
function: vendor, device, subsystem_vendor, subsystem_device, class, driver (link), numa_node,
local_cpulist (local_cpus), irq, msi_irqs/, current_link_speed, current_link_width,
max_link_speed, max_link_width, physfn (an SR-IOV virtual function has it), and what the
firmware says of it: index (the SMBIOS type 41 instance, which only on-board devices have) and
label (the firmware's name for it, "Embedded NIC 1"). Slots: sys/bus/pci/slots/*/address
(`DDDD:BB:DD`, or `DDDD:BB` for a slot that holds a whole bus). Names come from pci.ids (see
probes.pciids).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TypeVar

from probes.devpath import PCI_ROOT, is_pci_address
from probes.hostfs import HostFS, digits, parse_value, read_cpulist, read_cpumask
from probes.ids import MACHINE_ID, pci_bus_id, pci_id
from probes.numa import MAX_NODES
from probes.pciids import PciIds, find_pci_ids
from probes.pciids import pci_class_name as pci_class_name
from probes.printable import REPLACEMENT
from tuner.topology.model import Node, PciFunction, PciHostBridge, PciLink

__all__ = ["parse_link_speed", "parse_link_width", "pci_class_name", "probe_pci"]

BUS_DIR = "sys/bus/pci/devices"
SLOTS_DIR = "sys/bus/pci/slots"
DEVICES_DIR = "sys/devices"
LINK_ATTRS = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
_SPEED = re.compile(r"^([0-9]{1,4}(?:\.[0-9]{1,4})?)\s*GT/s\b")
_MAX_GTS = 1000.0
"""Far above any PCIe generation (PCIe 7 runs 128 GT/s): a faster link is a corrupt capture."""
_WIDTHS = frozenset((1, 2, 4, 8, 12, 16, 32))
_SLOT_ADDRESS = re.compile(r"^([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2})(:[0-9a-fA-F]{2})?$")
_MAX_NAME = 64  # SMBIOS strings and slot names are short; anything longer is not a name
_U32 = 2**32 - 1
T = TypeVar("T")


def probe_pci(fs: HostFS) -> list[Node]:
    """Every PCI host bridge that has functions, then every function, each bridge before its own."""
    paths = _function_paths(fs)
    ids = find_pci_ids(fs) if paths else None
    slots = _slots(fs) if paths else {}
    found = set(paths)
    bridges: dict[str, PciHostBridge] = {}
    functions: list[Node] = []
    for real in paths:
        parts = real.split("/")
        root = _host_bridge(parts)
        parent = _parent_id(_present_ancestors(parts[:-1], found))
        if root is None:
            root = _bus_bridge(parts[-1])
            parent = root[1].id if parent == MACHINE_ID else parent
        bridges.setdefault(root[0], root[1])
        functions.append(_read_function(fs, real, parent, ids, slots))
    return [*bridges.values(), *functions]


# -- finding the functions --------------------------------------------------------------------


def _function_paths(fs: HostFS) -> list[str]:
    """Resolved sysfs paths of every PCI function, sorted so a bridge comes before what it holds."""
    found: set[str] = set()
    if fs.is_dir(BUS_DIR):
        for name in fs.listdir(BUS_DIR):
            link = f"{BUS_DIR}/{name}"
            real = fs.realpath(link)
            if real is None:
                fs.warn(f"{link}: dangling link; function skipped")
            elif not is_pci_address(PurePosixPath(real).name):
                fs.warn(f"{link}: points to {real}, not a PCI function; skipped")
            else:
                found.add(real)
        found |= _unlisted_bridges(fs, found)
    else:
        for name in fs.listdir(DEVICES_DIR):
            if PCI_ROOT.fullmatch(name):
                _walk(fs, f"{DEVICES_DIR}/{name}", found)
    return sorted(found, key=lambda path: path.split("/"))


def _walk(fs: HostFS, rel: str, found: set[str]) -> None:
    """Collect PCI functions below `rel`, descending only into real function and root dirs."""
    for name in fs.listdir(rel):
        if not (is_pci_address(name) or PCI_ROOT.fullmatch(name)):
            continue
        child = f"{rel}/{name}"
        # A link here would lead elsewhere in the tree (or round in a loop): not a child.
        if fs.realpath(child) != child or not fs.is_dir(child):
            continue
        if is_pci_address(name):
            found.add(child)
        _walk(fs, child, found)


def _unlisted_bridges(fs: HostFS, found: set[str]) -> set[str]:
    """Bridges on the functions' paths that the bus listing left out but sysfs still holds."""
    extra: set[str] = set()
    for real in found:
        parts = real.split("/")
        for index in range(len(parts) - 1):
            if not is_pci_address(parts[index]):
                continue
            ancestor = "/".join(parts[: index + 1])
            # A function's directory has its config-space attributes; a bare one is not read.
            if ancestor in found or ancestor in extra or not fs.exists(f"{ancestor}/class"):
                continue
            fs.warn(f"{ancestor}: missing from {BUS_DIR}; read from its sysfs directory")
            extra.add(ancestor)
    return extra


def _present_ancestors(parts: list[str], found: set[str]) -> list[str]:
    """The path components, less the PCI functions above that no listing or directory has."""
    kept = []
    for index, part in enumerate(parts):
        if is_pci_address(part) and "/".join(parts[: index + 1]) not in found:
            continue
        kept.append(part)
    return kept


def _bus_bridge(address: str) -> tuple[str, PciHostBridge]:
    """The host bridge of a function found outside any pciDDDD:BB directory, by its address."""
    domain, bus = address.split(":")[:2]
    key = f"pci{domain}:{bus}"
    return key, PciHostBridge(
        id=pci_bus_id(domain, bus), parent=MACHINE_ID, name=key, domain=domain, bus=bus
    )


def _parent_id(parts: list[str]) -> str:
    """The id of the nearest PCI function or host bridge among path components."""
    for part in reversed(parts):
        if is_pci_address(part):
            return pci_id(part)
        match = PCI_ROOT.fullmatch(part)
        if match:
            return pci_bus_id(match.group(1), match.group(2))
    return MACHINE_ID


def _host_bridge(parts: list[str]) -> tuple[str, PciHostBridge] | None:
    """The innermost host bridge on a function's path, keyed by its own path."""
    for index in range(len(parts) - 1, -1, -1):
        match = PCI_ROOT.fullmatch(parts[index])
        if match:
            domain, bus = match.group(1), match.group(2)
            bridge = PciHostBridge(
                id=pci_bus_id(domain, bus),
                parent=_parent_id(parts[:index]),
                name=parts[index],
                domain=domain,
                bus=bus,
            )
            return "/".join(parts[: index + 1]), bridge
    return None


# -- one function -----------------------------------------------------------------------------


def _read_function(
    fs: HostFS, base: str, parent: str, ids: PciIds | None, slots: dict[str, str]
) -> PciFunction:
    address = PurePosixPath(base).name
    # One listing spares a path resolution for every attribute this function lacks.
    have = frozenset(fs.listdir(base))
    vendor = fs.read_int(f"{base}/vendor", expected=True, base=16)
    device = fs.read_int(f"{base}/device", expected=True, base=16)
    return PciFunction(
        id=pci_id(address),
        parent=parent,
        name=address,
        address=address,
        vendor_id=vendor,
        device_id=device,
        subsystem_vendor_id=_optional_int(fs, base, "subsystem_vendor", have, 16),
        subsystem_device_id=_optional_int(fs, base, "subsystem_device", have, 16),
        class_code=_read_class(fs, f"{base}/class"),
        vendor_name=ids.vendor_name(vendor) if ids else None,
        device_name=ids.device_name(vendor, device) if ids else None,
        driver=_driver(fs, f"{base}/driver") if "driver" in have else None,
        numa_node=_read_numa(fs, f"{base}/numa_node") if "numa_node" in have else None,
        local_cpus=_local_cpus(fs, base, have),
        link=_read_link(fs, base, have),
        irq=_optional_int(fs, base, "irq", have) or None,
        msi_irqs=_msi_irqs(fs, f"{base}/msi_irqs") if "msi_irqs" in have else (),
        virtual_function="physfn" in have,
        slot=_slot_of(address, slots),
        onboard_index=_optional_int(fs, base, "index", have, low=0, high=_U32),
        label=_name(fs, f"{base}/label") if "label" in have else None,
    )


def _optional_int(
    fs: HostFS,
    base: str,
    name: str,
    have: frozenset[str],
    radix: int = 10,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int | None:
    if name not in have:
        return None
    return fs.read_int(f"{base}/{name}", base=radix, low=low, high=high)


def _name(fs: HostFS, rel: str) -> str | None:
    """A short printable name (a slot's, the firmware's label), or None with a warning."""
    text = fs.read(rel)
    if not text:
        return None
    # HostFS.read has replaced control characters with U+FFFD: a name that held one is still
    # not a firmware's name.
    if len(text) > _MAX_NAME or not text.isprintable() or REPLACEMENT in text:
        fs.warn(f"{rel}: not a name ({len(text)} characters, or unprintable ones); ignored")
        return None
    return text


def _slots(fs: HostFS) -> dict[str, str]:
    """Slot name by the address it holds: `DDDD:BB:DD` (one device) or `DDDD:BB` (a bus)."""
    found: dict[str, str] = {}
    for name in fs.listdir(SLOTS_DIR):
        if len(name) > _MAX_NAME or not name.isprintable():
            fs.warn(f"{SLOTS_DIR}: an entry that is not a slot name; skipped")
            continue
        rel = f"{SLOTS_DIR}/{name}/address"
        address = fs.read(rel)
        if address is None:
            continue  # an empty slot the firmware describes without an address
        if not _SLOT_ADDRESS.fullmatch(address):
            fs.warn(f"{rel}: expected DDDD:BB:DD, got {address[:40]!r}")
            continue
        found.setdefault(address.lower(), name)
    return found


def _slot_of(address: str, slots: dict[str, str]) -> str | None:
    """The slot holding the function at `address` (its device, or its whole bus)."""
    device = address.rpartition(".")[0].lower()
    return slots.get(device) or slots.get(device.rpartition(":")[0])


def _read_class(fs: HostFS, rel: str) -> int | None:
    value = fs.read_int(rel, expected=True, base=16)
    if value is not None and not 0 <= value <= 0xFFFFFF:
        fs.warn(f"{rel}: class code 0x{value:x} is not 24 bits")
        return None
    return value


def _driver(fs: HostFS, rel: str) -> str | None:
    # The target's name is enough: captures often leave bus/pci/drivers/* out.
    target = fs.readlink(rel)
    if not target:
        return None
    return PurePosixPath(target).name or None


def _read_numa(fs: HostFS, rel: str) -> int | None:
    # -1: no node (the kernel's NUMA_NO_NODE); MAX_NODES bounds a real one.
    value = fs.read_int(rel, low=-1, high=MAX_NODES - 1)
    return None if value == -1 else value


def _local_cpus(fs: HostFS, base: str, have: frozenset[str]) -> tuple[int, ...]:
    cpus = read_cpulist(fs, f"{base}/local_cpulist") if "local_cpulist" in have else None
    if cpus is None and "local_cpus" in have:
        cpus = read_cpumask(fs, f"{base}/local_cpus")
    return cpus or ()


def _msi_irqs(fs: HostFS, rel: str) -> tuple[int, ...]:
    names = fs.listdir(rel)
    bad = [name for name in names if not digits(name)]
    if bad:
        fs.warn(f"{rel}: unexpected entries {', '.join(bad[:3])}")
    return tuple(sorted(int(name) for name in names if digits(name)))


# -- the PCIe link ----------------------------------------------------------------------------


def parse_link_speed(text: str) -> float | None:
    """GT/s per lane from "8.0 GT/s PCIe", "5 GT/s"; None for "Unknown"; ValueError for garbage."""
    if text.lower().startswith("unknown"):
        return None
    match = _SPEED.match(text.strip())
    if match is None or not 0 < float(match.group(1)) <= _MAX_GTS:
        raise ValueError(f"not a link speed: {text!r}")
    return float(match.group(1))


def parse_link_width(text: str) -> int | None:
    """Lanes from "4" or "x4"; None for 0 (link down, empty slot); ValueError for garbage."""
    width = int(text.strip().removeprefix("x"))
    if width == 0:
        return None
    if width not in _WIDTHS:
        raise ValueError(f"not a PCIe link width: {width}")
    return width


def _read_link(fs: HostFS, base: str, have: frozenset[str]) -> PciLink | None:
    """The link as trained and at most; None for conventional PCI, which has no link files."""
    if have.isdisjoint(LINK_ATTRS):
        return None

    def value(attr: str, parse: Callable[[str], T | None], what: str) -> T | None:
        rel = f"{base}/{attr}"
        return parse_value(fs, rel, fs.read(rel) if attr in have else None, parse, what)

    return PciLink(
        speed_gts=value("current_link_speed", parse_link_speed, "a link speed"),
        width=value("current_link_width", parse_link_width, "a link width"),
        max_speed_gts=value("max_link_speed", parse_link_speed, "a link speed"),
        max_width=value("max_link_width", parse_link_width, "a link width"),
    )
