"""The topology indexed once for the facts: disks with their path, rates, what sits below what.

Every fact module reads this instead of walking the tree itself, so collecting the facts of a
host costs one walk up from each disk, NIC and controller (a 1,000-disk host: milliseconds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tuner.facts.rates import device_class, expected_mbps, is_optical, is_virtual_disk
from tuner.topology.model import (
    BlockDevice,
    Machine,
    NetDevice,
    Node,
    NumaNode,
    PciFunction,
    StackEdge,
    StoragePort,
    Topology,
)


@dataclass
class Below:
    """The disks, storage controllers, network controllers and NICs at or below one node."""

    disks: list[BlockDevice] = field(default_factory=list)
    controllers: list[PciFunction] = field(default_factory=list)
    network: list[PciFunction] = field(default_factory=list)
    nics: list[NetDevice] = field(default_factory=list)


_NOTHING = Below()


class TopologyIndex:
    """Lookups the fact functions share, each built in one pass over the topology."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.machine = next(iter(topology.of_type(Machine)), None)
        self.numa = topology.of_type(NumaNode)
        self.functions = topology.of_type(PciFunction)
        self.blocks = topology.of_type(BlockDevice)
        self.nics = [nic for nic in topology.of_type(NetDevice) if not nic.virtual]
        self.cpu_node = {cpu: node.os_index for node in self.numa for cpu in node.cpus}
        self._lower: dict[str, list[StackEdge]] = {}
        self._upper: dict[str, list[StackEdge]] = {}
        for edge in topology.edges:
            self._lower.setdefault(edge.upper, []).append(edge)
            self._upper.setdefault(edge.lower, []).append(edge)
        self.controller: dict[str, PciFunction | None] = {}
        self.rate: dict[str, float | None] = {}
        self.device_class: dict[str, str | None] = {}
        self.emulated: set[str] = set()  # disks a hypervisor emulates (virtio, VMware...)
        self.attached: list[BlockDevice] = []  # whole disks behind a PCI controller
        self.below: dict[str, Below] = {}
        self._node_of: dict[str, int | None] = {}
        for dev in self.blocks:
            if dev.kind != "partition":
                self._place_disk(dev)
        self.storage_controllers = self._storage_controllers()
        self.network_controllers = self._network_controllers()
        for fn in self.storage_controllers:
            for node in (fn, *topology.ancestors(fn.id)):
                self._below(node.id).controllers.append(fn)
        for fn in self.network_controllers:
            for node in (fn, *topology.ancestors(fn.id)):
                self._below(node.id).network.append(fn)
        for nic in self.nics:
            for node in topology.ancestors(nic.id):
                self._below(node.id).nics.append(nic)

    def _storage_controllers(self) -> list[PciFunction]:
        """Storage controllers by class, and functions serving disks (a USB host), in PCI order."""
        found = {fn.id for fn in self.functions if fn.is_storage_controller}
        found.update(fn.id for dev in self.attached if (fn := self.controller[dev.name]))
        return [fn for fn in self.functions if fn.id in found]

    def _network_controllers(self) -> list[PciFunction]:
        """Network controllers by class, and functions carrying an interface, storage aside."""
        found = {fn.id for fn in self.functions if fn.is_network_controller}
        found.update(fn.id for nic in self.nics if (fn := self.topology.pci_function_of(nic.id)))
        storage = {fn.id for fn in self.storage_controllers}
        return [fn for fn in self.functions if fn.id in found - storage]

    def _place_disk(self, dev: BlockDevice) -> None:
        """Record a whole disk's controller, hops and rate, and add it below its ancestors."""
        hops: list[StoragePort] = []
        controller: PciFunction | None = None
        above: list[Node] = []
        for node in self.topology.ancestors(dev.id):
            above.append(node)
            if controller is None and isinstance(node, StoragePort):
                hops.append(node)
            elif controller is None and isinstance(node, PciFunction):
                controller = node
        self.controller[dev.name] = controller
        self.rate[dev.name] = expected_mbps(dev, hops, controller)
        self.device_class[dev.name] = device_class(dev, hops, controller)
        if controller is None or dev.kind not in ("disk", "nvme"):
            return
        if dev.size_bytes == 0 or is_optical(dev):  # an empty slot, a CD drive: no storage
            return
        if is_virtual_disk(dev, hops, controller):
            self.emulated.add(dev.name)
        self.attached.append(dev)
        for node in above:
            self._below(node.id).disks.append(dev)

    def _below(self, node_id: str) -> Below:
        return self.below.setdefault(node_id, Below())

    # -- lookups -------------------------------------------------------------------------------

    def below_of(self, node_id: str) -> Below:
        """What sits at or below a node (empty when nothing does)."""
        return self.below.get(node_id, _NOTHING)

    def lower(self, name: str, kind: str | None = None) -> list[str]:
        """Devices `name` sits on directly, optionally only through edges of one kind."""
        return [e.lower for e in self._lower.get(name, ()) if kind is None or e.kind == kind]

    def upper(self, name: str, kind: str | None = None) -> list[str]:
        """Devices sitting directly on `name`, optionally only through edges of one kind."""
        return [e.upper for e in self._upper.get(name, ()) if kind is None or e.kind == kind]

    def disk_of(self, partition: BlockDevice) -> BlockDevice | None:
        """The whole device a partition is on (by its stack edge, else its tree parent)."""
        for name in self.lower(partition.name, "partition"):
            found = self.topology.block_device(name)
            if found is not None:
                return found
        parent = self.topology.node(partition.parent) if partition.parent else None
        return parent if isinstance(parent, BlockDevice) else None

    def whole(self, dev: BlockDevice) -> BlockDevice:
        """The device itself, or the disk it is a partition of."""
        return (self.disk_of(dev) or dev) if dev.kind == "partition" else dev

    def numa_node(self, node_id: str) -> int | None:
        """The NUMA node of a PCI function (or a node below one), cached per function."""
        fn = self.topology.pci_function_of(node_id)
        key = fn.id if fn is not None else node_id
        if key not in self._node_of:
            self._node_of[key] = self.topology.numa_node_of(key)
        return self._node_of[key]

    @property
    def cpu_count(self) -> int:
        """Online CPUs (from the CPU probe, else the NUMA nodes' CPU lists)."""
        return len(self.topology.cpu.online) or len(self.cpu_node)
