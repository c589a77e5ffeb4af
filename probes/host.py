"""Run every probe over one HostFS and assemble the Topology."""

from __future__ import annotations

import dataclasses
import socket

from probes.cpu import probe_cpu
from probes.hostfs import HostFS
from probes.ids import MACHINE_ID
from probes.irq import probe_irqs
from probes.net import probe_net
from probes.numa import memtotal_bytes, probe_numa
from probes.pci import probe_pci
from probes.pmem import probe_dax
from probes.printable import printable
from probes.storage import probe_storage
from probes.vm import probe_vm
from tuner.topology.model import Machine, Node, Topology


def probe_host(fs: HostFS) -> Topology:
    """Probe everything the root shows; unreadable parts become warnings, never exceptions."""
    numa = probe_numa(fs)
    pci = probe_pci(fs)
    storage = probe_storage(fs)
    nics, tcp = probe_net(fs)
    irqs = probe_irqs(fs)
    cpu = probe_cpu(fs)
    machine = Machine(
        id=MACHINE_ID,
        parent=None,
        name=_hostname(fs),
        hostname=_hostname(fs),
        memory_bytes=memtotal_bytes(fs, "proc/meminfo"),
        kernel=fs.read("proc/sys/kernel/osrelease"),
    )
    dax = probe_dax(fs)
    nodes = _attach_orphans(fs, [machine, *numa, *pci, *storage.nodes, *nics, *dax])
    topology = Topology(
        root=str(fs.root),
        nodes=tuple(nodes),
        edges=tuple(storage.edges),
        mounts=tuple(storage.mounts),
        filesystems=tuple(storage.filesystems),
        irqs=tuple(irqs),
        cpu=cpu,
        tcp=tcp,
        vm=probe_vm(fs),
    )
    if fs.is_live:
        from probes.live import enrich_live

        topology = enrich_live(topology, fs)
    return dataclasses.replace(topology, warnings=tuple(fs.warnings))


def _hostname(fs: HostFS) -> str:
    # Read through fs on the live host too, so a capture (probe --gather) carries the name.
    name = fs.read("proc/sys/kernel/hostname")
    if fs.is_live:
        name = name or socket.gethostname()
    else:
        name = name or fs.read("etc/hostname") or fs.root.name
    # One line: a newline in a captured name would land on a line of its own in every file
    # and terminal the name reaches (HostFS.read keeps a file's newlines).
    return printable(name)


def _attach_orphans(fs: HostFS, nodes: list[Node]) -> list[Node]:
    """Hang nodes whose parent no probe found (a dangling link, a missing bridge) on the machine."""
    ids = {node.id for node in nodes}
    fixed: list[Node] = []
    seen: set[str] = set()
    for node in nodes:
        if node.id in seen:
            fs.warn(f"{node.id}: found twice; keeping the first")
            continue
        seen.add(node.id)
        if node.parent is not None and node.parent not in ids:
            fs.warn(f"{node.id}: parent {node.parent} not found; attached to the machine")
            node = dataclasses.replace(node, parent=MACHINE_ID)
        fixed.append(node)
    return fixed
