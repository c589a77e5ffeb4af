"""The PCI probe on small hand-built trees: nesting, attributes, links, names, broken inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.hostfs import HostFS
from probes.ids import MACHINE_ID, pci_bus_id, pci_id
from probes.pci import parse_link_speed, parse_link_width, pci_class_name, probe_pci
from probes.pciids import find_pci_ids, parse_pci_ids
from tests.sysfs_tree import SysTree
from tuner.topology.model import Machine, Node, PciFunction, PciHostBridge, PciLink, Topology

ROOT_PORT = "pci0000:00/0000:00:01.0"
HBA = f"{ROOT_PORT}/0000:01:00.0"
NIC = "pci0000:00/0000:00:02.0/0000:02:00.0"
WIDE = "pci10000:00/10000:00:04.0"
Attrs = dict[str, str | int]


def add_function(tree: SysTree, path: str, attrs: Attrs | None = None, **more: str | int) -> str:
    """One function at sys/devices/<path>, linked from sys/bus/pci/devices; returns its dir."""
    base = f"sys/devices/{path}"
    values: Attrs = {
        "vendor": "0x8086",
        "device": "0x1234",
        "subsystem_vendor": "0x1028",
        "subsystem_device": "0x04f9",
        "class": "0x068000",
        "numa_node": 0,
        "local_cpulist": "0-3",
        "irq": 0,
    }
    values.update(attrs or {}, **more)
    tree.files(base, {name: value for name, value in values.items() if value != ""})
    tree.link_to(f"sys/bus/pci/devices/{path.rsplit('/', 1)[-1]}", base)
    return base


def link_attrs(speed: str, width: str | int, max_speed: str, max_width: str | int) -> Attrs:
    return {
        "current_link_speed": speed,
        "current_link_width": width,
        "max_link_speed": max_speed,
        "max_link_width": max_width,
    }


def build_machine(tree: SysTree) -> SysTree:
    """Host bridge, a root port with a SAS HBA behind it, a NIC on another port, domain 10000."""
    add_function(tree, "pci0000:00/0000:00:00.0", {"class": "0x060000"})
    port = add_function(
        tree,
        ROOT_PORT,
        {"class": "0x060400", "irq": 24, **link_attrs("8.0 GT/s PCIe", 8, "8.0 GT/s PCIe", 8)},
    )
    tree.link_to(f"{port}/driver", "sys/bus/pci/drivers/pcieport")
    hba = add_function(
        tree,
        HBA,
        {"vendor": "0x1000", "device": "0x0097", "class": "0x010700", "numa_node": -1},
        **link_attrs("5.0 GT/s PCIe", 4, "8.0 GT/s PCIe", 8),
    )
    tree.link_to(f"{hba}/driver", "sys/bus/pci/drivers/mpt3sas")
    for irq in (45, 130, 41):
        tree.file(f"{hba}/msi_irqs/{irq}", "msix")
    add_function(tree, "pci0000:00/0000:00:02.0", {"class": "0x060400"})
    nic = add_function(
        tree,
        NIC,
        {"device": "0x1572", "class": "0x020000", "numa_node": 1},
        **link_attrs("8.0 GT/s PCIe", 8, "8.0 GT/s PCIe", 8),
    )
    tree.link_to(f"{nic}/driver", "sys/bus/pci/drivers/i40e")
    add_function(tree, WIDE, {"vendor": "0x1af4", "device": "0x1001", "class": "0x010000"})
    return tree


def probe(root: Path) -> tuple[dict[str, Node], HostFS]:
    fs = HostFS(root)
    return {node.id: node for node in probe_pci(fs)}, fs


def function(nodes: dict[str, Node], address: str) -> PciFunction:
    node = nodes[pci_id(address)]
    assert isinstance(node, PciFunction)
    return node


def test_host_bridges_one_per_root_with_functions(tree: SysTree) -> None:
    build_machine(tree).dir("sys/devices/pci0000:ff")  # an empty root: no bridge for it
    nodes, fs = probe(tree.root)
    bridges = [node for node in nodes.values() if isinstance(node, PciHostBridge)]
    assert {(b.id, b.name, b.domain, b.bus, b.parent) for b in bridges} == {
        (pci_bus_id("0000", "00"), "pci0000:00", "0000", "00", MACHINE_ID),
        (pci_bus_id("10000", "00"), "pci10000:00", "10000", "00", MACHINE_ID),
    }
    assert fs.warnings == []


def test_parent_chain_follows_the_bridges(tree: SysTree) -> None:
    build_machine(tree)
    fs = HostFS(tree.root)
    machine = Machine(id=MACHINE_ID, parent=None, name="m")
    topo = Topology(root=str(tree.root), nodes=(machine, *probe_pci(fs)))
    assert [n.id for n in topo.ancestors(pci_id("0000:01:00.0"))] == [
        pci_id("0000:00:01.0"),
        pci_bus_id("0000", "00"),
        MACHINE_ID,
    ]
    assert topo.node(pci_id("0000:02:00.0")).parent == pci_id("0000:00:02.0")  # type: ignore[union-attr]
    assert topo.node(pci_id("10000:00:04.0")).parent == pci_bus_id("10000", "00")  # type: ignore[union-attr]


def test_sas_hba_attributes_and_link(tree: SysTree) -> None:
    nodes, _ = probe(build_machine(tree).root)
    hba = function(nodes, "0000:01:00.0")
    assert (hba.vendor_id, hba.device_id) == (0x1000, 0x0097)
    assert (hba.subsystem_vendor_id, hba.subsystem_device_id) == (0x1028, 0x04F9)
    assert hba.class_code == 0x010700 and hba.is_storage_controller
    assert hba.driver == "mpt3sas"
    assert hba.numa_node is None  # the kernel's -1
    assert hba.local_cpus == (0, 1, 2, 3)
    assert hba.msi_irqs == (41, 45, 130)
    assert hba.irq is None  # irq 0 means none
    assert hba.link == PciLink(speed_gts=5.0, width=4, max_speed_gts=8.0, max_width=8)
    # 5 GT/s x 4 lanes at 8b/10b = 2000 MB/s; the slot could do 8 GT/s x8 at 128b/130b.
    assert hba.link.usable_mbps == 2000.0
    assert hba.link.max_usable_mbps == pytest.approx(7876.9, abs=0.1)
    assert hba.link.downtrained


def test_nic_bridge_and_conventional_function(tree: SysTree) -> None:
    nodes, _ = probe(build_machine(tree).root)
    nic = function(nodes, "0000:02:00.0")
    assert nic.is_network_controller and nic.driver == "i40e" and nic.numa_node == 1
    assert nic.link is not None and not nic.link.downtrained
    port = function(nodes, "0000:00:01.0")
    assert port.is_bridge and port.driver == "pcieport" and port.irq == 24
    host = function(nodes, "0000:00:00.0")
    assert host.link is None and host.driver is None and host.msi_irqs == ()


def test_wide_domain(tree: SysTree) -> None:
    nodes, _ = probe(build_machine(tree).root)
    wide = function(nodes, "10000:00:04.0")
    assert wide.name == wide.address == "10000:00:04.0"
    assert wide.class_code == 0x010000 and pci_class_name(wide.class_code) == "SCSI"


def test_vmd_domain_hangs_from_its_endpoint(tree: SysTree) -> None:
    vmd = "pci0000:00/0000:00:0e.0"
    add_function(tree, vmd, {"class": "0x010400", "device": "0x467f"})
    add_function(tree, f"{vmd}/pci10000:e0/10000:e0:06.0", {"class": "0x060400"})
    add_function(tree, f"{vmd}/pci10000:e0/10000:e0:06.0/10000:e1:00.0", {"class": "0x010802"})
    nodes, fs = probe(tree.root)
    assert nodes[pci_bus_id("10000", "e0")].parent == pci_id("0000:00:0e.0")
    assert function(nodes, "10000:e0:06.0").parent == pci_bus_id("10000", "e0")
    assert function(nodes, "10000:e1:00.0").parent == pci_id("10000:e0:06.0")
    assert fs.warnings == []


def test_local_cpus_mask_when_no_list(tree: SysTree) -> None:
    add_function(tree, "pci0000:00/0000:00:1f.2", local_cpulist="", local_cpus="00000000,000000f0")
    nodes, fs = probe(tree.root)
    assert function(nodes, "0000:00:1f.2").local_cpus == (4, 5, 6, 7)
    assert fs.warnings == []


def test_walks_sys_devices_when_bus_dir_is_missing(tree: SysTree) -> None:
    build_machine(tree)
    for link in (tree.root / "sys/bus/pci/devices").iterdir():
        link.unlink()
    (tree.root / "sys/bus/pci/devices").rmdir()
    nodes, fs = probe(tree.root)
    assert function(nodes, "0000:01:00.0").parent == pci_id("0000:00:01.0")
    assert function(nodes, "10000:00:04.0").parent == pci_bus_id("10000", "00")
    assert len([n for n in nodes.values() if isinstance(n, PciFunction)]) == 6
    assert fs.warnings == []


def test_no_pci_at_all(tree: SysTree) -> None:
    tree.dir("sys/devices/system/cpu")
    nodes, fs = probe(tree.root)
    assert nodes == {} and fs.warnings == []


# -- broken inputs ----------------------------------------------------------------------------


def test_dangling_bus_link_is_skipped_with_a_warning(tree: SysTree) -> None:
    build_machine(tree)
    tree.link("sys/bus/pci/devices/0000:05:00.0", "../../../devices/pci0000:00/0000:05:00.0")
    nodes, fs = probe(tree.root)
    assert pci_id("0000:05:00.0") not in nodes
    assert len([n for n in nodes.values() if isinstance(n, PciFunction)]) == 6
    assert fs.warnings == ["sys/bus/pci/devices/0000:05:00.0: dangling link; function skipped"]


@pytest.mark.parametrize(
    ("attr", "value"),
    [
        ("class", "banana"),
        ("class", "0x1234567"),
        ("numa_node", "two"),
        ("numa_node", "-7"),
        ("numa_node", str(2**64 - 1)),
        ("numa_node", "²"),
    ],
)
def test_malformed_attribute_warns_naming_the_file(tree: SysTree, attr: str, value: str) -> None:
    add_function(tree, HBA, {attr: value})
    nodes, fs = probe(tree.root)
    hba = function(nodes, "0000:01:00.0")
    assert getattr(hba, "class_code" if attr == "class" else attr) is None
    assert len(fs.warnings) == 1
    assert fs.warnings[0].startswith(f"sys/devices/{HBA}/{attr}: ")


def test_missing_vendor_warns(tree: SysTree) -> None:
    add_function(tree, HBA, vendor="")
    nodes, fs = probe(tree.root)
    assert function(nodes, "0000:01:00.0").vendor_id is None
    assert fs.warnings == [f"sys/devices/{HBA}/vendor: missing"]


def test_unknown_link_values_are_quietly_none(tree: SysTree) -> None:
    add_function(tree, HBA, link_attrs("Unknown", 0, "Unknown speed", 8))
    nodes, fs = probe(tree.root)
    assert function(nodes, "0000:01:00.0").link == PciLink(None, None, None, 8)
    assert fs.warnings == []


def test_garbage_link_values_warn(tree: SysTree) -> None:
    add_function(tree, HBA, link_attrs("fast", 255, "8 GT/s", "x16"))
    nodes, fs = probe(tree.root)
    link = function(nodes, "0000:01:00.0").link
    assert link == PciLink(None, None, 8.0, 16)
    assert link.usable_mbps is None
    assert [w.split(":")[-2].rsplit("/", 1)[-1] for w in fs.warnings] == [
        "current_link_speed",
        "current_link_width",
    ]
    assert all(w.startswith(f"sys/devices/{HBA}/current_link_") for w in fs.warnings)


def test_only_some_link_files(tree: SysTree) -> None:
    add_function(tree, HBA, current_link_speed="2.5 GT/s", current_link_width=1)
    nodes, fs = probe(tree.root)
    link = function(nodes, "0000:01:00.0").link
    assert link == PciLink(2.5, 1, None, None) and link.usable_mbps == 250.0
    assert fs.warnings == []


@pytest.mark.parametrize(
    ("text", "gts"),
    [("8.0 GT/s PCIe", 8.0), ("2.5 GT/s", 2.5), ("5 GT/s", 5.0), ("16.0 GT/s PCIe", 16.0),
     ("Unknown", None), ("Unknown speed", None)],
)  # fmt: skip
def test_parse_link_speed(text: str, gts: float | None) -> None:
    assert parse_link_speed(text) == gts


@pytest.mark.parametrize(
    "text", ["", "fast", "0 GT/s", "GT/s 8", f"{'9' * 400} GT/s", "\u0663 GT/s", "9999 GT/s"]
)
def test_parse_link_speed_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_link_speed(text)


def test_parse_link_width() -> None:
    assert [parse_link_width(t) for t in ("1", "4", "x8", "16", "0")] == [1, 4, 8, 16, None]
    for garbage in ("255", "63", "3", "wide"):
        with pytest.raises(ValueError):
            parse_link_width(garbage)


# -- names ------------------------------------------------------------------------------------

PCI_IDS = """\
# comment
1000  Fixture LSI
\t0097  Fixture SAS3008
\t\t1028 04f9  Fixture subsystem (ignored)
8086  Fixture Intel
# a comment between devices
\t1572  Fixture X710
C 01  Mass storage controller
\t07  Serial Attached SCSI controller
"""


@pytest.mark.parametrize("where", ["usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids"])
def test_names_from_pci_ids_under_the_root(tree: SysTree, where: str) -> None:
    build_machine(tree).file(where, PCI_IDS)
    nodes, fs = probe(tree.root)
    hba = function(nodes, "0000:01:00.0")
    assert (hba.vendor_name, hba.device_name) == ("Fixture LSI", "Fixture SAS3008")
    nic = function(nodes, "0000:02:00.0")
    assert (nic.vendor_name, nic.device_name) == ("Fixture Intel", "Fixture X710")
    port = function(nodes, "0000:00:01.0")
    assert (port.vendor_name, port.device_name) == ("Fixture Intel", None)
    assert function(nodes, "10000:00:04.0").vendor_name is None
    assert fs.warnings == []


def test_no_pci_ids_anywhere_is_not_a_warning(tree: SysTree, tmp_path: Path) -> None:
    build_machine(tree)
    fs = HostFS(tree.root)
    assert find_pci_ids(fs, system_root=tmp_path / "empty") is None
    assert fs.warnings == []


def test_pci_ids_parsed_once(tree: SysTree) -> None:
    tree.file("usr/share/misc/pci.ids", PCI_IDS)
    first = find_pci_ids(HostFS(tree.root))
    assert first is not None and find_pci_ids(HostFS(tree.root)) is first


def test_parse_pci_ids_keeps_vendor_and_device_lines_only() -> None:
    ids = parse_pci_ids(PCI_IDS + "\t1234  not a device of the class section\n")
    assert ids.vendors == {0x1000: "Fixture LSI", 0x8086: "Fixture Intel"}
    assert ids.devices == {(0x1000, 0x0097): "Fixture SAS3008", (0x8086, 0x1572): "Fixture X710"}
    broken = parse_pci_ids("zzzz  Broken vendor\n\t0001  orphan\n")
    assert broken.vendors == {} and broken.devices == {}


@pytest.mark.parametrize(
    ("code", "name"),
    [(0x010700, "SAS"), (0x010802, "NVMe"), (0x010601, "SATA"), (0x010400, "RAID"),
     (0x020000, "Ethernet"), (0x020700, "InfiniBand"), (0x060400, "PCI bridge"),
     (0x060000, "Host bridge"), (0x0C0330, "USB"), (0x030000, "VGA"), (0xFF0000, "class 0xff00")],
)  # fmt: skip
def test_pci_class_name(code: int, name: str) -> None:
    assert pci_class_name(code) == name


def test_a_bridge_missing_from_the_bus_listing_is_read_from_its_directory(tree: SysTree) -> None:
    # hwloc's 32intel64 capture: two X722 functions behind 0000:5f:03.0, which
    # sys/bus/pci/devices does not list although its directory and attributes are there.
    add_function(tree, "pci0000:5d/0000:5d:02.0", {"class": "0x060400"})
    bridge = "sys/devices/pci0000:5d/0000:5d:02.0/0000:5f:03.0"
    tree.files(bridge, {"vendor": "0x8086", "device": "0x37c5", "class": "0x060400"})
    for fn in ("0", "1"):
        add_function(tree, f"pci0000:5d/0000:5d:02.0/0000:5f:03.0/0000:60:00.{fn}",
                     {"class": "0x020000"})  # fmt: skip
    fs = HostFS(tree.root)
    nodes = {n.id: n for n in probe_pci(fs)}
    assert nodes[pci_id("0000:5f:03.0")].parent == pci_id("0000:5d:02.0")
    assert nodes[pci_id("0000:60:00.0")].parent == pci_id("0000:5f:03.0")
    assert nodes[pci_id("0000:60:00.1")].parent == pci_id("0000:5f:03.0")
    assert any("0000:5f:03.0: missing from sys/bus/pci/devices" in w for w in fs.warnings)


def test_functions_outside_any_host_bridge_directory_get_their_bus_as_host_bridge(
    tree: SysTree,
) -> None:
    # hwloc's nvidiagpunumanodes: sys/bus/pci/devices/* are plain directories holding only
    # class and local_cpus (no vendor, no device, no sys/devices/pci*).
    for address in ("0004:05:00.0", "0035:04:00.0"):
        tree.files(f"sys/bus/pci/devices/{address}", {"class": "0x030000", "local_cpus": "f"})
    fs = HostFS(tree.root)
    nodes = {n.id: n for n in probe_pci(fs)}
    gpu = nodes[pci_id("0004:05:00.0")]
    assert isinstance(gpu, PciFunction) and gpu.vendor_id is None and gpu.class_code == 0x030000
    assert gpu.parent == pci_bus_id("0004", "05")
    host = nodes[pci_bus_id("0004", "05")]
    assert isinstance(host, PciHostBridge) and host.parent == MACHINE_ID
    assert nodes[pci_id("0035:04:00.0")].parent == pci_bus_id("0035", "04")


def test_slots_onboard_index_label_and_virtual_functions(tree: SysTree) -> None:
    add_function(tree, "pci0000:00/0000:00:03.0", {"class": "0x060400"})
    add_function(tree, "pci0000:00/0000:00:03.0/0000:05:00.0", {"class": "0x020000"})
    add_function(tree, "pci0000:00/0000:00:1c.0", {"class": "0x060400"})
    lom = add_function(tree, "pci0000:00/0000:00:1c.0/0000:06:00.0", {"class": "0x020000"},
                       index=1, label="LOM 1G I350-BT2 (LAN1)")  # fmt: skip
    vf = add_function(tree, "pci0000:00/0000:00:1c.0/0000:06:10.0", {"class": "0x020000"})
    tree.link_to(f"{vf}/physfn", lom)
    tree.files("sys/bus/pci/slots/6", {"address": "0000:05:00"})
    tree.files("sys/bus/pci/slots/7", {"address": "0000:07"})  # a slot holding a whole bus
    add_function(tree, "pci0000:00/0000:00:1d.0", {"class": "0x060400"})
    add_function(tree, "pci0000:00/0000:00:1d.0/0000:07:00.3", {"class": "0x010802"})
    fs = HostFS(tree.root)
    nodes = {n.id: n for n in probe_pci(fs) if isinstance(n, PciFunction)}
    card, onboard, virtual = (
        nodes[pci_id(a)] for a in ("0000:05:00.0", "0000:06:00.0", "0000:06:10.0")
    )
    assert (card.slot, card.onboard_index, card.label) == ("6", None, None)
    assert (onboard.slot, onboard.onboard_index, onboard.label) == (
        None, 1, "LOM 1G I350-BT2 (LAN1)",
    )  # fmt: skip
    assert (onboard.virtual_function, virtual.virtual_function) == (False, True)
    assert nodes[pci_id("0000:07:00.3")].slot == "7"
    assert fs.warnings == []


@pytest.mark.parametrize(
    ("files", "warning"),
    [
        ({"label": "Embedded\x1b[2J NIC"}, "label: not a name"),
        ({"label": "x" * 65}, "label: not a name"),
        ({"index": "-1"}, "index: -1 is implausible"),
        ({"index": "1e9"}, "index: expected an integer"),
    ],
)
def test_hostile_firmware_names_are_warnings_not_facts(
    tree: SysTree, files: Attrs, warning: str
) -> None:
    add_function(tree, NIC.rsplit("/", 1)[0], {"class": "0x060400"})
    add_function(tree, NIC, {"class": "0x020000", **files})
    tree.files("sys/bus/pci/slots/1", {"address": "not an address"})
    fs = HostFS(tree.root)
    nic = next(n for n in probe_pci(fs) if isinstance(n, PciFunction) and n.name == "0000:02:00.0")
    assert (nic.label, nic.onboard_index, nic.slot) == (None, None, None)
    assert any(warning in w for w in fs.warnings), fs.warnings
    assert any("slots/1/address: expected DDDD:BB:DD" in w for w in fs.warnings)
