"""Controller facts: the link as trained against the device's best, and what it carries."""

from __future__ import annotations

from tests.facts.model import ETHERNET, Host, link, sas_hba_with_disks
from tuner.facts import FactOptions, Target, collect


def functions(host: Host) -> dict[str, Target]:
    return {t.name: t for t in collect(host.build(), FactOptions())["pci_function"]}


def test_hba_downtrained_to_x4_gen2_in_an_x8_gen3_slot() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=8, hba_link=link(5.0, 4, 8.0, 8))
    hba = functions(host)["0000:03:00.0"].facts
    assert hba["role"] == "storage"
    assert hba["class_name"] == "SAS"
    assert (hba["link_speed_gts"], hba["link_width"]) == (5.0, 4)
    assert (hba["link_max_speed_gts"], hba["link_max_width"]) == (8.0, 8)
    assert (hba["link_mbps"], hba["link_max_mbps"]) == (2000.0, 7876.9)
    assert hba["downtrained"] is True
    assert hba["link_fraction"] == 0.25
    assert hba["demand_mbps"] == 1600.0


def test_full_link_and_unknown_link() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=2)
    host.function("0000:09:00.0", host.host_bridge("80"), 0x010700, None)
    found = functions(host)
    assert found["0000:03:00.0"].facts["downtrained"] is False
    assert found["0000:03:00.0"].facts["link_fraction"] == 1.0
    unknown = found["0000:09:00.0"].facts
    assert (unknown["downtrained"], unknown["link_mbps"], unknown["demand_mbps"]) == (
        None,
        None,
        0.0,
    )


def test_nic_demand_is_its_link_speed() -> None:
    host = Host(numa_nodes=2)
    fn = host.function("0000:81:00.0", host.host_bridge("80"), ETHERNET, link(8.0, 8), numa_node=1)
    host.nic("eth0", fn, speed_mbps=10000)
    nic = functions(host)["0000:81:00.0"].facts
    assert (nic["role"], nic["demand_mbps"], nic["numa_node"]) == ("network", 1250.0, 1)
