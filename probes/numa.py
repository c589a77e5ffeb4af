"""NUMA nodes: CPUs (`cpulist`, or `cpumap` on old kernels), local memory and distances.

Reads: sys/devices/system/node/node*/{cpulist,cpumap,meminfo,distance},
sys/devices/system/cpu/{online,present,cpuN/online}, proc/meminfo. A node's CPUs are the online
ones of its list.
"""

from __future__ import annotations

import re

from probes.hostfs import MAX_CPUS, HostFS, read_cpulist, read_cpumask
from tuner.topology.model import NumaNode

NODE_DIR = "sys/devices/system/node"
CPU_DIR = "sys/devices/system/cpu"
MACHINE_ID = "machine"
MAX_NODES = 1 << 10
"""NUMA node numbers run below this (the kernel's MAX_NUMNODES is at most 1024)."""
_NODE_NAME = re.compile(r"node([0-9]{1,4})$")
_CPU_NAME = re.compile(r"cpu([0-9]{1,5})")
_MEMTOTAL = re.compile(r"MemTotal:[ \t]+([0-9]+)[ \t]*kB")
MAX_MEMORY_BYTES = 1 << 60
"""More memory than any machine holds (1 EiB; x86-64's 5-level paging addresses 4 PiB): a larger
MemTotal is a corrupt capture, and an unbounded one overflowed the float the text view shows."""


def numa_id(os_index: int) -> str:
    """The tree id of NUMA node `os_index`."""
    return f"numa:{os_index}"


def cpu_dirs(fs: HostFS) -> frozenset[int]:
    """The CPUs that have a `cpuN` directory: only they can have files of their own to read
    (a capture's `cpu/online` may name 65,536 CPUs beside two directories; reading each one's
    files took over 10 s)."""
    return frozenset(
        int(m.group(1))
        for name in fs.listdir(CPU_DIR)
        if (m := _CPU_NAME.fullmatch(name)) and int(m.group(1)) < MAX_CPUS
    )


def online_cpus(fs: HostFS) -> tuple[int, ...]:
    """CPUs the kernel has online: `cpu/online` (else `present`, else the cpuN directories),
    without those whose own `cpuN/online` says 0 (a capture may lack `cpu/online`)."""
    listed: tuple[int, ...] = ()
    for attr in ("online", "present"):
        listed = read_cpulist(fs, f"{CPU_DIR}/{attr}") or ()
        if listed:
            break
    dirs = cpu_dirs(fs)
    if not listed:
        listed = tuple(sorted(dirs))
    return tuple(
        cpu for cpu in listed if cpu not in dirs or fs.read(f"{CPU_DIR}/cpu{cpu}/online") != "0"
    )


def memtotal_bytes(fs: HostFS, rel: str) -> int | None:
    """MemTotal from a meminfo file (the host's or a node's), in bytes."""
    text = fs.read(rel)
    if text is None:
        return None
    match = _MEMTOTAL.search(text)
    if match is None:
        fs.warn(f"{rel}: no MemTotal line")
        return None
    kib = match.group(1)
    size = int(kib) * 1024 if len(kib) <= 20 else None
    if size is None or size > MAX_MEMORY_BYTES:
        shown = kib if len(kib) <= 20 else kib[:20] + "..."
        fs.warn(f"{rel}: MemTotal {shown} kB is implausible (over 1 EiB); ignored")
        return None
    return size


def probe_numa(fs: HostFS) -> list[NumaNode]:
    """The machine's NUMA nodes; one node holding every CPU when the kernel shows none."""
    indexes = sorted(
        int(m.group(1))
        for name in fs.listdir(NODE_DIR)
        if (m := _NODE_NAME.match(name)) and int(m.group(1)) < MAX_NODES
    )
    online = frozenset(online_cpus(fs))
    nodes = [_read_node(fs, index, indexes, online) for index in indexes]
    if not nodes:
        return [_single_node(fs)]
    claimed = [cpu for node in nodes for cpu in node.cpus]
    if len(claimed) != len(set(claimed)):
        # A buggy BIOS can make every node claim every CPU (hwloc merges them the same way).
        fs.warn(
            f"{NODE_DIR}: {len(nodes)} NUMA nodes claim the same CPUs; treating the machine as "
            "one node"
        )
        return [_single_node(fs)]
    return nodes


def _read_node(fs: HostFS, index: int, all_indexes: list[int], online: frozenset[int]) -> NumaNode:
    base = f"{NODE_DIR}/node{index}"
    cpus = read_cpulist(fs, f"{base}/cpulist")
    if cpus is None:
        cpus = read_cpumask(fs, f"{base}/cpumap", expected=True)
    if cpus and online:
        # A node's list may keep its offline CPUs (cpuN/online 0): they run nothing.
        cpus = tuple(cpu for cpu in cpus if cpu in online)
    distances: tuple[int, ...] = ()
    text = fs.read(f"{base}/distance")
    if text is not None:
        try:
            distances = tuple(int(word) for word in text.split())
        except ValueError:
            fs.warn(f"{base}/distance: expected integers, got {text[:40]!r}")
        if distances and len(distances) != len(all_indexes):
            fs.warn(f"{base}/distance: {len(distances)} entries for {len(all_indexes)} nodes")
            distances = ()
    return NumaNode(
        id=numa_id(index),
        parent=MACHINE_ID,
        name=f"node{index}",
        os_index=index,
        cpus=cpus or (),
        memory_bytes=memtotal_bytes(fs, f"{base}/meminfo"),
        distances=distances,
    )


def _single_node(fs: HostFS) -> NumaNode:
    return NumaNode(
        id=numa_id(0),
        parent=MACHINE_ID,
        name="node0",
        os_index=0,
        cpus=online_cpus(fs),
        memory_bytes=memtotal_bytes(fs, "proc/meminfo"),
        distances=(10,),
    )
