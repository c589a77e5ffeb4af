"""Build Topology values for the fact tests: nodes are cheap to construct, so no sysfs needed.

Ids follow probes.ids, so the values look like what the probes produce.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.synthetic_host import disk_name
from probes.ids import MACHINE_ID, block_id, net_id, pci_bus_id, pci_id, port_id
from tuner.topology.model import (
    BlockDevice,
    CpuInfo,
    Irq,
    Machine,
    MdInfo,
    Mount,
    MultiDeviceFs,
    NetDevice,
    Node,
    NumaNode,
    PartitionInfo,
    PciFunction,
    PciHostBridge,
    PciLink,
    QueueSettings,
    StackEdge,
    StoragePort,
    TcpSettings,
    Topology,
    VmSettings,
)

GIB = 1024**3
MIB = 1024**2
SAS_HBA = 0x010700
RAID = 0x010400
NVME = 0x010802
AHCI = 0x010601
ETHERNET = 0x020000
BRIDGE = 0x060400
HDD_QUEUE = QueueSettings(
    read_ahead_kb=4096,
    scheduler="mq-deadline",
    schedulers=("mq-deadline", "none"),
    nr_requests=256,
    max_sectors_kb=1280,
    max_hw_sectors_kb=4096,
    write_cache="write through",
    physical_block_size=4096,
)


def link(
    speed: float, width: int, max_speed: float | None = None, max_width: int | None = None
) -> PciLink:
    """A PCIe link trained at speed x width (at its maximum unless told otherwise)."""
    return PciLink(speed, width, max_speed or speed, max_width or width)


@dataclass
class Host:
    """A topology under construction: add nodes, records and settings, then `build()`."""

    cpus: int = 8
    numa_nodes: int = 1
    memory_bytes: int = 64 * GIB
    nodes: list[Node] = field(default_factory=list)
    edges: list[StackEdge] = field(default_factory=list)
    mounts: list[Mount] = field(default_factory=list)
    filesystems: list[MultiDeviceFs] = field(default_factory=list)
    irqs: list[Irq] = field(default_factory=list)
    cpu: CpuInfo | None = None
    tcp: TcpSettings = field(default_factory=TcpSettings)
    vm: VmSettings = field(default_factory=VmSettings)

    def __post_init__(self) -> None:
        self.nodes.append(
            Machine(MACHINE_ID, None, "box", hostname="box", memory_bytes=self.memory_bytes)
        )
        per = self.cpus // self.numa_nodes
        for n in range(self.numa_nodes):
            cpus = tuple(range(n * per, (n + 1) * per))
            self.nodes.append(NumaNode(f"numa:{n}", MACHINE_ID, f"node{n}", os_index=n, cpus=cpus))

    def host_bridge(self, bus: str = "00") -> str:
        """A PCI root (added once however often asked for); returns its id."""
        node = PciHostBridge(pci_bus_id("0000", bus), MACHINE_ID, f"pci0000:{bus}", bus=bus)
        if all(existing.id != node.id for existing in self.nodes):
            self.nodes.append(node)
        return node.id

    def function(
        self,
        address: str,
        parent: str,
        class_code: int,
        pcie: PciLink | None = None,
        *,
        numa_node: int | None = None,
        vendor_id: int = 0x1000,
    ) -> str:
        """A PCI function; returns its id."""
        fn = PciFunction(
            pci_id(address),
            parent,
            address,
            address=address,
            class_code=class_code,
            vendor_id=vendor_id,
            link=pcie,
            numa_node=numa_node,
        )
        self.nodes.append(fn)
        return fn.id

    def port(
        self, name: str, parent: str, kind: str, gbps: float | None = None, lanes: int | None = None
    ) -> str:
        """A storage-path hop; returns its id."""
        self.nodes.append(StoragePort(port_id(name), parent, name, kind, gbps, lanes))
        return port_id(name)

    def disk(
        self,
        name: str,
        parent: str,
        *,
        rotational: bool | None = True,
        model: str | None = "ST4000NM0023",
        vendor: str | None = "SEAGATE",
        size: int = 4000 * GIB,
        queue: QueueSettings | None = HDD_QUEUE,
        md: MdInfo | None = None,
    ) -> BlockDevice:
        """A whole block device."""
        dev = BlockDevice(
            block_id(name),
            parent,
            name,
            size_bytes=size,
            rotational=rotational,
            model=model,
            vendor=vendor,
            queue=queue,
            md=md,
        )
        self.nodes.append(dev)
        return dev

    def partition(self, name: str, disk: str, start: int, size: int = 100 * GIB) -> str:
        """A partition of `disk` starting at byte `start`."""
        info = PartitionInfo(int(name[-1]), start)
        self.nodes.append(
            BlockDevice(block_id(name), block_id(disk), name, size_bytes=size, partition=info)
        )
        self.edges.append(StackEdge(name, disk, "partition"))
        return name

    def md(self, name: str, level: str, chunk: int | None, members: list[str]) -> BlockDevice:
        """An md array over `members` (kernel names)."""
        info = MdInfo(level, chunk, len(members), tuple(members))
        dev = self.disk(name, MACHINE_ID, rotational=True, model=None, vendor=None, md=info)
        self.edges.extend(StackEdge(name, member, "member") for member in members)
        return dev

    def nic(self, name: str, parent: str, speed_mbps: int | None = 10000, mtu: int = 1500) -> str:
        """A network interface on the function `parent`."""
        self.nodes.append(
            NetDevice(net_id(name), parent, name, driver="ixgbe", mtu=mtu, speed_mbps=speed_mbps)
        )
        return net_id(name)

    def irq(
        self,
        number: int,
        device: str,
        *,
        counts: tuple[int, ...] = (),
        effective: tuple[int, ...] = (),
        affinity: tuple[int, ...] = (),
    ) -> None:
        """An interrupt vector of the PCI function at address `device`."""
        self.irqs.append(
            Irq(number, f"vec{number}", "PCI-MSIX", device, affinity, effective, counts)
        )

    def build(self) -> Topology:
        """The topology as the probes would hand it over."""
        return Topology(
            root="/fixture",
            nodes=tuple(self.nodes),
            edges=tuple(self.edges),
            mounts=tuple(self.mounts),
            filesystems=tuple(self.filesystems),
            irqs=tuple(self.irqs),
            cpu=self.cpu or CpuInfo(online=tuple(range(self.cpus))),
            tcp=self.tcp,
            vm=self.vm,
        )


def sas_hba_with_disks(
    host: Host,
    *,
    hba: str = "0000:03:00.0",
    root_port: str = "0000:00:03.0",
    disks: int = 16,
    hba_link: PciLink | None = None,
    wide_gbps: float | None = 6.0,
    lanes: int | None = 4,
    parent: str | None = None,
    first: int = 0,
) -> list[str]:
    """An HBA behind a root port: host H, one wide port to an expander, one narrow port per disk.

    Returns the disk names (sd + letters from `first`).
    """
    if parent is None:
        parent = host.function(root_port, host.host_bridge(), BRIDGE, hba_link or link(8.0, 8))
    fn = host.function(hba, parent, SAS_HBA, hba_link or link(8.0, 8))
    h = int(hba.split(":")[1], 16)
    top = host.port(f"host{h}", fn, "scsi_host")
    wide = host.port(f"port-{h}:0", top, "sas_port", wide_gbps, lanes)
    expander = host.port(f"expander-{h}:0", wide, "expander")
    names = []
    for slot in range(disks):
        narrow = host.port(f"port-{h}:0:{slot}", expander, "sas_port", wide_gbps, 1)
        end = host.port(f"end_device-{h}:0:{slot}", narrow, "end_device")
        lun = host.port(f"{h}:0:{slot}:0", end, "lun")
        name = disk_name(first + slot)
        host.disk(name, lun)
        names.append(name)
    return names
