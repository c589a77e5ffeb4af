"""The storage probe on hwloc's captured machines, checked against hwloc's own lstopo output.

hwloc lists each disk (an OSDev of the storage kind) under the PCI function it found above it;
the probe must find the same disk and hang it, through its storage hops, from the same function.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from probes.hostfs import HostFS, parse_cpumask
from probes.ids import MACHINE_ID, pci_id
from probes.numa import numa_id
from probes.pmem import probe_dax
from probes.storage import StorageFound, probe_storage
from tests.conftest import HWLOC_DUMPS, HWLOC_FIXTURES
from tuner.topology.model import BlockDevice, StoragePort

RootOf = Callable[[str], Path]
Disk = tuple[str, str | None]  # (kernel name, PCI bus id hwloc puts it under, or None)

_CONSOLE_PCI = re.compile(r"^(\s*)PCI\b.*\bbusid=([0-9a-f]+:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")
_CONSOLE_DISK = re.compile(r'^(\s*)(?:OSDev\[(?:Storage|Block)\]|Block\b).*"([^"]+)"\s*$')
_OSDEV_STORAGE, _OSDEV_MEMORY = 1, 2  # hwloc's osdev_type bits (dax devices carry both)


def expected_output(name: str) -> Path:
    """hwloc's expected lstopo output for a dump, as its `.test` file names it."""
    for line in (HWLOC_FIXTURES / f"{name}.test").read_text().splitlines():
        if line.startswith("target:"):
            return HWLOC_FIXTURES / line.split(":", 1)[1].strip()
    raise AssertionError(f"{name}.test names no target")


def console_disks(text: str) -> Iterator[Disk]:
    """Storage OSDevs of an lstopo console output with the PCI line they are indented under."""
    pci_stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        while pci_stack and pci_stack[-1][0] >= indent:
            pci_stack.pop()
        if match := _CONSOLE_PCI.match(line):
            pci_stack.append((indent, match.group(2)))
        elif match := _CONSOLE_DISK.match(line):
            yield match.group(2), pci_stack[-1][1] if pci_stack else None


def xml_osdevs(path: Path, dax: bool = False) -> Iterator[Disk]:
    """Storage OSDevs of an lstopo XML (with `dax`, the DAX character devices instead), each
    with the PCIDev above it, or the NUMA node of the package it hangs from outside PCI."""

    def walk(obj: ET.Element, above: str | None) -> Iterator[Disk]:
        if obj.get("type") == "OSDev":
            kind = int(obj.get("osdev_type", "0"))
            if kind & _OSDEV_STORAGE and bool(kind & _OSDEV_MEMORY) == dax:
                yield obj.get("name", ""), above
        if obj.get("type") == "PCIDev":
            above = pci_id(obj.get("pci_busid", ""))
        elif (node := _single_node(obj.get("nodeset"))) is not None and above is None:
            above = numa_id(node)
        for child in obj.findall("object"):
            yield from walk(child, above)

    yield from walk(ET.parse(path).getroot(), None)


def _single_node(nodeset: str | None) -> int | None:
    """The NUMA node of an object whose nodeset holds exactly one (a package's)."""
    if not nodeset:
        return None
    nodes = parse_cpumask(",".join(w.removeprefix("0x") for w in nodeset.split(",")))
    return nodes[0] if len(nodes) == 1 else None


def hwloc_disks(name: str) -> list[Disk]:
    """(disk, the tree id hwloc hangs it from: pci:ADDRESS, numa:N, or None for the machine)."""
    target = expected_output(name)
    if target.suffix == ".xml":
        return list(xml_osdevs(target))
    return [(disk, busid and pci_id(busid)) for disk, busid in console_disks(target.read_text())]


def above_hops(found: StorageFound, name: str) -> str | None:
    """The id a block device hangs from once its storage hops are climbed (pci:..., machine)."""
    nodes = {node.id: node for node in found.nodes}
    device = next(n for n in found.nodes if isinstance(n, BlockDevice) and n.name == name)
    parent = device.parent
    while parent in nodes and isinstance(nodes[parent], StoragePort):
        parent = nodes[parent].parent
    return parent


DUMPS_WITH_DISKS = [name for name in HWLOC_DUMPS if hwloc_disks(name)]


def test_some_dumps_list_disks() -> None:
    assert len(DUMPS_WITH_DISKS) >= 3


@pytest.mark.parametrize("name", HWLOC_DUMPS)
def test_probing_every_dump_does_not_raise(hwloc_root: RootOf, name: str) -> None:
    fs = HostFS(hwloc_root(name))
    found = probe_storage(fs)
    assert all("\n" not in warning for warning in fs.warnings)
    ids = [node.id for node in found.nodes]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", DUMPS_WITH_DISKS)
def test_disks_sit_on_the_pci_function_hwloc_shows(hwloc_root: RootOf, name: str) -> None:
    found = probe_storage(HostFS(hwloc_root(name)))
    names = {n.name for n in found.nodes if isinstance(n, BlockDevice)}
    for disk, above in hwloc_disks(name):
        assert disk in names, disk
        assert above_hops(found, disk) == (above or MACHINE_ID), disk


def test_dax_devices_sit_on_the_node_hwloc_shows(hwloc_root: RootOf) -> None:
    # hwloc lists device-dax devices, not those the kmem driver turned into system RAM.
    name = "32em64t-2n8c+dax+nvme+mic+dimms"
    ours = {d.name: d for d in probe_dax(HostFS(hwloc_root(name)))}
    theirs = dict(xml_osdevs(expected_output(name), dax=True))
    assert theirs == {"dax0.0": "numa:0", "dax1.3": "numa:1"}
    assert {n: d.parent for n, d in ours.items() if d.driver != "kmem"} == theirs
    assert (ours["dax1.4"].driver, ours["dax1.4"].parent, ours["dax1.4"].target_node) == (
        "kmem", "numa:1", 5,
    )  # fmt: skip


def test_console_parser_on_a_small_sample() -> None:
    sample = "\n".join(
        [
            "  HostBridge L#0 (buses=0000:[00-00])",
            "    PCI L#0 (busid=0000:00:01.1 id=8086:7010 class=0101(IDE))",
            '      OSDev[Storage](Removable Media Device) L#0 (Size=1048575KiB) "sr0"',
            "    PCI L#2 (busid=0000:00:03.0 id=1af4:1000 class=0200(Ethernet))",
            '      OSDev[Network] L#1 (Address=06:7a:4c:00:00:22) "ens3"',
            '  OSDev[Storage] L#2 (Size=1KiB) "pmem0"',
        ]
    )
    assert list(console_disks(sample)) == [("sr0", "0000:00:01.1"), ("pmem0", None)]
