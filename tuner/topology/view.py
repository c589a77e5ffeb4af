"""The `iotuner probe` tree, in the spirit of lstopo: NUMA nodes, then the PCI tree down to disks
and NICs with link speeds and where each device's interrupts land."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from probes.pci import pci_class_name
from tuner.console import plain_cells
from tuner.topology import walk
from tuner.topology.model import (
    BlockDevice,
    DaxDevice,
    Irq,
    Machine,
    NetDevice,
    Node,
    NumaNode,
    PciFunction,
    PciHostBridge,
    StoragePort,
    Topology,
)
from tuner.topology.walk import descendants
from tuner.units import cpulist, human_bytes, human_rate

_SECTIONS = ("numa", "pci", "storage", "net", "irq")


def render_topology(topology: Topology, section: str | None = None) -> RenderableType:
    """A rich renderable of the whole topology, or of one section of it."""
    parts: list[RenderableType] = []
    machine = next(iter(topology.of_type(Machine)), None)
    title = Text.assemble(("Machine ", "bold"), machine.name if machine else "?")
    if machine and machine.memory_bytes:
        title.append(f"  {human_bytes(machine.memory_bytes)}")
    if topology.cpu.online:
        title.append(f"  {len(topology.cpu.online)} CPUs")
    root = Tree(title)
    show = set(_SECTIONS) if section is None else {section}
    if "numa" in show:
        _numa_branch(root, topology)
    if show & {"pci", "storage", "net"}:
        keep = _pci_filter(topology, section)
        for bridge in topology.of_type(PciHostBridge):
            if any(keep(n) for n in descendants(topology, bridge.id)):
                branch = root.add(Text(f"PCI {bridge.domain}:{bridge.bus}", style="bold cyan"))
                _pci_children(branch, topology, bridge.id, keep, section)
    if show & {"storage"} or section is None:
        # The whole tree shows persistent memory under its NUMA node; the storage section
        # has no NUMA branch, so it lists them here, with their node.
        _virtual_block(root, topology, local_too=section == "storage")
    if show & {"net"} or section is None:
        _virtual_net(root, topology)
    parts.append(root)
    if "net" in show:
        parts.append(_tcp_table(topology))
    if section == "irq":
        parts.append(_irq_table(topology))
    if section == "storage" and topology.mounts:
        parts.append(_mount_table(topology))
    return Group(*parts)


# -- NUMA ------------------------------------------------------------------------------------


def _numa_branch(root: Tree, topology: Topology) -> None:
    for node in topology.of_type(NumaNode):
        cpus = f"CPUs {cpulist(node.cpus)}" if node.cpus else "no CPUs (memory only)"
        label = Text.assemble((f"NUMA node {node.os_index}", "bold green"), f"  {cpus}")
        cores = _cpu_summary(topology, node)
        if cores:
            label.append(f"  {cores}")
        if node.memory_bytes:
            label.append(f"  {human_bytes(node.memory_bytes)}")
        if len(node.distances) > 1:
            label.append(f"  distances {' '.join(map(str, node.distances))}", style="dim")
        branch = root.add(label)
        for child in topology.children(node.id):
            if isinstance(child, DaxDevice):
                branch.add(_dax_label(child))
            elif isinstance(child, BlockDevice) and child.partition is None:
                branch.add(_block_label(topology, child))
    cpu = topology.cpu
    if cpu.model_name or cpu.governors:
        label = Text(f"CPU {cpu.model_name or '?'}", style="dim")
        if cpu.governors:
            label.append(f"  governor {cpu.governor or 'mixed'}")
        root.add(label)


def _cpu_summary(topology: Topology, node: NumaNode) -> str | None:
    """'socket 0, 8 cores, 16 threads': what lstopo draws for a node's CPUs, in words."""
    places = {place.cpu: place for place in topology.cpu.places}
    mine = [places[cpu] for cpu in node.cpus if cpu in places]
    if not mine or len(mine) < len(node.cpus):
        return None
    parts = []
    packages = {place.package for place in mine}
    sockets = {place.socket for place in mine}
    if None not in packages:
        if None not in sockets and len(sockets) == len(packages):
            word = "socket" if len(sockets) == 1 else "sockets"
            parts.append(f"{word} {cpulist(s for s in sockets if s is not None)}")
        else:
            parts.append(_count(len(packages), "socket"))
    cores = {place.core for place in mine}
    if None not in cores:
        parts.append(_count(len(cores), "core"))
    parts.append(_count(len(mine), "thread"))
    return ", ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _dax_label(dev: DaxDevice) -> Text:
    """A device-dax device: persistent memory mapped whole, or handed to the kernel as RAM."""
    label = Text.assemble((dev.name, "bold"), f"  {human_bytes(dev.size_bytes)}")
    if dev.driver == "kmem":
        node = "" if dev.target_node is None else f" of NUMA node {dev.target_node}"
        label.append(f"  persistent memory as system RAM{node} (kmem)")
    else:
        label.append("  persistent memory, devdax (character device)")
    return label


