"""NUMA nodes and their CPUs on every hwloc dump, against what hwloc itself expects."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS, parse_cpumask
from tests.acceptance.hwloc_variants import VARIANTS, base_of, build_variant, expected_of
from tests.conftest import HWLOC_DUMPS, HWLOC_FIXTURES
from tuner.topology.model import NumaNode

_LINE = re.compile(r"^(?P<indent> *)(?P<type>\w+) L#\d+(?: \(P#(?P<os>\d+))?")


def expected_from_console(path: Path) -> dict[int, tuple[int, ...]]:
    """NUMA node -> CPUs, from lstopo's text: a node owns the PUs below its parent object."""
    rows = []
    for line in path.read_text().splitlines():
        match = _LINE.match(line)
        if match:
            rows.append((len(match["indent"]), match["type"], int(match["os"] or -1)))
        elif line and not line.startswith(" "):
            # "Machine (P#0 ...)" has no L#; the rest after the tree is a summary.
            rows.append((0, "Machine", 0)) if line.startswith("Machine") else None
    result: dict[int, tuple[int, ...]] = {}
    for i, (indent, kind, os_index) in enumerate(rows):
        if kind != "NUMANode":
            continue
        parent = max(j for j in range(i) if rows[j][0] < indent)
        pus = []
        for depth, other_kind, other_os in rows[parent + 1 :]:
            if depth <= rows[parent][0]:
                break
            if other_kind == "PU":
                pus.append(other_os)
        result[os_index] = tuple(sorted(pus))
    return result


def expected_from_xml(path: Path) -> dict[int, tuple[int, ...]]:
    """NUMA node -> CPUs, from the cpuset hwloc's XML gives each NUMANode."""
    result = {}
    for obj in ET.parse(path).iter("object"):
        if obj.get("type") == "NUMANode":
            words = [w.removeprefix("0x") for w in obj.get("cpuset", "").split(",")]
            result[int(obj.get("os_index", "0"))] = parse_cpumask(",".join(words))
    return result


def target_of(dump: str) -> Path:
    """hwloc's expected output for a dump, as its `.test` file names it."""
    test_file = HWLOC_FIXTURES / f"{dump}.test"
    target = re.search(r"^target:\s*(\S+)", test_file.read_text(), re.M)
    assert target, test_file
    return HWLOC_FIXTURES / target.group(1)


def expected(dump: str) -> dict[int, tuple[int, ...]]:
    """What hwloc's own expected output for a dump says about its NUMA nodes."""
    path = target_of(dump)
    return expected_from_xml(path) if path.suffix == ".xml" else expected_from_console(path)


def hwloc_counts(dump: str) -> tuple[int, int, int]:
    """(packages, cores, PUs) hwloc shows for a dump; a console line may hold several objects
    ("Core L#0 + PU L#0"), so objects are counted, not lines."""
    path = target_of(dump)
    if path.suffix == ".xml":
        kinds = [obj.get("type") for obj in ET.parse(path).iter("object")]
        return kinds.count("Package"), kinds.count("Core"), kinds.count("PU")
    text = path.read_text()
    return tuple(len(re.findall(rf"\b{kind} L#", text)) for kind in ("Package", "Core", "PU"))  # type: ignore[return-value]


@pytest.mark.parametrize("dump", HWLOC_DUMPS)
def test_numa_nodes_and_cpus_match_hwloc(hwloc_root, dump: str) -> None:  # type: ignore[no-untyped-def]
    topology = probe_host(HostFS(hwloc_root(dump)))
    ours = {node.os_index: node.cpus for node in topology.of_type(NumaNode)}
    assert ours == expected(dump)


@pytest.mark.parametrize("dump", HWLOC_DUMPS)
def test_sockets_cores_and_threads_match_hwloc(hwloc_root, dump: str) -> None:  # type: ignore[no-untyped-def]
    fs = HostFS(hwloc_root(dump))
    places = probe_host(fs).cpu.places
    ours = (len({p.package for p in places}), len({p.core for p in places}), len(places))
    assert ours == hwloc_counts(dump)
    assert not [w for w in fs.warnings if "/topology/" in w]


@pytest.mark.parametrize("dump", HWLOC_DUMPS)
def test_every_dump_probes_without_error(hwloc_root, dump: str) -> None:  # type: ignore[no-untyped-def]
    topology = probe_host(HostFS(hwloc_root(dump)))
    assert topology.cpu.online, "online CPUs"
    # Each CPU belongs to exactly one NUMA node, as on any machine.
    claimed = [cpu for node in topology.of_type(NumaNode) for cpu in node.cpus]
    assert sorted(claimed) == sorted(set(claimed))


@pytest.mark.parametrize("variant", VARIANTS)
def test_numa_cpus_are_the_online_cpus_of_each_node_on_derived_captures(
    hwloc_root, tmp_path: Path, variant: str
) -> None:  # type: ignore[no-untyped-def]
    root = build_variant(variant, hwloc_root, tmp_path)
    fs = HostFS(root)
    topology = probe_host(fs)
    ours = {node.os_index: node.cpus for node in topology.of_type(NumaNode)}
    assert ours == expected_of(variant, expected(base_of(variant)))
    assert not [w for w in fs.warnings if "cpulist" in w or "cpu/online" in w]
