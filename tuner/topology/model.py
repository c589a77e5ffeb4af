"""The topology model: typed nodes in a tree, storage-stack edges, and host-wide settings.

Like hwloc's, the tree runs machine -> NUMA nodes and machine -> PCI host bridges -> bridges ->
functions -> the storage path (SCSI host, SAS port, expander, end device, target) -> block
devices, and PCI functions -> network interfaces. Nodes refer to their parent by id, so the model
stays a set of frozen values; `Topology` indexes them and answers locality questions by walking
up (`numa_node_of`, `pci_function_of`) instead of storing the answer twice.

Stacks that are not a tree (a partition of a disk, an md array over several disks, a loop
device over a file on another device) are `StackEdge`s: `upper` sits on `lower`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

SCHEMA_VERSION = 1

# --- values carried by nodes ---------------------------------------------------------------


@dataclass(frozen=True)
class PciLink:
    """A PCIe link's trained and maximum speed (GT/s per lane) and width (lanes)."""

    speed_gts: float | None
    width: int | None
    max_speed_gts: float | None
    max_width: int | None

    @property
    def usable_mbps(self) -> float | None:
        """Usable one-way bandwidth of the link as trained, in MB/s."""
        return pcie_usable_mbps(self.speed_gts, self.width)

    @property
    def max_usable_mbps(self) -> float | None:
        """Usable one-way bandwidth the link could reach at its maximum speed and width."""
        return pcie_usable_mbps(self.max_speed_gts, self.max_width)

    @property
    def downtrained(self) -> bool:
        """True when the link runs slower or narrower than both ends allow."""
        slower = None not in (self.speed_gts, self.max_speed_gts) and (
            (self.speed_gts or 0) < (self.max_speed_gts or 0)
        )
        narrower = None not in (self.width, self.max_width) and (
            (self.width or 0) < (self.max_width or 0)
        )
        return bool(slower or narrower)


def pcie_encoding_efficiency(speed_gts: float) -> float:
    """Payload share of the line rate: 8b/10b up to 5 GT/s, 128b/130b from 8 GT/s, FLIT at 64."""
    if speed_gts <= 5.0:
        return 8 / 10
    if speed_gts < 64.0:
        return 128 / 130
    return 242 / 256


def pcie_usable_mbps(speed_gts: float | None, width: int | None) -> float | None:
    """Usable MB/s of `width` lanes at `speed_gts`, after line encoding (not protocol overhead)."""
    if not speed_gts or not width:
        return None
    return round(speed_gts * pcie_encoding_efficiency(speed_gts) * width * 1000 / 8, 1)


@dataclass(frozen=True)
class QueueSettings:
    """A block device's request-queue attributes as read from `queue/`; None where absent."""

    read_ahead_kb: int | None = None
    scheduler: str | None = None
    schedulers: tuple[str, ...] = ()
    nr_requests: int | None = None
    max_sectors_kb: int | None = None
    max_hw_sectors_kb: int | None = None
    write_cache: str | None = None
    rq_affinity: int | None = None
    nomerges: int | None = None
    logical_block_size: int | None = None
    physical_block_size: int | None = None
    minimum_io_size: int | None = None
    optimal_io_size: int | None = None


@dataclass(frozen=True)
class PartitionInfo:
    """Where a partition starts on its disk."""

    number: int | None
    start_bytes: int | None


@dataclass(frozen=True)
class MdInfo:
    """An md array: RAID level, chunk size and member devices (by kernel name)."""

    level: str | None
    chunk_bytes: int | None
    raid_disks: int | None
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class DmInfo:
    """A device-mapper device's name and uuid (the uuid prefix tells LVM, crypt, multipath)."""

    name: str | None
    uuid: str | None


@dataclass(frozen=True)
class LoopInfo:
    """A loop device's backing file and the block device that file lives on."""

    backing_file: str | None
    backing_device: str | None
    offset_bytes: int | None = None
    direct_io: bool | None = None


# --- tree nodes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """A node of the topology tree; `parent` is the id of the node above, None at the top."""

    id: str
    parent: str | None
    name: str


@dataclass(frozen=True)
class Machine(Node):
    """The root of the tree."""

    hostname: str | None = None
    memory_bytes: int | None = None
    kernel: str | None = None  # the release, proc/sys/kernel/osrelease
    machine_id: str | None = None  # derived from /etc/machine-id (probes/identity.py), live