# -- PCI tree --------------------------------------------------------------------------------


def _pci_filter(topology: Topology, section: str | None) -> Callable[[Node], bool]:
    """Which nodes make a PCI branch worth showing in this section (lstopo's 'important' idea)."""

    def keep(node: Node) -> bool:
        if section == "pci":
            return isinstance(node, PciFunction)
        if section == "storage":
            return isinstance(node, BlockDevice) or (
                isinstance(node, PciFunction) and node.is_storage_controller
            )
        if section == "net":
            return isinstance(node, NetDevice) or (
                isinstance(node, PciFunction) and node.is_network_controller
            )
        return isinstance(node, (BlockDevice, NetDevice)) or (
            isinstance(node, PciFunction) and _important(node)
        )

    return keep


# The PCI classes lstopo shows by default (hwloc's "important" filter): storage, network,
# display, processors and co-processors, fibre channel, InfiniBand, CXL memory, accelerators;
# and anything unclassified or of unknown class. Bridges show as the path to these.
_IMPORTANT_BASES = frozenset((0x00, 0x01, 0x02, 0x03, 0x0B, 0x12))
_IMPORTANT_CLASSES = frozenset((0x0C04, 0x0C06, 0x0502))


def _important(fn: PciFunction) -> bool:
    if fn.class_code is None:
        return True
    return fn.base_class in _IMPORTANT_BASES or fn.class_code >> 8 in _IMPORTANT_CLASSES


def _pci_children(
    branch: Tree, topology: Topology, parent: str, keep: Callable[[Node], bool], section: str | None
) -> None:
    trees = {-1: branch}  # the last tree drawn at each depth
    for depth, node in walk.branch(topology, parent, keep, partitions=section == "storage"):
        sub = trees[depth - 1].add(_label(topology, node))
        if isinstance(node, PciFunction) and section in (None, "irq"):
            irq_line = _irq_summary(topology.irqs_of(node.address))
            if irq_line is not None:
                sub.add(irq_line)
        trees[depth] = sub


def _label(topology: Topology, node: Node) -> Text:
    if isinstance(node, PciFunction):
        return _pci_label(topology, node)
    if isinstance(node, StoragePort):
        return Text(f"{node.name} ({node.kind.replace('_', ' ')})", style="dim")
    if isinstance(node, BlockDevice):
        return _block_label(topology, node)
    if isinstance(node, NetDevice):
        return _net_label(node)
    return Text(node.name)


