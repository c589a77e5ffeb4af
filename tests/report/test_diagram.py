"""The topology diagram: the paths down to disks and NICs, link speeds, findings' colours."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.report.conftest import WORKLOAD
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.report.diagram import SEVERITY_FILL, topology_rows, topology_svg, worst
from tuner.rules.engine import evaluate
from tuner.rules.installed import load_rule_base
from tuner.topology.model import BlockDevice, Machine, StackEdge, Topology


def test_rows_follow_the_paths_and_carry_the_findings(host_root: Path) -> None:
    topology = probe_host(HostFS(host_root))
    findings = evaluate(load_rule_base(), collect(topology, FactOptions()), WORKLOAD).findings
    bridge = next(f for f in findings if f.severity == "warning")
    rows = topology_rows(topology, {bridge.target: "warning"})
    labels = [row.label for row in rows]
    assert labels[0].startswith("Machine ")
    for name in ("sda ", "sdd ", "nvme0n1 ", "eth0 "):
        assert any(label.startswith(name) for label in labels), f"{name} not drawn"
    assert any("GT/s" in label for label in labels)  # link speeds
    marked = [row for row in rows if row.severity == "warning"]
    assert [row.label.split()[0] for row in marked] == [bridge.target]
    # Every row but the machine hangs from a row drawn above it, one level up.
    for index, row in enumerate(rows[1:], start=1):
        assert row.parent_row is not None and row.parent_row < index
        assert rows[row.parent_row].depth == row.depth - 1

    svg = topology_svg(topology, findings)
    ET.fromstring(svg)  # well-formed: a browser draws it inline
    assert SEVERITY_FILL["warning"] in svg


def test_worst_severity() -> None:
    assert worst(["info", None, "critical", "warning"]) == "critical"
    assert worst([None]) is None


def test_stacked_devices_hang_under_the_device_they_sit_on() -> None:
    # The lab's shape: three disk loop devices whose files live on a bus loop device.
    disks = ("loop2", "loop3", "loop4")
    nodes = [Machine(id="m", parent=None, name="lab")] + [
        BlockDevice(id=f"block:{name}", parent="m", name=name, size_bytes=1 << 30)
        for name in ("loop1", *disks, "loop5")
    ]
    edges = tuple(StackEdge(upper=name, lower="loop1", kind="loop") for name in disks)
    rows = topology_rows(Topology(root="/", nodes=tuple(nodes), edges=edges), {"loop1": "info"})
    by_name = {row.label.split()[0]: (index, row) for index, row in enumerate(rows)}
    bus_index, bus = by_name["loop1"]
    assert bus.severity == "info" and bus.depth == 2
    for name in disks:
        _, row = by_name[name]
        assert row.parent_row == bus_index and row.depth == 3 and "on loop1" in row.label
    assert by_name["loop5"][1].depth == 2
