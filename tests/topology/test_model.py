"""The topology model: locality by walking up, and a JSON round trip that loads back equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.synthetic_host import Shape, build
from probes.host import probe_host
from probes.hostfs import HostFS
from tuner.codec import DecodeError
from tuner.topology.document import from_document, to_document
from tuner.topology.model import BlockDevice, PciFunction, PciLink, pcie_usable_mbps


@pytest.fixture(scope="module")
def small_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(
        tmp_path_factory.mktemp("synthetic") / "host",
        Shape(disks=12, controllers=4, pci_functions=20),
    )


def test_json_round_trip_loads_back_equal(small_host: Path) -> None:
    topology = probe_host(HostFS(small_host))
    text = json.dumps(to_document(topology))
    assert from_document(json.loads(text)) == topology


def test_round_trip_of_every_hwloc_dump(hwloc_root, name: str = "") -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import HWLOC_DUMPS

    for dump in HWLOC_DUMPS:
        topology = probe_host(HostFS(hwloc_root(dump)))
        assert from_document(json.loads(json.dumps(to_document(topology)))) == topology, dump


def test_disk_locality_is_found_by_walking_up_to_its_controller(small_host: Path) -> None:
    topology = probe_host(HostFS(small_host))
    disk = topology.block_device("sdl")
    assert disk is not None
    controller = topology.pci_function_of(disk.id)
    assert controller is not None and controller.is_storage_controller
    # The last controller of the synthetic host sits on NUMA node 1.
    assert topology.numa_node_of(disk.id) == 1
    partition = topology.block_device("sdl1")
    assert partition is not None and topology.pci_function_of(partition.id) == controller


def test_unknown_schema_version_is_refused(small_host: Path) -> None:
    doc = to_document(probe_host(HostFS(small_host)))
    doc["schema_version"] = 99
    with pytest.raises(DecodeError, match="schema_version"):
        from_document(doc)


def test_wrong_field_type_names_the_field(small_host: Path) -> None:
    doc = to_document(probe_host(HostFS(small_host)))
    doc["nodes"][1]["cpus"] = "0-3"
    with pytest.raises(DecodeError, match=r"nodes\[1\]\.cpus"):
        from_document(doc)


@pytest.mark.parametrize(
    ("gts", "width", "mbps"),
    [(2.5, 1, 250.0), (5.0, 4, 2000.0), (8.0, 8, 7876.9), (16.0, 4, 7876.9), (32.0, 16, 63015.4)],
)
def test_pcie_usable_bandwidth_after_encoding(gts: float, width: int, mbps: float) -> None:
    assert pcie_usable_mbps(gts, width) == mbps


def test_downtrained_link() -> None:
    assert PciLink(5.0, 4, 8.0, 8).downtrained
    assert not PciLink(8.0, 8, 8.0, 8).downtrained
    assert not PciLink(None, None, 8.0, 8).downtrained


def test_block_kinds() -> None:
    assert BlockDevice(id="b", parent=None, name="nvme0n1").kind == "nvme"
    assert PciFunction(id="p", parent=None, name="x", class_code=0x060400).is_bridge