def _pci_label(topology: Topology, fn: PciFunction) -> Text:
    kind = pci_class_name(fn.class_code) if fn.class_code is not None else "?"
    style = "bold" if fn.is_storage_controller or fn.is_network_controller else ""
    label = Text.assemble((fn.address, "cyan"), " ", (kind, style))
    if fn.vendor_id is None or fn.device_id is None:
        label.append(" (vendor and device ids not readable)", style="dim")
    else:
        label.append(f" [{fn.vendor_id:04x}:{fn.device_id:04x}]", style="dim")
    if fn.vendor_name or fn.device_name:
        label.append(f" {fn.vendor_name or ''} {fn.device_name or ''}".rstrip())
    if fn.driver:
        label.append(f"  driver {fn.driver}", style="dim")
    where = _placement(fn)
    if where:
        label.append(f"  {where}", style="dim")
    link = fn.link
    if link is not None and link.width:
        text = f"  x{link.width} {link.speed_gts or '?'} GT/s = {human_rate(link.usable_mbps)}"
        if link.downtrained:
            text += f" (capable x{link.max_width} {link.max_speed_gts} GT/s)"
            label.append(text, style="bold yellow")
        else:
            label.append(text, style="magenta")
    numa = topology.numa_node_of(fn.id)
    if numa is not None and len(topology.of_type(NumaNode)) > 1:
        label.append(f"  node {numa}", style="green")
    return label


def _placement(fn: PciFunction) -> str | None:
    """Where the firmware says the function is: its slot, or on the board, with its label."""
    name = f" '{fn.label}'" if fn.label else ""
    if fn.slot is not None:
        return f"slot {fn.slot}{name}"
    if fn.onboard_index is not None:
        return f"on board{name}"
    return name.strip() or None


def _block_label(topology: Topology, dev: BlockDevice) -> Text:
    label = Text.assemble((dev.name, "bold"), f"  {human_bytes(dev.size_bytes)}")
    medium = _medium(dev)
    if medium:
        label.append(f"  {medium}")
    if dev.model:
        label.append(f"  {dev.model}", style="dim")
    queue = dev.queue
    if queue is not None:
        settings = (
            ("sched", queue.scheduler, ""),
            ("ra", queue.read_ahead_kb, "K"),
            ("nr", queue.nr_requests, ""),
            ("max", queue.max_sectors_kb, "K"),
        )
        shown = [f"{key} {value}{unit}" for key, value, unit in settings if value is not None]
        if shown:
            label.append("  " + " ".join(shown), style="blue")
    if dev.partition is not None and dev.partition.start_bytes is not None:
        label.append(f"  starts at {dev.partition.start_bytes} B")
    lower = topology.lower_devices(dev.name)
    if lower and dev.partition is None:
        label.append(f"  on {', '.join(lower)}", style="yellow")
    mount = topology.mount_of(dev.name)
    if mount is not None:
        label.append(f"  {mount.fstype} {mount.mountpoint}", style="green")
    return label


# SCSI CD-ROM (sr) is major 11; its queue says rotational, but it is no hard disk.
_OPTICAL_MAJOR = 11


def _medium(dev: BlockDevice) -> str | None:
    """HDD or SSD from the queue's rotational flag, except where that flag misleads."""
    if dev.major == _OPTICAL_MAJOR or dev.name.startswith("sr"):
        return "optical"
    if dev.pmem_mode is not None:
        return f"persistent memory, {dev.pmem_mode}"
    if dev.name.startswith(("pmem", "dax")):
        return "persistent memory"
    if dev.rotational is None:
        return None
    return "HDD" if dev.rotational else "SSD"


def _net_label(nic: NetDevice) -> Text:
    label = Text(nic.name, style="bold")
    if nic.mtu:
        label.append(f"  mtu {nic.mtu}")
    if nic.speed_mbps:
        label.append(f"  {nic.speed_mbps} Mb/s")
    queues = [f"{kind} {n}" for kind, n in (("rx", nic.rx_queues), ("tx", nic.tx_queues)) if n]
    if queues:
        label.append(f"  queues {' '.join(queues)}", style="dim")
    if nic.driver:
        label.append(f"  driver {nic.driver}", style="dim")
    if not (nic.mtu or nic.speed_mbps or queues or nic.driver):
        label.append("  (no attributes readable)", style="dim")
    return label


