"""The probe tree shows everything the probe found: every PCI function of every capture."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.conftest import HWLOC_DUMPS

RootOf = Callable[[str], Path]


@pytest.mark.parametrize("name", HWLOC_DUMPS)
def test_the_tree_lists_every_pci_function(hwloc_root: RootOf, name: str) -> None:
    root = str(hwloc_root(name))
    doc = json.loads(iotuner("probe", "--root", root, "--json").stdout)
    addresses = [f["address"] for f in doc["pci_devices"]]
    words = set(iotuner("probe", "--root", root, "--section", "pci").stdout.split())
    assert [a for a in addresses if a not in words] == []
    # The whole tree keeps lstopo's "important" devices: storage, network, display, co-processors.
    tree = set(iotuner("probe", "--root", root).stdout.split())
    kept = ("0x01", "0x02", "0x03", "0x0b", "0x12")
    important = [f["address"] for f in doc["pci_devices"]
                 if f["class"] is None or f["class"].startswith(kept)]  # fmt: skip
    assert [a for a in important if a not in tree] == []


def test_gpus_without_ids_and_nics_behind_an_unlisted_bridge_show(tmp_path: Path) -> None:
    from tests.probes.test_pci import add_function
    from tests.sysfs_tree import SysTree

    # The two shapes hwloc's nvidiagpunumanodes and 32intel64 captures have (see test_pci.py).
    tree = SysTree(tmp_path / "root")
    for address in ("0004:05:00.0", "0035:04:00.0"):
        tree.files(f"sys/bus/pci/devices/{address}", {"class": "0x030000", "local_cpus": "f"})
    add_function(tree, "pci0000:5d/0000:5d:02.0", {"class": "0x060400"})
    tree.files("sys/devices/pci0000:5d/0000:5d:02.0/0000:5f:03.0",
               {"vendor": "0x8086", "device": "0x37c5", "class": "0x060400"})  # fmt: skip
    add_function(tree, "pci0000:5d/0000:5d:02.0/0000:5f:03.0/0000:60:00.0", {"class": "0x020000"})
    result = iotuner("probe", "--root", str(tree.root))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    gpu = next(line for line in lines if "0004:05:00.0" in line)
    assert "VGA (vendor and device ids not readable)" in gpu and "0000:0000" not in gpu
    assert any("0035:04:00.0" in line for line in lines)
    nic = next(i for i, line in enumerate(lines) if "0000:60:00.0" in line)
    bridge = next(i for i, line in enumerate(lines) if "0000:5f:03.0" in line)
    assert bridge < nic and lines[nic].index("0000:60") > lines[bridge].index("0000:5f")


def test_the_tree_says_which_devices_sit_in_slots_and_which_are_on_board(
    hwloc_root: RootOf, monkeypatch: pytest.MonkeyPatch
) -> None:
    # hwloc's 32em64t capture names slots 01 and 02 and two on-board I350 ports.
    root = str(hwloc_root("32em64t-2n8c+dax+nvme+mic+dimms"))
    monkeypatch.setenv("COLUMNS", "250")
    lines = iotuner("probe", "--root", root, "--section", "pci").stdout.splitlines()
    shown = {word: line for line in lines for word in line.split()[:6] if word.startswith("0000:")}
    assert "driver mlx4_core  slot 01  " in shown["0000:82:00.0"]
    assert "driver igb  on board 'LOM 1G I350-BT2 (LAN1)'" in shown["0000:02:00.0"]
    assert "driver igb  on board 'LOM 1G I350-BT2 (LAN2)'" in shown["0000:02:00.3"]
    doc = json.loads(iotuner("probe", "--root", root, "--json").stdout)
    rows = {row["address"]: row for row in doc["pci_devices"]}
    assert (rows["0000:83:00.0"]["slot"], rows["0000:83:00.0"]["onboard_index"]) == ("02", None)
    assert (rows["0000:02:00.3"]["onboard_index"], rows["0000:02:00.3"]["label"]) == (
        2, "LOM 1G I350-BT2 (LAN2)",
    )  # fmt: skip


def test_persistent_memory_sits_under_its_node_with_the_node_cpus(
    hwloc_root: RootOf, monkeypatch: pytest.MonkeyPatch
) -> None:
    # hwloc's 32em64t capture: pmem namespaces and device-dax devices on both sockets.
    root = str(hwloc_root("32em64t-2n8c+dax+nvme+mic+dimms"))
    monkeypatch.setenv("COLUMNS", "160")
    lines = iotuner("probe", "--root", root).stdout.splitlines()
    node1 = next(i for i, line in enumerate(lines) if "NUMA node 1" in line)
    assert "CPUs 8-15  socket 1, 8 cores, 8 threads" in lines[node1]
    below = [
        next(w for w in line.split() if w[0].isalnum()) for line in lines[node1 + 1 : node1 + 6]
    ]
    assert below == ["pmem1", "pmem1.1s", "pmem1.2", "dax1.3", "dax1.4"]
    assert "persistent memory, sector" in lines[node1 + 2]
    assert "persistent memory as system RAM of NUMA node 5 (kmem)" in lines[node1 + 5]
    assert not any("SSD" in line for line in lines if "pmem" in line or "dax" in line)
    assert not any("Block devices outside PCI" in line for line in lines)
    doc = json.loads(iotuner("probe", "--root", root, "--json").stdout)
    pmem = {row["name"]: row["numa_node"] for row in doc["block_devices"] if "pmem" in row["name"]}
    assert pmem == {"pmem0.1": 0, "pmem0.2s": 0, "pmem0.3": 0, "pmem1": 1, "pmem1.1s": 1,
                    "pmem1.2": 1}  # fmt: skip
    assert [(d["name"], d["numa_node"], d["driver"]) for d in doc["dax_devices"]] == [
        ("dax0.0", 0, "device_dax"), ("dax1.3", 1, "device_dax"), ("dax1.4", 1, "kmem"),
    ]  # fmt: skip
    assert [(n["id"], n["sockets"], n["cores"]) for n in doc["numa_nodes"]] == [
        (0, [0], 8), (1, [1], 8),
    ]  # fmt: skip
