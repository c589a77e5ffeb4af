"""Network interfaces on their PCI functions, virtual ones, broken links, and TCP settings."""

from __future__ import annotations

from probes.hostfs import HostFS
from probes.net import probe_net, probe_tcp
from tests.sysfs_tree import SysTree
from tuner.topology.model import NetDevice

PCI0 = "sys/devices/pci0000:00"
BRIDGE = f"{PCI0}/0000:00:03.0"
IPV4 = "proc/sys/net/ipv4"


def pci_function(tree: SysTree, path: str, driver: str) -> None:
    """A PCI function directory with its bus link and a bound driver."""
    address = path.rsplit("/", 1)[1]
    tree.file(f"{path}/vendor", "0x8086")
    tree.link_to(f"sys/bus/pci/devices/{address}", path)
    tree.dir(f"sys/bus/pci/drivers/{driver}")
    tree.link_to(f"{path}/driver", f"sys/bus/pci/drivers/{driver}")


def interface(tree: SysTree, device_path: str, name: str, attrs: dict[str, str | int]) -> str:
    """A net/<name> directory below a device, linked from sys/class/net."""
    path = f"{device_path}/net/{name}"
    tree.files(path, attrs)
    tree.link_to(f"{path}/device", device_path)
    tree.link_to(f"sys/class/net/{name}", path)
    return path


def ten_gbe_pair(tree: SysTree) -> SysTree:
    """A two-port 10 GbE NIC behind a PCI bridge, 8 rx/tx queues per port, jumbo frames."""
    for port, function in enumerate(("0000:03:00.0", "0000:03:00.1")):
        path = f"{BRIDGE}/{function}"
        pci_function(tree, path, "ixgbe")
        net = interface(
            tree,
            path,
            f"eth{port}",
            {"mtu": 9000, "speed": 10000, "address": f"a0:36:9f:00:00:0{port}", "operstate": "up"},
        )
        for queue in range(8):
            tree.dir(f"{net}/queues/rx-{queue}").dir(f"{net}/queues/tx-{queue}")
    return tree


def by_name(devices: list[NetDevice]) -> dict[str, NetDevice]:
    return {device.name: device for device in devices}


def test_ten_gbe_ports_hang_from_their_functions_behind_the_bridge(tree: SysTree) -> None:
    fs = HostFS(ten_gbe_pair(tree).root)
    devices, _ = probe_net(fs)
    eth0, eth1 = by_name(devices)["eth0"], by_name(devices)["eth1"]
    assert (eth0.id, eth0.parent, eth1.parent) == (
        "net:eth0",
        "pci:0000:03:00.0",
        "pci:0000:03:00.1",
    )
    assert (eth0.driver, eth0.mtu, eth0.speed_mbps) == ("ixgbe", 9000, 10000)
    assert (eth0.rx_queues, eth0.tx_queues) == (8, 8)
    assert (eth1.address, eth1.operstate, eth1.virtual) == ("a0:36:9f:00:00:01", "up", False)
    assert fs.warnings == []


def test_down_link_speed_minus_one_is_unknown_without_warning(tree: SysTree) -> None:
    path = f"{PCI0}/0000:00:19.0"
    pci_function(tree, path, "e1000e")
    interface(tree, path, "eno1", {"mtu": 1500, "speed": -1, "operstate": "down"})
    fs = HostFS(tree.root)
    (eno1,) = probe_net(fs)[0]
    assert (eno1.parent, eno1.speed_mbps, eno1.operstate) == ("pci:0000:00:19.0", None, "down")
    assert fs.warnings == []


def test_speed_unreadable_or_empty_or_unsigned_minus_one_is_unknown(tree: SysTree) -> None:
    path = f"{PCI0}/0000:00:19.0"
    pci_function(tree, path, "e1000e")
    interface(tree, path, "eno1", {"speed": ""})  # how captures record EINVAL
    interface(tree, path, "eno2", {"speed": 4294967295})
    interface(tree, path, "eno3", {"mtu": 1500})  # no speed attribute at all
    fs = HostFS(tree.root)
    assert [d.speed_mbps for d in probe_net(fs)[0]] == [None, None, None]
    assert fs.warnings == []


def test_malformed_speed_and_mtu_warn_naming_the_file(tree: SysTree) -> None:
    path = f"{PCI0}/0000:00:19.0"
    pci_function(tree, path, "e1000e")
    interface(tree, path, "eno1", {"speed": "fast", "mtu": "big"})
    fs = HostFS(tree.root)
    (eno1,) = probe_net(fs)[0]
    assert (eno1.speed_mbps, eno1.mtu) == (None, None)
    assert any(w.startswith("sys/class/net/eno1/speed:") for w in fs.warnings)
    assert any(w.startswith("sys/class/net/eno1/mtu:") for w in fs.warnings)


def test_dangling_virtual_links_are_listed_bare_with_one_line(tree: SysTree) -> None:
    ten_gbe_pair(tree)
    tree.link("sys/class/net/lo", "../../devices/virtual/net/lo")
    tree.link("sys/class/net/br0", "../../devices/virtual/net/br0")
    fs = HostFS(tree.root)
    devices = by_name(probe_net(fs)[0])
    lo = devices["lo"]
    assert (lo.id, lo.parent, lo.virtual, lo.mtu, lo.driver) == (
        "net:lo",
        "machine",
        True,
        None,
        None,
    )
    assert devices["br0"].virtual
    assert len(fs.warnings) == 1
    assert "br0, lo" in fs.warnings[0]


