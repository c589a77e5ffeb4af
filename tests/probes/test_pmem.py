"""Persistent memory: pmem disks and device-dax devices on the NUMA node sysfs gives them."""

from __future__ import annotations

from probes.host import probe_host
from probes.hostfs import HostFS
from probes.pmem import pmem_mode
from tests.sysfs_tree import SysTree
from tuner.topology.model import BlockDevice, DaxDevice

REGION = "sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0012:00/ndbus0/region{n}"
GIB = 1 << 30


def add_nodes(tree: SysTree) -> None:
    for node in (0, 1):
        tree.files(f"sys/devices/system/node/node{node}", {"cpulist": f"{node * 2}-{node * 2 + 1}"})
    tree.file("sys/devices/system/cpu/online", "0-3")


def add_pmem(tree: SysTree, region: int, holder: str, name: str, numa: int | str) -> None:
    base = f"{REGION.format(n=region)}/{holder}"
    tree.files(base, {"numa_node": numa, "devtype": "nd_pfn"})
    disk = f"{base}/block/{name}"
    tree.files(disk, {"dev": "259:0", "size": 8 * GIB // 512, "removable": 0})
    tree.files(f"{disk}/queue", {"rotational": 0, "scheduler": "none"})
    tree.link_to(f"sys/class/block/{name}", disk)


def add_dax(tree: SysTree, region: int, name: str, driver: str, numa: int, target: int) -> None:
    holder = f"{REGION.format(n=region)}/dax{region}.0"
    tree.files(holder, {"numa_node": numa, "devtype": "nd_dax"})
    dev = f"{holder}/{name}"
    tree.files(dev, {"size": 4 * GIB, "target_node": target, "dev": "252:1"})
    tree.dir(f"sys/bus/dax/drivers/{driver}")
    tree.link_to(f"{dev}/driver", f"sys/bus/dax/drivers/{driver}")
    tree.link_to(f"sys/bus/dax/devices/{name}", dev)


def test_pmem_and_dax_hang_from_the_node_sysfs_gives_and_say_their_mode(tree: SysTree) -> None:
    add_nodes(tree)
    add_pmem(tree, 0, "pfn0.0", "pmem0", 0)
    add_pmem(tree, 1, "btt1.0", "pmem1s", 1)
    add_pmem(tree, 1, "namespace1.1", "pmem1.1", 1)
    add_dax(tree, 0, "dax0.1", "device_dax", 0, 4)
    add_dax(tree, 1, "dax1.1", "kmem", 1, 5)
    fs = HostFS(tree.root)
    topology = probe_host(fs)
    disks = {d.name: d for d in topology.of_type(BlockDevice)}
    assert [(n, disks[n].parent, disks[n].pmem_mode) for n in ("pmem0", "pmem1s", "pmem1.1")] == [
        ("pmem0", "numa:0", "fsdax"), ("pmem1s", "numa:1", "sector"), ("pmem1.1", "numa:1", "raw"),
    ]  # fmt: skip
    assert topology.numa_node_of(disks["pmem1s"].id) == 1
    dax = {d.name: d for d in topology.of_type(DaxDevice)}
    assert (dax["dax0.1"].parent, dax["dax0.1"].driver, dax["dax0.1"].size_bytes) == (
        "numa:0", "device_dax", 4 * GIB,
    )  # fmt: skip
    assert (dax["dax1.1"].parent, dax["dax1.1"].driver, dax["dax1.1"].target_node) == (
        "numa:1", "kmem", 5,
    )  # fmt: skip
    assert fs.warnings == []


def test_no_locality_or_a_hostile_node_leaves_the_device_on_the_machine(tree: SysTree) -> None:
    add_nodes(tree)
    add_pmem(tree, 0, "pfn0.0", "pmem0", -1)
    add_pmem(tree, 1, "pfn1.0", "pmem1", "99999999999")
    add_pmem(tree, 2, "pfn2.0", "pmem2", 7)  # a node the machine does not have
    fs = HostFS(tree.root)
    disks = {d.name: d for d in probe_host(fs).of_type(BlockDevice)}
    assert {name: disk.parent for name, disk in disks.items()} == dict.fromkeys(
        ("pmem0", "pmem1", "pmem2"), "machine"
    )
    assert any("pfn1.0/numa_node: 99999999999 is implausible" in w for w in fs.warnings)
    assert any("block:pmem2: parent numa:7 not found" in w for w in fs.warnings)


def test_mode_is_read_only_from_an_nvdimm_path() -> None:
    assert pmem_mode("sys/devices/platform/x/ndbus0/region0/btt0.0/block/pmem0s") == "sector"
    assert pmem_mode("sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/block/sda") is None
    assert pmem_mode("sys/devices/virtual/block/pfn0.0") is None
