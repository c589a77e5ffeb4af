"""Controller facts: the link as trained against the device's best, and what it carries."""

from __future__ import annotations

from probes.ids import pci_id
from tests.facts.model import BRIDGE, ETHERNET, Host, link, sas_hba_with_disks
from tuner.facts import FactOptions, Target, collect
from tuner.topology.model import PciFunction


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


def test_the_functions_of_one_chip_share_its_link_and_what_its_ports_carry() -> None:
    host = Host()
    port = host.function("0000:00:01.0", host.host_bridge(), BRIDGE, link(8.0, 8))
    for fn, speed in (("0", 10000), ("1", 10000)):
        address = f"0000:01:00.{fn}"
        host.nic(f"eth{fn}", host.function(address, port, ETHERNET, link(5.0, 4, 8.0, 8)), speed)
    # An SR-IOV virtual function on the same device carries its PF's traffic, not more.
    vf = PciFunction(
        pci_id("0000:01:00.2"), port, "0000:01:00.2", address="0000:01:00.2",
        class_code=ETHERNET, link=link(5.0, 4, 8.0, 8), virtual_function=True,
    )  # fmt: skip
    host.nodes.append(vf)
    host.nic("eth0v0", vf.id, 10000)
    found = functions(host)
    for address in ("0000:01:00.0", "0000:01:00.1"):
        facts = found[address].facts
        assert (facts["demand_mbps"], facts["link_mbps"]) == (2500.0, 2000.0)
        assert (facts["link_short"], facts["link_starved"]) == (True, True)
        assert (facts["built_in"], facts["built_in_because"]) == (False, None)


def test_a_link_whose_ports_are_unknown_is_not_shown_short() -> None:
    host = Host()
    port = host.function("0000:00:01.0", host.host_bridge(), BRIDGE, link(8.0, 8))
    host.nic("eth0", host.function("0000:01:00.0", port, ETHERNET, link(5.0, 1, 8.0, 8)), None)
    facts = functions(host)["0000:01:00.0"].facts
    assert facts["demand_mbps"] is None
    assert (facts["link_short"], facts["link_starved"]) == (False, False)


def test_built_in_by_the_firmware_or_on_a_root_bus_in_no_slot() -> None:
    host = Host()
    root = host.host_bridge()
    port = host.function("0000:00:01.0", root, BRIDGE, link(8.0, 8))

    def add(address: str, parent: str, **extra: object) -> None:
        host.nodes.append(PciFunction(pci_id(address), parent, address, address=address,
                                      class_code=ETHERNET, link=link(2.5, 1, 8.0, 1), **extra))  # type: ignore[arg-type]  # fmt: skip

    add("0000:01:00.0", port, onboard_index=3, label="Embedded NIC 3")
    add("0000:01:00.1", port)  # its sibling: the same chip, on the board too
    add("0000:00:1f.6", root)  # a chipset NIC on the root bus
    add("0000:00:03.0", root, slot="3")  # a virtual machine's NIC in slot 3 of its root bus
    add("0000:02:00.0", port, slot="6")  # an add-in card
    facts = {name: t.facts for name, t in functions(host).items()}
    assert facts["0000:01:00.0"]["built_in_because"] == (
        "the firmware lists it as on-board device 3 'Embedded NIC 3'"
    )
    assert facts["0000:01:00.1"]["built_in"] is True
    assert facts["0000:00:1f.6"]["built_in_because"] == "it sits on root bus 0000:00, in no slot"
    assert facts["0000:00:03.0"]["built_in"] is False
    assert (facts["0000:02:00.0"]["built_in"], facts["0000:02:00.0"]["slot"]) == (False, "6")
