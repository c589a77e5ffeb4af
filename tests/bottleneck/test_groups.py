"""Grouping devices by the components above them, on topologies built from the model's types."""

from __future__ import annotations

from tuner.bottleneck import default_devices, device_groups
from tuner.bottleneck.groups import natural_key
from tuner.topology.model import (
    BlockDevice,
    LoopInfo,
    Machine,
    Node,
    NumaNode,
    PartitionInfo,
    PciFunction,
    PciHostBridge,
    StackEdge,
    StoragePort,
    Topology,
)

GIB = 1 << 30


def _disk(name: str, parent: str, loop: LoopInfo | None = None) -> BlockDevice:
    return BlockDevice(id=f"block:{name}", parent=parent, name=name, size_bytes=GIB, loop=loop)


def _pci_host() -> Topology:
    """Root port 00:01.0 -> SAS controller 03:00.0 -> host4 -> sdb, sdc; the root port ->
    SATA controller 04:00.0 -> sdd, sde; two NUMA nodes, the PCI tree on node 0."""
    nodes: list[Node] = [
        Machine(id="machine", parent=None, name="host"),
        NumaNode(id="numa:0", parent="machine", name="node0", os_index=0, cpus=(0,)),
        NumaNode(id="numa:1", parent="machine", name="node1", os_index=1, cpus=(1,)),
        PciHostBridge(id="pcihost:0000:00", parent="machine", name="pci0000:00"),
        PciFunction(id="pci:0000:00:01.0", parent="pcihost:0000:00", name="00:01.0",
                    address="0000:00:01.0", class_code=0x060400, numa_node=0),
        PciFunction(id="pci:0000:03:00.0", parent="pci:0000:00:01.0", name="03:00.0",
                    address="0000:03:00.0", class_code=0x010700, numa_node=0),
        PciFunction(id="pci:0000:04:00.0", parent="pci:0000:00:01.0", name="04:00.0",
                    address="0000:04:00.0", class_code=0x010601, numa_node=0),
        StoragePort(id="port:host4", parent="pci:0000:03:00.0", name="host4", kind="scsi_host"),
        _disk("sdb", "port:host4"),
        _disk("sdc", "port:host4"),
        _disk("sdd", "pci:0000:04:00.0"),
        _disk("sde", "pci:0000:04:00.0"),
        BlockDevice(id="block:sde1", parent="block:sde", name="sde1", size_bytes=GIB,
                    devtype="partition", partition=PartitionInfo(1, 1 << 20)),
    ]  # fmt: skip
    return Topology(root="/", nodes=tuple(nodes))


def _lab_host() -> Topology:
    """The lab's shape: loop1 over a tmpfs file; loop2..loop4's files on loop1; loop0 alone."""
    nodes: list[Node] = [Machine(id="machine", parent=None, name="host")]
    nodes.append(_disk("loop0", "machine", loop=LoopInfo("/dev/shm/x.img", None)))
    nodes.append(_disk("loop1", "machine", loop=LoopInfo("/dev/shm/bus0.img", None)))
    for n in (2, 3, 4):
        nodes.append(_disk(f"loop{n}", "machine", loop=LoopInfo(f"/run/d{n}.img", "loop1")))
    nodes.append(BlockDevice(id="block:loop9", parent="machine", name="loop9", size_bytes=0))
    edges = tuple(StackEdge(f"loop{n}", "loop1", "loop") for n in (2, 3, 4))
    return Topology(root="/", nodes=tuple(nodes), edges=edges)


def test_loops_on_one_backing_device_make_one_group_named_by_it() -> None:
    topology = _lab_host()
    assert default_devices(topology) == ("loop0", "loop2", "loop3", "loop4")
    (group,) = device_groups(topology, default_devices(topology))
    assert group.devices == ("loop2", "loop3", "loop4")
    assert group.component.label == "backing device loop1"
    (named,) = device_groups(topology, default_devices(topology), {"loop1": "bus0"})
    assert named.component.label == "bus loop1"


def test_nested_components_group_once_each_named_by_the_nearest() -> None:
    topology = _pci_host()
    assert default_devices(topology) == ("sdb", "sdc", "sdd", "sde")
    groups = device_groups(topology, default_devices(topology))
    found = {g.devices: g.component.label for g in groups}
    assert found == {
        ("sdb", "sdc"): "scsi host host4",
        ("sdd", "sde"): "controller 0000:04:00.0",
        ("sdb", "sdc", "sdd", "sde"): "root port 0000:00:01.0",
    }
    assert [len(g.devices) for g in groups] == [2, 2, 4]


def test_a_numa_node_is_a_group_when_it_holds_more_than_the_pci_tree() -> None:
    base = _pci_host()
    other = PciFunction(id="pci:0000:80:00.0", parent="machine", name="80:00.0",
                        address="0000:80:00.0", class_code=0x010802, numa_node=0)  # fmt: skip
    topology = Topology(root="/", nodes=(*base.nodes, other, _disk("nvme0n1", other.id)))
    groups = device_groups(topology, default_devices(topology))
    assert groups[-1].component.label == "NUMA node 0"
    assert groups[-1].devices == ("nvme0n1", "sdb", "sdc", "sdd", "sde")


def test_only_the_devices_asked_for_are_grouped() -> None:
    groups = device_groups(_pci_host(), ["sdb", "sdd"])
    assert [(g.devices, g.component.label) for g in groups] == [
        (("sdb", "sdd"), "root port 0000:00:01.0")
    ]


def test_natural_order() -> None:
    assert sorted(["loop10", "loop9", "sdb", "loop2"], key=natural_key) == [
        "loop2", "loop9", "loop10", "sdb"
    ]  # fmt: skip
