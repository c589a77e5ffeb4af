"""Expected streaming rates by device class, bounded by the disk's own link."""

from __future__ import annotations

from tests.facts.model import NVME, SAS_HBA, link
from tuner.facts.rates import device_class, expected_mbps
from tuner.topology.model import BlockDevice, LoopInfo, PciFunction, PciLink, StoragePort


def disk(
    name: str = "sda", rotational: bool | None = True, vendor: str | None = None
) -> BlockDevice:
    return BlockDevice(f"block:{name}", "x", name, rotational=rotational, vendor=vendor)


def controller(
    class_code: int = SAS_HBA, pcie: PciLink | None = None, vendor: int = 0x1000
) -> PciFunction:
    return PciFunction("pci:x", None, "x", class_code=class_code, link=pcie, vendor_id=vendor)


def ata(gbps: float | None) -> list[StoragePort]:
    return [StoragePort("p", None, "ata1", "ata_port", gbps, 1)]


def sas(gbps: float | None) -> list[StoragePort]:
    return [StoragePort("p", None, "port-4:0:1", "sas_port", gbps, 1)]


def test_hdd_streams_200_unless_its_link_is_slower() -> None:
    assert expected_mbps(disk(), sas(6.0), controller()) == 200.0
    assert expected_mbps(disk(), ata(1.5), controller()) == 150.0
    assert expected_mbps(disk(), [], controller()) == 200.0


def test_sata_ssd_is_bounded_by_its_sata_link() -> None:
    assert device_class(disk(rotational=False), ata(6.0), controller()) == "sata_ssd"
    assert expected_mbps(disk(rotational=False), ata(6.0), controller()) == 500.0
    assert expected_mbps(disk(rotational=False), ata(3.0), controller()) == 300.0
    # A SATA drive on a SAS HBA answers inquiry as "ATA".
    assert device_class(disk(rotational=False, vendor="ATA"), sas(12.0), controller()) == "sata_ssd"


def test_sas_ssd() -> None:
    assert expected_mbps(disk(rotational=False, vendor="HGST"), sas(12.0), controller()) == 1000.0
    assert expected_mbps(disk(rotational=False, vendor="HGST"), sas(6.0), controller()) == 600.0


def test_nvme_is_bounded_by_its_pcie_link() -> None:
    nvme = BlockDevice("block:nvme0n1", "x", "nvme0n1", rotational=False)
    assert expected_mbps(nvme, [], controller(NVME, link(8.0, 4))) == 3000.0
    assert expected_mbps(nvme, [], controller(NVME, link(8.0, 2))) == 1969.2
    assert expected_mbps(nvme, [], controller(NVME, link(5.0, 1))) == 500.0
    assert expected_mbps(nvme, [], controller(NVME, None)) == 3000.0


def test_virtual_and_unknown_devices_have_no_rate() -> None:
    virtio = [StoragePort("p", None, "virtio1", "virtio", None, None)]
    assert expected_mbps(disk("vda"), virtio, controller(0x010000, vendor=0x1AF4)) is None
    assert expected_mbps(disk(vendor="QEMU"), [], controller()) is None
    assert expected_mbps(disk(rotational=None), sas(6.0), controller()) is None
    assert expected_mbps(disk("zram0", rotational=False), [], None) is None
    loop = BlockDevice("block:loop0", "x", "loop0", loop=LoopInfo("/f", None))
    assert expected_mbps(loop, [], None) is None