def _irq_summary(irqs: list[Irq]) -> Text | None:
    if not irqs:
        return None
    landed: set[int] = set()
    for irq in irqs:
        busy = {cpu for cpu, count in enumerate(irq.counts) if count}
        landed |= busy or set(irq.cpus)
    text = f"IRQs {cpulist(i.irq for i in irqs)}"
    if landed:  # a capture without /proc/irq cannot say where they land
        text += f" -> CPU {cpulist(landed)}"
    return Text(text, style="dim italic")


# -- devices outside the PCI tree ------------------------------------------------------------


def _virtual_block(root: Tree, topology: Topology, *, local_too: bool) -> None:
    # Size 0 is an unbound loop device or an unconfigured zram/ram disk: a free slot, not storage.
    virtual = [
        d
        for d in topology.of_type(BlockDevice)
        if topology.pci_function_of(d.id) is None and d.partition is None and d.size_bytes
    ]
    if not local_too:
        virtual = [d for d in virtual if not isinstance(topology.node(d.parent or ""), NumaNode)]
    if virtual:
        branch = root.add(Text("Block devices outside PCI", style="bold cyan"))
        for dev in virtual:
            label = _block_label(topology, dev)
            node = topology.node(dev.parent or "")
            if isinstance(node, NumaNode):
                label.append(f"  node {node.os_index}", style="green")
            branch.add(label)


def _virtual_net(root: Tree, topology: Topology) -> None:
    virtual = [n for n in topology.of_type(NetDevice) if topology.pci_function_of(n.id) is None]
    if virtual:
        branch = root.add(Text("Network interfaces outside PCI", style="bold cyan"))
        for nic in virtual:
            branch.add(_net_label(nic))


def _tcp_table(topology: Topology) -> RenderableType:
    tcp = topology.tcp
    rows = [
        ("net.ipv4.tcp_rmem", " ".join(map(str, tcp.tcp_rmem)) if tcp.tcp_rmem else None),
        ("net.ipv4.tcp_wmem", " ".join(map(str, tcp.tcp_wmem)) if tcp.tcp_wmem else None),
        ("net.core.rmem_max", _size_and_bytes(tcp.rmem_max)),
        ("net.core.wmem_max", _size_and_bytes(tcp.wmem_max)),
        ("net.ipv4.tcp_congestion_control", tcp.congestion_control),
        ("available", " ".join(tcp.available_congestion_control) or None),
        ("net.core.default_qdisc", tcp.default_qdisc),
    ]
    known = [(key, value) for key, value in rows if value is not None]
    if not known:
        return Text("TCP settings: not readable here (no /proc/sys/net in this root)", style="dim")
    width = max(len(key) for key, _ in known) + 2
    lines = [Text("TCP", style="bold")]
    lines += [Text(f"  {key:<{width}}{value}") for key, value in known]
    return Group(*lines)


def _size_and_bytes(value: int | None) -> str | None:
    """212992 -> '212992 (208.0 KiB)': the exact figure sysctl takes, and its size."""
    return None if value is None else f"{value} ({human_bytes(value)})"


def _irq_table(topology: Topology) -> Table:
    table = Table(title="Interrupts", title_justify="left")
    for column in ("IRQ", "name", "device", "affinity", "effective", "counts by CPU"):
        table.add_column(column)
    for irq in topology.irqs:
        counts = " ".join(f"{cpu}:{n}" for cpu, n in enumerate(irq.counts) if n)
        table.add_row(
            *plain_cells(
                str(irq.irq),
                irq.name,
                irq.device or "",
                cpulist(irq.affinity),
                cpulist(irq.effective_affinity),
                counts,
            )
        )
    return table


def _mount_table(topology: Topology) -> Table:
    table = Table(title="Mounts of block devices", title_justify="left")
    for column in ("device", "mountpoint", "type", "options"):
        table.add_column(column)
    for mount in topology.mounts:
        if mount.kname is not None:
            table.add_row(
                *plain_cells(mount.kname, mount.mountpoint, mount.fstype, ",".join(mount.options))
            )
    return table