@dataclass(frozen=True)
class NumaNode(Node):
    """A NUMA node: its CPUs, local memory and distance row (indexed like `Topology.numa`)."""

    os_index: int = 0
    cpus: tuple[int, ...] = ()
    memory_bytes: int | None = None
    distances: tuple[int, ...] = ()


@dataclass(frozen=True)
class PciHostBridge(Node):
    """A PCI root (`/sys/devices/pciDDDD:BB`), the top of one PCI hierarchy."""

    domain: str = "0000"
    bus: str = "00"


@dataclass(frozen=True)
class PciFunction(Node):
    """One PCI function. `numa_node` and `local_cpus` are as the kernel reports them."""

    address: str = ""
    vendor_id: int | None = None
    device_id: int | None = None
    subsystem_vendor_id: int | None = None
    subsystem_device_id: int | None = None
    class_code: int | None = None
    vendor_name: str | None = None
    device_name: str | None = None
    driver: str | None = None
    numa_node: int | None = None
    local_cpus: tuple[int, ...] = ()
    link: PciLink | None = None
    irq: int | None = None
    msi_irqs: tuple[int, ...] = ()
    virtual_function: bool = False  # an SR-IOV VF (it has `physfn`): its traffic is its PF's
    slot: str | None = None  # the physical slot it sits in (sys/bus/pci/slots), when known
    onboard_index: int | None = None  # SMBIOS type 41 instance: the firmware says it is on board
    label: str | None = None  # the firmware's name for it ("Embedded NIC 1")

    @property
    def base_class(self) -> int | None:
        """The class byte: 0x01 storage, 0x02 network, 0x06 bridge..."""
        return None if self.class_code is None else self.class_code >> 16

    @property
    def is_bridge(self) -> bool:
        """True for PCI-to-PCI bridges (class 0604), the switch and root ports."""
        return self.class_code is not None and self.class_code >> 8 == 0x0604

    @property
    def is_storage_controller(self) -> bool:
        """True for mass-storage controllers (class 01xx)."""
        return self.base_class == 0x01

    @property
    def is_network_controller(self) -> bool:
        """True for network controllers (class 02xx)."""
        return self.base_class == 0x02


@dataclass(frozen=True)
class StoragePort(Node):
    """A hop on the storage path below a controller.

    `kind` is one of: scsi_host, ata_port, sas_port, expander, end_device, target, lun,
    nvme_ctrl, virtio, other.
    """

    kind: str = "other"
    link_gbps: float | None = None  # SAS/SATA: negotiated rate per lane (phy), Gb/s
    lanes: int | None = None  # SAS: phys in the port (a wide port has several); SATA: 1


@dataclass(frozen=True)
class BlockDevice(Node):
    """A block device: a whole disk or a partition, physical or virtual (md, dm, loop...)."""

    devtype: str = "disk"
    major: int | None = None
    minor: int | None = None
    size_bytes: int | None = None
    rotational: bool | None = None
    removable: bool | None = None
    model: str | None = None
    vendor: str | None = None
    serial: str | None = None
    wwn: str | None = None
    fs_type: str | None = None
    queue: QueueSettings | None = None
    partition: PartitionInfo | None = None
    md: MdInfo | None = None
    dm: DmInfo | None = None
    loop: LoopInfo | None = None
    pmem_mode: str | None = None  # persistent memory: fsdax, sector (BTT) or raw

    @property
    def kind(self) -> str:
        """partition, md, dm, loop, nvme, or disk."""
        if self.partition is not None:
            return "partition"
        for kind, info in (("md", self.md), ("dm", self.dm), ("loop", self.loop)):
            if info is not None:
                return kind
        return "nvme" if self.name.startswith("nvme") else "disk"


@dataclass(frozen=True)
class NetDevice(Node):
    """A network interface; its parent is its PCI function, or the machine for virtual ones."""

    driver: str | None = None
    mtu: int | None = None
    speed_mbps: int | None = None
    rx_queues: int | None = None
    tx_queues: int | None = None
    address: str | None = None
    operstate: str | None = None
    virtual: bool = False
    settings: tuple[tuple[str, int], ...] = ()
    """Facts only the tunables read (ring sizes, coalescing: tuner/tunables/observe.py), as
    (fact, value) pairs; empty until that step ran."""


@dataclass(frozen=True)
class DaxDevice(Node):
    """A device-dax character device (/dev/daxX.Y): persistent memory mapped whole, without a
    block layer. Its parent is the NUMA node it is local to. With the kmem driver its memory
    is system RAM of NUMA node `target_node` instead."""

    size_bytes: int | None = None
    driver: str | None = None  # device_dax, or kmem (system RAM)
    target_node: int | None = None


