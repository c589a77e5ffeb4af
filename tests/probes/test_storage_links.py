"""SAS and SATA link rates: phys grouped into wide ports, and ata links, laid out as sysfs does."""

from __future__ import annotations

import pytest

from probes.hostfs import HostFS
from probes.storage import probe_storage
from probes.storage_links import parse_sas_rate, parse_sata_rate
from tests.probes.storage_fixtures import SAS_PCI, SATA_PCI, sas_disks, sata_disk
from tests.sysfs_tree import SysTree
from tuner.topology.model import StoragePort

HOST = f"{SAS_PCI}/host4"
EXPANDER = f"{HOST}/port-4:0/expander-4:0"


def sas_phy(
    tree: SysTree, parent: str, phy: str, rate: str, port: str | None, *, back_link: bool = True
) -> None:
    """A phy device below `parent` with its sas_phy class directory, joined to `port`."""
    device = f"{parent}/{phy}"
    class_dir = f"{device}/sas_phy/{phy}"
    tree.file(f"{class_dir}/negotiated_linkrate", rate)
    tree.link_to(f"{class_dir}/device", device)
    tree.link_to(f"sys/class/sas_phy/{phy}", class_dir)
    if port is not None:
        port_dir = f"{parent}/{port}" if "expander" not in port else port
        tree.link_to(f"{port_dir}/{phy}", device)
        if back_link:
            tree.link_to(f"{device}/port", port_dir)


def wide_port_host(tree: SysTree, rates: tuple[str, ...], *, back_link: bool = True) -> None:
    """sas_disks' HBA, its host phys forming port-4:0, expander phys at 12 Gb/s to each disk."""
    sas_disks(tree)
    for n, rate in enumerate(rates):
        sas_phy(tree, HOST, f"phy-4:{n}", rate, "port-4:0", back_link=back_link)
    for slot in range(3):
        sas_phy(tree, EXPANDER, f"phy-4:0:{slot}", "12.0 Gbit", f"{EXPANDER}/port-4:0:{slot}")


def ports(tree: SysTree) -> dict[str, StoragePort]:
    found = probe_storage(HostFS(tree.root))
    return {n.name: n for n in found.nodes if isinstance(n, StoragePort)}


@pytest.mark.parametrize(
    ("text", "gbps"),
    [
        ("1.5 Gbit", 1.5),
        ("6.0 Gbit", 6.0),
        ("12.0 Gbit", 12.0),
        ("22.5 Gbit", 22.5),
        ("Unknown", None),
        ("Phy disabled", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_sas_rate(text: str | None, gbps: float | None) -> None:
    assert parse_sas_rate(text) == gbps


@pytest.mark.parametrize(
    ("text", "gbps"), [("6.0 Gbps", 6.0), ("3.0 Gbps", 3.0), ("<unknown>", None), (None, None)]
)
def test_parse_sata_rate(text: str | None, gbps: float | None) -> None:
    assert parse_sata_rate(text) == gbps


def test_wide_port_has_four_lanes_and_narrow_ports_one(tree: SysTree) -> None:
    wide_port_host(tree, ("6.0 Gbit",) * 4)
    found = ports(tree)
    assert (found["port-4:0"].link_gbps, found["port-4:0"].lanes) == (6.0, 4)
    for slot in range(3):
        assert (found[f"port-4:0:{slot}"].link_gbps, found[f"port-4:0:{slot}"].lanes) == (12.0, 1)
    assert found["host4"].link_gbps is None and found["host4"].lanes is None


def test_ports_found_from_their_own_phy_entries_without_back_links(tree: SysTree) -> None:
    wide_port_host(tree, ("6.0 Gbit",) * 4, back_link=False)
    assert (ports(tree)["port-4:0"].link_gbps, ports(tree)["port-4:0"].lanes) == (6.0, 4)


def test_a_slow_phy_sets_the_wide_port_rate(tree: SysTree) -> None:
    wide_port_host(tree, ("6.0 Gbit", "6.0 Gbit", "3.0 Gbit", "Unknown"))
    port = ports(tree)["port-4:0"]
    assert (port.link_gbps, port.lanes) == (3.0, 4)


def test_sas_without_phys_stays_unknown(tree: SysTree) -> None:
    sas_disks(tree)
    port = ports(tree)["port-4:0"]
    assert (port.link_gbps, port.lanes) == (None, None)


def test_sata_rate_from_the_ata_link_class(tree: SysTree) -> None:
    sata_disk(tree)
    link_dir = f"{SATA_PCI}/ata1/link1/ata_link/link1"
    tree.file(f"{link_dir}/sata_spd", "6.0 Gbps")
    tree.link_to("sys/class/ata_link/link1", link_dir)
    port = ports(tree)["ata1"]
    assert (port.link_gbps, port.lanes) == (6.0, 1)


def test_sata_rate_below_the_port_when_the_class_is_missing(tree: SysTree) -> None:
    sata_disk(tree)
    tree.file(f"{SATA_PCI}/ata1/link1/ata_link/link1/sata_spd", "3.0 Gbps")
    assert ports(tree)["ata1"].link_gbps == 3.0


def test_sata_link_down_is_unknown(tree: SysTree) -> None:
    sata_disk(tree)
    tree.file(f"{SATA_PCI}/ata1/link1/ata_link/link1/sata_spd", "<unknown>")
    port = ports(tree)["ata1"]
    assert (port.link_gbps, port.lanes) == (None, None)
