"""The network and IRQ probes against real machines' captures, checked against hwloc's own output.

Each network interface hwloc lists (an OSDev of type Network) must be found on the same PCI
function. The expected pairs are parsed from hwloc's `.console` or `.xml` output, never typed in.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from probes.hostfs import HostFS
from probes.ids import pci_id
from probes.irq import probe_irqs
from probes.net import probe_net
from tests.conftest import HWLOC_DUMPS, HWLOC_FIXTURES

_CONSOLE_PCI = re.compile(r"^(\s*)PCI L#\d+ \(busid=([0-9a-f:.]+)")
_CONSOLE_NET = re.compile(r'^(\s*)OSDev\[Network\] .*"([^"]+)"\s*$')
# hwloc 3 writes OSDev types as flags; an interface is Network without OpenFabrics (mlx4_0).
_NETWORK, _OPENFABRICS = 16, 32


def hwloc_interfaces(dump: str) -> dict[str, str]:
    """Interface name -> PCI address, as hwloc's expected output for this dump says."""
    console = HWLOC_FIXTURES / f"{dump}.console"
    if console.exists():
        return _from_console(console)
    xml = HWLOC_FIXTURES / f"{dump}.xml"
    return _from_xml(xml) if xml.exists() else {}


def _from_console(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    pci_stack: list[tuple[int, str]] = []
    for line in path.read_text().splitlines():
        if match := _CONSOLE_PCI.match(line):
            indent = len(match.group(1))
            pci_stack = [(i, a) for i, a in pci_stack if i < indent] + [(indent, match.group(2))]
        elif match := _CONSOLE_NET.match(line):
            indent = len(match.group(1))
            parents = [a for i, a in pci_stack if i < indent]
            if parents:
                found[match.group(2)] = parents[-1]
    return found


def _from_xml(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    old_format = root.get("version", "2").startswith("2")
    found: dict[str, str] = {}

    def is_network(kind: int) -> bool:
        if old_format:
            return kind == 2  # hwloc 2's enum: HWLOC_OBJ_OSDEV_NETWORK
        return bool(kind & _NETWORK) and not kind & _OPENFABRICS

    def walk(element: ET.Element, pci: str | None) -> None:
        for child in element.findall("object"):
            if child.get("type") == "PCIDev":
                walk(child, child.get("pci_busid"))
            elif child.get("type") == "OSDev":
                if pci and is_network(int(child.get("osdev_type", "-1"))):
                    found[child.get("name", "")] = pci
            else:
                walk(child, pci)

    walk(root, None)
    return found


@pytest.mark.parametrize("dump", HWLOC_DUMPS)
def test_probes_run_without_exceptions(dump: str, hwloc_root: Callable[[str], Path]) -> None:
    fs = HostFS(hwloc_root(dump))
    probe_net(fs)
    probe_irqs(fs)
    assert all("\n" not in warning for warning in fs.warnings)


@pytest.mark.parametrize("dump", HWLOC_DUMPS)
def test_interfaces_hang_from_the_pci_function_hwloc_names(
    dump: str, hwloc_root: Callable[[str], Path]
) -> None:
    expected = hwloc_interfaces(dump)
    if not expected:
        pytest.skip("hwloc lists no network interface for this machine")
    devices, _ = probe_net(HostFS(hwloc_root(dump)))
    found = {device.name: device.parent for device in devices}
    assert {name: found.get(name) for name in expected} == {
        name: pci_id(address) for name, address in expected.items()
    }


def test_hwloc_outputs_do_list_interfaces() -> None:
    """Guards the comparison above against a parser that silently finds nothing."""
    listed = {dump: hwloc_interfaces(dump) for dump in HWLOC_DUMPS}
    assert sum(len(found) for found in listed.values()) >= 3
    assert sum(1 for found in listed.values() if found) >= 2


@pytest.mark.parametrize("dump", HWLOC_DUMPS)
def test_each_msi_vector_of_a_capture_is_an_irq_of_its_function(
    dump: str, hwloc_root: Callable[[str], Path]
) -> None:
    root = hwloc_root(dump)
    vectors = {
        (int(entry.name), entry.parent.parent.name)
        for entry in (root / "sys/bus/pci/devices").glob("*/msi_irqs/*")
        if entry.name.isdigit()
    }
    if not vectors:
        pytest.skip("no MSI vectors in this capture")
    irqs = probe_irqs(HostFS(root))
    assert {(irq.irq, irq.device) for irq in irqs if irq.chip == "MSI"} == vectors
