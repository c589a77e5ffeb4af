"""The PCI probe on hwloc's captured machines, checked against the raw trees and hwloc's XML."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from probes.hostfs import HostFS
from probes.ids import pci_bus_id, pci_id
from probes.pci import probe_pci
from tests.conftest import HWLOC_DUMPS, HWLOC_FIXTURES
from tuner.topology.model import PciFunction

RootOf = Callable[[str], Path]
HwlocPci = tuple[str, str, int, int, str, float]
XML_DUMPS = ["32em64t-2n8c+dax+nvme+mic+dimms", "40intel64-2g2n4c+pcilocality"]


def probed(root: Path) -> tuple[dict[str, PciFunction], HostFS]:
    fs = HostFS(root)
    nodes = probe_pci(fs)
    return {n.address: n for n in nodes if isinstance(n, PciFunction)}, fs


def raw_hex(path: Path) -> int:
    return int(path.read_text().strip(), 16)


@pytest.mark.parametrize("name", HWLOC_DUMPS)
def test_every_function_of_the_raw_tree(hwloc_root: RootOf, name: str) -> None:
    root = hwloc_root(name)
    bus = root / "sys/bus/pci/devices"
    listed = sorted(entry.name for entry in bus.iterdir()) if bus.is_dir() else []
    functions, fs = probed(root)
    # A bridge the listing leaves out (32intel64's 0000:5f:03.0) is read from its directory,
    # with a warning naming it; every other function is the listing's.
    unlisted = sorted(set(functions) - set(listed))
    assert sorted(functions) == sorted([*listed, *unlisted])
    assert fs.warnings == [
        f"{_real_dir(root, functions, a)}: missing from sys/bus/pci/devices; read from its "
        "sysfs directory"
        for a in unlisted
    ]
    for address in listed:
        real = Path(os.path.realpath(bus / address))
        fn = functions[address]
        assert (fn.vendor_id, fn.device_id, fn.class_code) == (
            raw_hex(real / "vendor"),
            raw_hex(real / "device"),
            raw_hex(real / "class"),
        )
        above = real.parent.name
        expected = pci_id(above) if ":" in above and "." in above else None
        if expected is None:
            domain, bus_no = above.removeprefix("pci").split(":")
            expected = pci_bus_id(domain, bus_no)
        assert fn.parent == expected, address


def _real_dir(root: Path, functions: dict[str, PciFunction], address: str) -> str:
    """The sysfs directory (relative to the root) of a function the bus listing left out."""
    below = next(a for a, fn in functions.items() if fn.parent == pci_id(address))
    real = Path(os.path.realpath(root / "sys/bus/pci/devices" / below)).parent
    return str(real.relative_to(root.resolve()))


def hwloc_pci(xml: Path) -> Iterator[HwlocPci]:
    """(busid, parent id, vendor, device, class16, link GB/s) for every PCI object hwloc lists."""

    def walk(obj: ET.Element, parent: str | None) -> Iterator[HwlocPci]:
        busid = obj.get("pci_busid")
        if obj.get("type") == "Bridge" and obj.get("bridge_type", "").startswith("0-"):
            # A host bridge: bridge_pci="0000:[00-06]" covers buses 00..06 from root bus 00.
            domain, _, buses = obj.get("bridge_pci", "").partition(":")
            parent = pci_bus_id(domain, buses.strip("[]").split("-")[0])
        elif busid is not None:
            pci_type = obj.get("pci_type", "").split()
            vendor, device = pci_type[1].strip("[]").split(":")
            assert parent is not None
            speed = float(obj.get("pci_link_speed", "0"))
            yield busid, parent, int(vendor, 16), int(device, 16), pci_type[0], speed
            parent = pci_id(busid)
        for child in obj.findall("object"):
            yield from walk(child, parent)

    yield from walk(ET.parse(xml).getroot(), None)


@pytest.mark.parametrize("name", XML_DUMPS)
def test_matches_hwloc_whole_io_xml(hwloc_root: RootOf, name: str) -> None:
    functions, _ = probed(hwloc_root(name))
    seen = list(hwloc_pci(HWLOC_FIXTURES / f"{name}.xml"))
    assert len(seen) > 30
    for busid, parent, vendor, device, class16, gbps in seen:
        fn = functions[busid]
        assert (fn.vendor_id, fn.device_id) == (vendor, device), busid
        assert fn.class_code is not None and fn.class_code >> 8 == int(class16, 16), busid
        assert fn.parent == parent, busid
        # hwloc reports the trained link's usable GB/s after encoding, 0 when unknown.
        usable = fn.link.usable_mbps if fn.link else None
        assert (usable or 0) / 1000 == pytest.approx(gbps, abs=0.001), busid


def test_32_bit_domain(hwloc_root: RootOf) -> None:
    root = hwloc_root("2pa-pcidomain32bits")
    functions, _ = probed(root)
    fn = functions["10000:00:04.0"]
    assert fn.class_code == raw_hex(root / "sys/bus/pci/devices/10000:00:04.0/class")
    assert fn.class_code >> 8 == 0x0100
    assert fn.parent == pci_bus_id("10000", "00")
    assert fn.msi_irqs == tuple(
        sorted(int(n) for n in os.listdir(root / "sys/bus/pci/devices/10000:00:04.0/msi_irqs"))
    )
