"""Shared paths: demand against capacity for ports, controllers, bridges and switches."""

from __future__ import annotations

from tests.facts.model import BRIDGE, ETHERNET, Host, link, sas_hba_with_disks
from tuner.facts import FactOptions, Target, collect


def paths(host: Host) -> dict[str, Target]:
    return {t.name: t for t in collect(host.build(), FactOptions())["path"]}


def test_sixteen_hdds_oversubscribe_one_four_lane_6g_wide_port() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=16, wide_gbps=6.0, lanes=4)
    port = paths(host)["port-3:0"].facts
    assert port["component"] == "port"
    assert (port["demand_mbps"], port["capacity_mbps"]) == (3200.0, 2400.0)
    assert port["oversubscription"] == 1.33
    assert port["disk_count"] == 16
    # The HBA's own x8 8 GT/s link carries them easily.
    hba = paths(host)["0000:03:00.0"].facts
    assert (hba["component"], hba["capacity_mbps"], hba["oversubscription"]) == (
        "controller",
        7876.9,
        0.41,
    )
    assert (hba["controller_count"], hba["controllers"]) == (1, "0000:03:00.0")


def test_single_disk_ports_are_not_shared_paths() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=3)
    names = set(paths(host))
    assert "port-3:0" in names
    assert not any(name.startswith("port-3:0:") for name in names)


def test_unknown_port_rate_leaves_oversubscription_unknown() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=4, wide_gbps=None, lanes=None)
    port = paths(host)["port-3:0"].facts
    assert (port["demand_mbps"], port["capacity_mbps"], port["oversubscription"]) == (
        800.0,
        None,
        None,
    )


def switch(host: Host, uplink_gts: float = 8.0, uplink_width: int = 16) -> list[str]:
    """Root port -> switch upstream port -> three downstream ports; returns the downstream ids."""
    up_link = link(uplink_gts, uplink_width)
    root = host.function("0000:00:01.0", host.host_bridge(), BRIDGE, up_link)
    upstream = host.function("0000:01:00.0", root, BRIDGE, up_link)
    return [host.function(f"0000:02:0{n}.0", upstream, BRIDGE, link(8.0, 8)) for n in range(3)]


def test_nic_and_hba_behind_one_switch() -> None:
    host = Host()
    down = switch(host)
    sas_hba_with_disks(host, hba="0000:03:00.0", parent=down[0], disks=4)
    nic_fn = host.function("0000:04:00.0", down[1], ETHERNET, link(8.0, 8))
    host.nic("eth0", nic_fn)
    found = paths(host)
    upstream = found["0000:01:00.0"].facts
    assert upstream["component"] == "bridge"
    assert upstream["has_nic_and_storage"] is True
    assert (upstream["controllers"], upstream["nics"], upstream["nic_count"]) == (
        "0000:03:00.0",
        "eth0",
        1,
    )
    # The root port and each downstream port are the other end of a link listed already.
    assert "0000:00:01.0" not in found
    assert "0000:02:00.0" not in found and "0000:02:01.0" not in found
    # The whole root complex always holds both: that says nothing.
    assert found["pci0000:00"].facts["has_nic_and_storage"] is False
    assert found["pci0000:00"].facts["component"] == "host_bridge"
    assert found["pci0000:00"].facts["capacity_mbps"] is None


def test_three_hbas_behind_an_x8_gen2_switch_uplink() -> None:
    host = Host()
    down = switch(host, uplink_gts=5.0, uplink_width=8)
    for n, port in enumerate(down):
        sas_hba_with_disks(host, hba=f"0000:0{n + 3}:00.0", parent=port, disks=8, first=8 * n)
    upstream = paths(host)["0000:01:00.0"].facts
    assert upstream["controller_count"] == 3
    # x8 at 5 GT/s: 8 x 5 x 8/10 / 8 = 4000 MB/s for 24 disks' 4800.
    assert (upstream["demand_mbps"], upstream["capacity_mbps"]) == (4800.0, 4000.0)
    assert upstream["oversubscription"] == 1.2
    assert upstream["has_nic_and_storage"] is False


def test_root_port_with_a_multifunction_card_is_shared() -> None:
    host = Host()
    root = host.function("0000:00:02.0", host.host_bridge(), BRIDGE, link(8.0, 8))
    sas_hba_with_disks(host, hba="0000:05:00.0", parent=root, disks=2)
    host.nic("eth1", host.function("0000:05:00.1", root, ETHERNET, link(8.0, 8)))
    root_path = paths(host)["0000:00:02.0"].facts
    assert root_path["component"] == "root_port"
    assert root_path["has_nic_and_storage"] is True