def test_resolving_virtual_interface_is_read_and_hangs_from_the_machine(tree: SysTree) -> None:
    tree.files("sys/devices/virtual/net/lo", {"mtu": 65536, "operstate": "unknown"})
    tree.dir("sys/devices/virtual/net/lo/queues/rx-0").dir("sys/devices/virtual/net/lo/queues/tx-0")
    tree.link_to("sys/class/net/lo", "sys/devices/virtual/net/lo")
    fs = HostFS(tree.root)
    (lo,) = probe_net(fs)[0]
    assert (lo.parent, lo.virtual, lo.mtu, lo.rx_queues, lo.driver) == (
        "machine",
        True,
        65536,
        1,
        None,
    )
    assert fs.warnings == []


def test_dangling_physical_link_warns_and_keeps_the_pci_parent(tree: SysTree) -> None:
    tree.link("sys/class/net/eth9", "../../devices/pci0000:00/0000:00:1c.0/0000:05:00.0/net/eth9")
    fs = HostFS(tree.root)
    (eth9,) = probe_net(fs)[0]
    assert (eth9.parent, eth9.virtual, eth9.mtu) == ("pci:0000:05:00.0", False, None)
    assert fs.warnings[0].startswith("sys/class/net/eth9: link to")


def test_interface_on_a_virtio_device_takes_the_pci_function_above_it(tree: SysTree) -> None:
    path = f"{PCI0}/0000:00:03.0"
    pci_function(tree, path, "virtio-pci")
    tree.dir("sys/bus/virtio/drivers/virtio_net")
    tree.link_to(f"{path}/virtio2/driver", "sys/bus/virtio/drivers/virtio_net")
    interface(tree, f"{path}/virtio2", "eth0", {"mtu": 1500})
    (eth0,) = probe_net(HostFS(tree.root))[0]
    assert (eth0.parent, eth0.driver) == ("pci:0000:00:03.0", "virtio_net")


def test_driver_link_into_an_uncaptured_drivers_dir_still_names_it(tree: SysTree) -> None:
    path = f"{PCI0}/0000:00:19.0"
    tree.link(f"{path}/driver", "../../../bus/pci/drivers/e1000e")  # dangles: no drivers/ dir
    interface(tree, path, "eno1", {"mtu": 1500})
    (eno1,) = probe_net(HostFS(tree.root))[0]
    assert eno1.driver == "e1000e"


def test_old_kernel_class_directory_finds_pci_through_device_link(tree: SysTree) -> None:
    path = f"{PCI0}/0000:00:19.0"
    pci_function(tree, path, "e1000e")
    tree.files("sys/class/net/eth0", {"mtu": 1500})
    tree.link_to("sys/class/net/eth0/device", path)
    tree.files("sys/class/net/lo", {"mtu": 65536})
    eth0, lo = probe_net(HostFS(tree.root))[0]
    assert (eth0.parent, eth0.driver, eth0.virtual) == ("pci:0000:00:19.0", "e1000e", False)
    assert (lo.parent, lo.virtual, lo.mtu) == ("machine", True, 65536)


def test_bonding_control_file_is_not_an_interface(tree: SysTree) -> None:
    ten_gbe_pair(tree).file("sys/class/net/bonding_masters", "bond0")
    fs = HostFS(tree.root)
    assert sorted(by_name(probe_net(fs)[0])) == ["eth0", "eth1"]
    assert fs.warnings == []


def test_no_net_directory_gives_no_interfaces_and_no_warning(tree: SysTree) -> None:
    tree.dir("sys")
    fs = HostFS(tree.root)
    devices, tcp = probe_net(fs)
    assert devices == []
    assert tcp.tcp_rmem is None
    assert fs.warnings == []


def test_tcp_settings_and_a_malformed_tcp_rmem(tree: SysTree) -> None:
    tree.files(
        IPV4,
        {
            "tcp_rmem": "4096 87380",
            "tcp_wmem": "4096\t16384\t4194304",
            "tcp_congestion_control": "bbr",
            "tcp_available_congestion_control": "reno cubic bbr",
        },
    )
    tree.files("proc/sys/net/core", {"rmem_max": 212992, "wmem_max": "lots", "default_qdisc": "fq"})
    fs = HostFS(tree.root)
    tcp = probe_net(fs)[1]
    assert tcp.tcp_rmem is None
    assert tcp.tcp_wmem == (4096, 16384, 4194304)
    assert (tcp.rmem_max, tcp.wmem_max) == (212992, None)
    assert tcp.congestion_control == "bbr"
    assert tcp.available_congestion_control == ("reno", "cubic", "bbr")
    assert tcp.default_qdisc == "fq"
    assert any(w.startswith(f"{IPV4}/tcp_rmem:") and "three integers" in w for w in fs.warnings)
    assert any(w.startswith("proc/sys/net/core/wmem_max:") for w in fs.warnings)


def test_tcp_rmem_with_words_warns(tree: SysTree) -> None:
    tree.file(f"{IPV4}/tcp_rmem", "4096 lots 6291456")
    fs = HostFS(tree.root)
    assert probe_net(fs)[1].tcp_rmem is None
    assert fs.warnings == [
        f"{IPV4}/tcp_rmem: expected three integers (min default max), got '4096 lots 6291456'"
    ]


def test_speeds_and_buffer_sizes_no_kernel_holds_warn(tree: SysTree) -> None:
    path = f"{PCI0}/0000:00:19.0"
    pci_function(tree, path, "e1000e")
    interface(tree, path, "eno1", {"speed": "9" * 400})
    interface(tree, path, "eno2", {"speed": "\u0663\u0663"})
    tree.file("proc/sys/net/ipv4/tcp_rmem", f"4096 131072 {'9' * 400}")
    fs = HostFS(tree.root)
    assert [d.speed_mbps for d in probe_net(fs)[0]] == [None, None]
    assert probe_tcp(fs).tcp_rmem is None
    assert len(fs.warnings) == 3 and all(len(w) < 200 for w in fs.warnings), fs.warnings
