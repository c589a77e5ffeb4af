"""The topology as an inline SVG: the PCI tree down to disks and NICs, coloured by findings.

An indented tree (one row per node, like lstopo's text view but drawn) rather than a layered
graph: it stays readable from a laptop to a 100-disk server, and needs no layout library.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from probes.pci import pci_class_name
from probes.printable import html_text as escape
from tuner.rules.model import Finding
from tuner.topology.model import (
    BlockDevice,
    Machine,
    NetDevice,
    Node,
    NumaNode,
    PciFunction,
    PciHostBridge,
    StoragePort,
    Topology,
)
from tuner.topology.walk import branch, descendants
from tuner.units import cpulist, human_bytes, human_rate

SEVERITY_ORDER = ("critical", "warning", "info")
SEVERITY_FILL = {"critical": "#f8b4b4", "warning": "#fde68a", "info": "#bfdbfe", None: "#f3f4f6"}
SEVERITY_STROKE = {"critical": "#b91c1c", "warning": "#b45309", "info": "#1d4ed8", None: "#9ca3af"}

_ROW = 26  # px per node row
_INDENT = 28  # px per tree level
_CHAR = 7.3  # px per character of the 12 px monospace font the labels use
_PAD = 8


@dataclass(frozen=True)
class Row:
    """One drawn node: its depth in the tree, its label and the worst finding on it."""

    depth: int
    label: str
    severity: str | None
    parent_row: int | None


def worst(severities: Iterable[str | None]) -> str | None:
    """The most severe of `severities` (critical > warning > info), None when there is none."""
    present = set(severities)
    return next((s for s in SEVERITY_ORDER if s in present), None)


def severity_by_target(findings: Iterable[Finding]) -> dict[str, str]:
    """Each finding target (device name, PCI address, port, host) with its worst severity."""
    found: dict[str, list[str]] = {}
    for finding in findings:
        found.setdefault(finding.target, []).append(finding.severity)
    return {target: worst(sevs) or "info" for target, sevs in found.items()}


def topology_rows(topology: Topology, severities: dict[str, str]) -> list[Row]:
    """The nodes worth drawing, depth-first: storage and network paths, then virtual devices."""
    rows: list[Row] = []

    def severity_of(node: Node) -> str | None:
        keys = [node.name, node.id]
        if isinstance(node, PciFunction):
            keys.append(node.address)
        return worst(severities.get(key) for key in keys)

    def add(depth: int, label: str, severity: str | None, parent: int | None) -> int:
        rows.append(Row(depth, label, severity, parent))
        return len(rows) - 1

    machine = next(iter(topology.of_type(Machine)), None)
    name = machine.name if machine else "host"
    title = f"Machine {name}"
    if topology.cpu.online:
        title += f"  {len(topology.cpu.online)} CPUs"
    if machine and machine.memory_bytes:
        title += f"  {human_bytes(machine.memory_bytes)}"
    top = add(0, title, worst([severities.get(name)]), None)
    for numa in topology.of_type(NumaNode):
        add(1, f"NUMA node {numa.os_index}  CPUs {cpulist(numa.cpus)}", None, top)
    for bridge in topology.of_type(PciHostBridge):
        if any(_important(n) for n in descendants(topology, bridge.id)):
            rows_at = {1: add(1, f"PCI {bridge.domain}:{bridge.bus}", severity_of(bridge), top)}
            for depth, node in branch(topology, bridge.id, _important, depth=2):
                label = node_label(topology, node)
                rows_at[depth] = add(depth, label, severity_of(node), rows_at[depth - 1])
    # Size 0 is an unbound loop device or an unconfigured ram disk: a free slot, not storage.
    virtual = [
        d
        for d in topology.of_type(BlockDevice)
        if topology.pci_function_of(d.id) is None and d.partition is None and d.size_bytes
    ]
    if virtual:
        group = add(1, "Block devices outside PCI", None, top)
        # A device stacked on another of these (the lab's disks on their bus, md over loops)
        # hangs under the first device it sits on, so shared paths show as a subtree.
        names = {d.name for d in virtual}
        placed: set[str] = set()

        def stack(dev: BlockDevice, depth: int, parent: int) -> None:
            placed.add(dev.name)
            index = add(depth, node_label(topology, dev), severity_of(dev), parent)
            for upper in virtual:
                lower = [n for n in topology.lower_devices(upper.name) if n in names]
                if lower[:1] == [dev.name] and upper.name not in placed:
                    stack(upper, depth + 1, index)

        for dev in virtual:
            if dev.name not in placed and not any(
                n in names for n in topology.lower_devices(dev.name)
            ):
                stack(dev, 2, group)
        for dev in virtual:  # stacked in a cycle (cannot happen, but never drop a device)
            if dev.name not in placed:
                stack(dev, 2, group)
    nics = [n for n in topology.of_type(NetDevice) if topology.pci_function_of(n.id) is None]
    if nics:
        group = add(1, "Network interfaces outside PCI", None, top)
        for nic in nics:
            add(2, node_label(topology, nic), severity_of(nic), group)
    return rows


def node_label(topology: Topology, node: Node) -> str:
    """A one-line label: what the node is, with its link speed or size."""
    if isinstance(node, PciFunction):
        kind = pci_class_name(node.class_code) if node.class_code is not None else "?"
        label = f"{node.address} {kind}"
        if node.driver:
            label += f" ({node.driver})"
        link = node.link
        if link is not None and link.width:
            label += (
                f"  x{link.width} {link.speed_gts or '?'} GT/s = {human_rate(link.usable_mbps)}"
            )
            if link.downtrained:
                label += f" (capable x{link.max_width} {link.max_speed_gts} GT/s)"
        return label
    if isinstance(node, StoragePort):
        label = f"{node.name} ({node.kind.replace('_', ' ')})"
        if node.link_gbps:
            label += f"  {node.lanes or 1} x {node.link_gbps:g} Gb/s"
        return label
    if isinstance(node, BlockDevice):
        label = f"{node.name}  {human_bytes(node.size_bytes)}"
        if node.rotational is not None:
            label += "  HDD" if node.rotational else "  SSD"
        lower = topology.lower_devices(node.name)
        if lower:
            label += f"  on {', '.join(lower)}"
        return label
    if isinstance(node, NetDevice):
        label = f"{node.name}  mtu {node.mtu or '?'}"
        if node.speed_mbps:
            label += f"  {node.speed_mbps} Mb/s"
        return label
    return node.name


def render_svg(rows: list[Row]) -> str:
    """The rows as an SVG document: boxes, connectors and a severity legend."""
    legend_h = 30
    width = max((r.depth * _INDENT + len(r.label) * _CHAR + 3 * _PAD for r in rows), default=300)
    width = max(width, 520)
    height = len(rows) * _ROW + legend_h + _PAD
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" font-family="DejaVu Sans Mono, monospace" '
        'font-size="12" role="img" aria-label="I/O topology">'
    ]
    for index, row in enumerate(rows):
        x = _PAD + row.depth * _INDENT
        y = _PAD + index * _ROW
        if row.parent_row is not None:
            parent = rows[row.parent_row]
            px = _PAD + parent.depth * _INDENT + _INDENT / 2
            py = _PAD + row.parent_row * _ROW + _ROW - 6
            cy = y + (_ROW - 6) / 2
            parts.append(
                f'<path d="M{px:.0f} {py:.0f} V{cy:.0f} H{x}" fill="none" stroke="#9ca3af"/>'
            )
        box_w = len(row.label) * _CHAR + 2 * _PAD
        fill, stroke = SEVERITY_FILL[row.severity], SEVERITY_STROKE[row.severity]
        parts.append(
            f'<rect x="{x}" y="{y}" width="{box_w:.0f}" height="{_ROW - 6}" rx="4" '
            f'fill="{fill}" stroke="{stroke}"/>'
        )
        title = f"<title>{escape(row.severity)}</title>" if row.severity else ""
        parts.append(
            f'<text x="{x + _PAD}" y="{y + _ROW - 11}" fill="#111827">{title}'
            f"{escape(row.label)}</text>"
        )
    legend_y = height - legend_h + 6
    legend_x = float(_PAD)
    for severity in (*SEVERITY_ORDER, None):
        name = severity or "no finding"
        parts.append(
            f'<rect x="{legend_x:.0f}" y="{legend_y}" width="14" height="14" rx="3" '
            f'fill="{SEVERITY_FILL[severity]}" stroke="{SEVERITY_STROKE[severity]}"/>'
        )
        parts.append(f'<text x="{legend_x + 20:.0f}" y="{legend_y + 12}">{name}</text>')
        legend_x += 20 + len(name) * _CHAR + 24
    parts.append("</svg>")
    return "\n".join(parts)


def topology_svg(topology: Topology, findings: Iterable[Finding]) -> str:
    """The topology diagram of a probed host, nodes coloured by the worst finding on them."""
    return render_svg(topology_rows(topology, severity_by_target(findings)))


def _important(node: Node) -> bool:
    return isinstance(node, (BlockDevice, NetDevice)) or (
        isinstance(node, PciFunction) and (node.is_storage_controller or node.is_network_controller)
    )
