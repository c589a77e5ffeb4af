"""The storage path: hops between a disk's PCI function and the disk, each emitted once."""

from __future__ import annotations

import pytest

from probes.block import find_block_dirs
from probes.hostfs import HostFS
from probes.ids import MACHINE_ID, pci_id, port_id
from probes.storage_path import StoragePaths, hop_kind, path_hops
from tests.probes.storage_fixtures import QUEUE, VIRTUAL, disk, nvme_disk, sas_disks
from tests.sysfs_tree import SysTree
from tuner.topology.model import StoragePort


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("host4", "scsi_host"),
        ("ata1", "ata_port"),
        ("port-4:0", "sas_port"),
        ("port-4:0:1", "sas_port"),
        ("expander-4:0", "expander"),
        ("end_device-4:0:1", "end_device"),
        ("target4:0:1", "target"),
        ("4:0:1:0", "lun"),
        ("nvme0", "nvme_ctrl"),
        ("virtio1", "virtio"),
        ("usb2", "other"),
        ("block", None),
        ("nvme", None),
        ("scsi_host", None),
        ("sas_port", None),
    ],
)
def test_hop_kind(name: str, kind: str | None) -> None:
    assert hop_kind(name) == kind


@pytest.mark.parametrize(
    ("real", "controller", "hops"),
    [
        (
            "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda",
            "0000:00:1f.2",
            ["ata1", "host0", "target0:0:0", "0:0:0:0"],
        ),
        ("sys/devices/pci0000:00/0000:00:02.0/block/nvme0n1", "0000:00:02.0", []),
        ("sys/devices/pci0000:00/0000:00:02.0/nvme/nvme0/nvme0n1", "0000:00:02.0", ["nvme0"]),
        ("sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda", "0000:00:02.0", ["virtio1"]),
        ("sys/devices/pci10000:00/10000:00:04.0/virtio1/block/vda", "10000:00:04.0", ["virtio1"]),
        ("sys/devices/virtual/block/loop0", None, []),
    ],
)
def test_path_hops(real: str, controller: str | None, hops: list[str]) -> None:
    found_controller, found = path_hops(real)
    assert found_controller == controller
    assert [name for name, _ in found] == hops


def test_sas_expander_hops_emitted_once_with_right_parents(tree: SysTree) -> None:
    sas_disks(tree)
    fs = HostFS(tree.root)
    paths = StoragePaths(fs)
    parents = {e.name: paths.parent_of(e.real) for e in find_block_dirs(fs) if e.disk is None}
    ports = {port.name: port for port in paths.nodes()}
    assert len(ports) == len(paths.nodes())
    assert ports["host4"].parent == pci_id("0000:03:00.0")
    assert ports["port-4:0"].parent == port_id("host4")
    assert ports["expander-4:0"].parent == port_id("port-4:0")
    for slot, name in enumerate(("sdb", "sdc", "sdd")):
        assert ports[f"port-4:0:{slot}"].parent == port_id("expander-4:0")
        assert ports[f"end_device-4:0:{slot}"].parent == port_id(f"port-4:0:{slot}")
        assert ports[f"target4:0:{slot}"].parent == port_id(f"end_device-4:0:{slot}")
        assert ports[f"4:0:{slot}:0"].parent == port_id(f"target4:0:{slot}")
        assert parents[name] == port_id(f"4:0:{slot}:0")
    assert len(ports) == 3 + 3 * 4  # host, wide port, expander; four hops per disk
    assert {port.kind for port in ports.values()} == {
        "scsi_host",
        "sas_port",
        "expander",
        "end_device",
        "target",
        "lun",
    }
    assert fs.warnings == []


def test_nvme_controller_hop(tree: SysTree) -> None:
    real = nvme_disk(tree)
    paths = StoragePaths(HostFS(tree.root))
    assert paths.parent_of(real) == port_id("nvme0")
    assert paths.nodes() == [
        StoragePort(
            id=port_id("nvme0"), parent=pci_id("0000:01:00.0"), name="nvme0", kind="nvme_ctrl"
        )
    ]


def test_virtual_devices_hang_from_the_machine(tree: SysTree) -> None:
    paths = StoragePaths(HostFS(tree.root))
    for name in ("loop0", "md0", "dm-0", "zram0", "ram0"):
        assert paths.parent_of(f"{VIRTUAL}/{name}") == MACHINE_ID
    assert paths.nodes() == []


def test_multipath_nvme_namespace_hangs_below_its_first_controller(tree: SysTree) -> None:
    subsys = "sys/devices/virtual/nvme-subsystem/nvme-subsys0"
    for n, pci in enumerate(("0000:01:00.0", "0000:02:00.0")):
        ctrl = f"sys/devices/pci0000:00/0000:00:0{n + 1}.0/{pci}/nvme/nvme{n}"
        tree.file(f"{ctrl}/model", "Dual Port NVMe")
        tree.link_to(f"{subsys}/nvme{n}", ctrl)
    disk(tree, f"{subsys}/nvme0n1", "nvme0n1", "259:0", queue=QUEUE)
    fs = HostFS(tree.root)
    paths = StoragePaths(fs)
    (entry,) = find_block_dirs(fs)
    assert paths.parent_of(entry.real) == port_id("nvme0")
    assert paths.nodes()[0].parent == pci_id("0000:01:00.0")