NODE_TYPES: tuple[type[Node], ...] = (
    Machine,
    NumaNode,
    PciHostBridge,
    PciFunction,
    StoragePort,
    BlockDevice,
    NetDevice,
    DaxDevice,
)

# --- records outside the tree -------------------------------------------------------------


@dataclass(frozen=True)
class StackEdge:
    """`upper` sits on `lower` (block device names); kind: partition, member, dm, loop, fs."""

    upper: str
    lower: str
    kind: str


@dataclass(frozen=True)
class Mount:
    """One line of the mount table."""

    device: str
    mountpoint: str
    fstype: str
    options: tuple[str, ...] = ()
    kname: str | None = None  # the block device's kernel name, where the source is one


@dataclass(frozen=True)
class MultiDeviceFs:
    """A file system spread over several block devices (btrfs) with the devices it uses."""

    fstype: str
    uuid: str
    label: str | None = None
    devices: tuple[str, ...] = ()
    data_profile: str | None = None


@dataclass(frozen=True)
class Irq:
    """One interrupt line: where it may run (affinity), where it does (effective), its counts."""

    irq: int
    name: str
    chip: str | None = None
    device: str | None = None
    affinity: tuple[int, ...] = ()
    effective_affinity: tuple[int, ...] = ()
    counts: tuple[int, ...] = ()

    @property
    def cpus(self) -> tuple[int, ...]:
        """The CPUs the interrupt lands on: effective affinity where known, else affinity."""
        return self.effective_affinity or self.affinity


@dataclass(frozen=True)
class CpuPlace:
    """Where one CPU (a hardware thread) sits: its core and its package (socket), each named by
    the first CPU in it, and the socket's number where the kernel knows it."""

    cpu: int
    core: int | None = None  # first CPU of core_cpus_list (thread_siblings_list)
    package: int | None = None  # first CPU of package_cpus_list (core_siblings_list)
    socket: int | None = None  # physical_package_id


@dataclass(frozen=True)
class CpuInfo:
    """Host CPUs: online list, model name, cpufreq governors (cpu, governor), and the socket
    and core of each online CPU (empty where sysfs has no topology directory)."""

    online: tuple[int, ...] = ()
    model_name: str | None = None
    governors: tuple[tuple[int, str], ...] = ()
    max_mhz: float | None = None
    places: tuple[CpuPlace, ...] = ()

    @property
    def governor(self) -> str | None:
        """The governor when every CPU uses the same one, else None."""
        names = {gov for _, gov in self.governors}
        return names.pop() if len(names) == 1 else None


@dataclass(frozen=True)
class TcpSettings:
    """The host's TCP buffer limits and congestion control."""

    tcp_rmem: tuple[int, ...] | None = None
    tcp_wmem: tuple[int, ...] | None = None
    rmem_max: int | None = None
    wmem_max: int | None = None
    congestion_control: str | None = None
    available_congestion_control: tuple[str, ...] = ()
    default_qdisc: str | None = None

    @property
    def tcp_wmem_max(self) -> int | None:
        """The most a TCP socket's send buffer may grow to (tcp_wmem's third field)."""
        return self.tcp_wmem[2] if self.tcp_wmem and len(self.tcp_wmem) >= 3 else None

    @property
    def tcp_rmem_max(self) -> int | None:
        """The most a TCP socket's receive buffer may grow to (tcp_rmem's third field)."""
        return self.tcp_rmem[2] if self.tcp_rmem and len(self.tcp_rmem) >= 3 else None


@dataclass(frozen=True)
class VmSettings:
    """Page-cache writeback thresholds (vm.dirty_*); a *_bytes of 0 defers to the ratio."""

    dirty_ratio: int | None = None
    dirty_background_ratio: int | None = None
    dirty_bytes: int | None = None
    dirty_background_bytes: int | None = None
    dirty_expire_centisecs: int | None = None


NodeT = TypeVar("NodeT", bound=Node)


@dataclass(frozen=True)
class Topology:
    """Everything the probes found about one host, plus what they could not read."""

    root: str
    nodes: tuple[Node, ...] = ()
    edges: tuple[StackEdge, ...] = ()
    mounts: tuple[Mount, ...] = ()
    filesystems: tuple[MultiDeviceFs, ...] = ()
    irqs: tuple[Irq, ...] = ()
    cpu: CpuInfo = field(default_factory=CpuInfo)
    tcp: TcpSettings = field(default_factory=TcpSettings)
    vm: VmSettings = field(default_factory=VmSettings)
    warnings: tuple[str, ...] = ()
    schema_version: int = SCHEMA_VERSION

    # -- indexes (built once, on first use) ------------------------------------------------

    @cached_property
    def _by_id(self) -> dict[str, Node]:
        return {node.id: node for node in self.nodes}

    @cached_property
    def _children(self) -> dict[str | None, list[Node]]:
        index: dict[str | None, list[Node]] = {}
        for node in self.nodes:
            index.setdefault(node.parent, []).append(node)
        return index

    @cached_property
    def _block_by_name(self) -> dict[str, BlockDevice]:
        return {node.name: node for node in self.of_type(BlockDevice)}

    @cached_property
    def _numa_nodes(self) -> list[NumaNode]:
        return self.of_type(NumaNode)

    @cached_property
    def _lower(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for edge in self.edges:
            index.setdefault(edge.upper, []).append(edge.lower)
        return index

    @cached_property
    def _upper(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for edge in self.edges:
            index.setdefault(edge.lower, []).append(edge.upper)
        return index

    @cached_property
    def _mount_by_device(self) -> dict[str, Mount]:
        index: dict[str, Mount] = {}
        for mount in self.mounts:
            for key in (mount.kname, mount.device.removeprefix("/dev/")):
                if key:
                    index.setdefault(key, mount)
        return index

    @cached_property
    def _irqs_by_device(self) -> dict[str | None, list[Irq]]:
        index: dict[str | None, list[Irq]] = {}
        for irq in self.irqs:
            index.setdefault(irq.device, []).append(irq)
        return index

    # -- navigation ------------------------------------------------------------------------

    def node(self, node_id: str) -> Node | None:
        """The node with this id, or None."""
        return self._by_id.get(node_id)

    def children(self, node_id: str | None) -> list[Node]:
        """The nodes directly below `node_id` (None: the roots)."""
        return self._children.get(node_id, [])

    def ancestors(self, node_id: str) -> Iterator[Node]:
        """The nodes above `node_id`, nearest first."""
        seen: set[str] = set()
        node = self.node(node_id)
        while node is not None and node.parent is not None and node.parent not in seen:
            seen.add(node.parent)
            node = self.node(node.parent)
            if node is not None:
                yield node

    def of_type(self, node_type: type[NodeT]) -> list[NodeT]:
        """All nodes of one type, in probe order."""
        return [node for node in self.nodes if isinstance(node, node_type)]

    def block_device(self, name: str) -> BlockDevice | None:
        """The block device with this kernel name (sda, nvme0n1p2, md0), or None."""
        return self._block_by_name.get(name)

    # -- locality, found by walking up -----------------------------------------------------

    def pci_function_of(self, node_id: str) -> PciFunction | None:
        """The PCI function a node hangs from (itself when it is one)."""
        node = self.node(node_id)
        if isinstance(node, PciFunction):
            return node
        for above in self.ancestors(node_id):
            if isinstance(above, PciFunction):
                return above
        return None

    def numa_node_of(self, node_id: str) -> int | None:
        """The NUMA node a device is local to: the node it hangs from, or the one the nearest PCI
        function knows.

        A function reporting -1 (no locality) is placed by its local CPUs when they fall inside
        exactly one node; on a one-node machine everything is local to that node.
        """
        numa = self._numa_nodes
        chain = [self.node(node_id), *self.ancestors(node_id)]
        for node in chain:
            if isinstance(node, NumaNode):  # persistent memory hangs from its node
                return node.os_index
            if isinstance(node, PciFunction):
                if node.numa_node is not None and node.numa_node >= 0:
                    return node.numa_node
                if node.local_cpus:
                    local = set(node.local_cpus)
                    owners = [n.os_index for n in numa if local <= set(n.cpus)]
                    if len(owners) == 1:
                        return owners[0]
        return numa[0].os_index if len(numa) == 1 else None

    def lower_devices(self, name: str) -> list[str]:
        """Names of the block devices `name` sits on directly."""
        return list(self._lower.get(name, ()))

    def upper_devices(self, name: str) -> list[str]:
        """Names of the block devices that sit directly on `name`."""
        return list(self._upper.get(name, ()))

    def mount_of(self, name: str) -> Mount | None:
        """The first mount of a block device by kernel name, or None."""
        return self._mount_by_device.get(name)

    def irqs_of(self, device: str) -> list[Irq]:
        """The interrupts raised by a device (a PCI address or another device name)."""
        return list(self._irqs_by_device.get(device, ()))
