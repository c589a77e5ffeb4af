"""The probe tree's words for devices: what an I/O engineer reads at a glance."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from probes.ids import MACHINE_ID, block_id
from tuner.topology.model import (
    BlockDevice,
    CpuInfo,
    CpuPlace,
    DaxDevice,
    Machine,
    NumaNode,
    Topology,
)
from tuner.topology.view import render_topology

GIB = 1 << 30


def tree_text(topology: Topology) -> str:
    out = io.StringIO()
    Console(width=120, file=out).print(render_topology(topology))
    return out.getvalue()


def disk(name: str, major: int, rotational: bool) -> BlockDevice:
    return BlockDevice(id=block_id(name), parent=MACHINE_ID, name=name, major=major,
                       size_bytes=4 * GIB, rotational=rotational)  # fmt: skip


def test_media_are_named_for_what_they_are() -> None:
    nodes = (
        Machine(id=MACHINE_ID, parent=None, name="box"),
        NumaNode(id="numa:1", parent=MACHINE_ID, name="node1", os_index=1, memory_bytes=GIB),
        disk("sr0", 11, True),  # the kernel calls an optical drive rotational
        disk("pmem0", 259, False),
        disk("sdb", 8, True),
        disk("nvme0n1", 259, False),
    )
    lines = tree_text(Topology(root="/", nodes=nodes)).splitlines()
    shown = {line.split()[1]: line for line in lines if len(line.split()) > 1}
    assert "optical" in shown["sr0"] and "HDD" not in shown["sr0"]
    assert "persistent memory" in shown["pmem0"] and "SSD" not in shown["pmem0"]
    assert "HDD" in shown["sdb"] and "SSD" in shown["nvme0n1"]
    assert any("NUMA node 1  no CPUs (memory only)" in line for line in lines)


def test_numa_nodes_show_their_sockets_cores_threads_and_persistent_memory() -> None:
    # Node 0: socket 0, 2 cores of 2 threads; node 1 has no topology files; pmem on node 0.
    places = tuple(CpuPlace(cpu, core=cpu - cpu % 2, package=0, socket=0) for cpu in range(4))
    nodes = (
        Machine(id=MACHINE_ID, parent=None, name="box"),
        NumaNode(id="numa:0", parent=MACHINE_ID, name="node0", os_index=0, cpus=(0, 1, 2, 3)),
        NumaNode(id="numa:1", parent=MACHINE_ID, name="node1", os_index=1, cpus=(4, 5)),
        replace(disk("pmem0.1", 259, False), parent="numa:0", pmem_mode="fsdax"),
        replace(disk("pmem0.2s", 259, False), parent="numa:0", pmem_mode="sector"),
        DaxDevice(id="dax:dax0.0", parent="numa:0", name="dax0.0", size_bytes=GIB,
                  driver="device_dax", target_node=4),
        DaxDevice(id="dax:dax0.1", parent="numa:0", name="dax0.1", size_bytes=GIB,
                  driver="kmem", target_node=4),
    )  # fmt: skip
    cpu = CpuInfo(online=tuple(range(6)), places=places)
    lines = tree_text(Topology(root="/", nodes=nodes, cpu=cpu)).splitlines()
    node0 = next(i for i, line in enumerate(lines) if "NUMA node 0" in line)
    assert "CPUs 0-3  socket 0, 2 cores, 4 threads" in lines[node0]
    assert "NUMA node 1  CPUs 4-5" in lines[node0 + 5] and "socket" not in lines[node0 + 5]
    below = lines[node0 + 1 : node0 + 5]
    assert "pmem0.1  4.0 GiB  persistent memory, fsdax" in below[0]
    assert "pmem0.2s  4.0 GiB  persistent memory, sector" in below[1]
    assert "dax0.0  1.0 GiB  persistent memory, devdax" in below[2]
    assert "dax0.1  1.0 GiB  persistent memory as system RAM of NUMA node 4 (kmem)" in below[3]
    assert not any("outside PCI" in line for line in lines)


def test_captured_names_in_the_tables_are_text_not_markup() -> None:
    # A mount point, an IRQ's name and a model are the capture's: `[/]` in one was a
    # MarkupError in the mount and IRQ tables, and `[red]` vanished (issue 27).
    from tuner.topology.model import Irq, Mount

    nodes = (
        Machine(id=MACHINE_ID, parent=None, name="box[/]"),
        replace(disk("sda", 8, True), model="M[red]X[/red]"),
    )
    topology = Topology(
        root="/", nodes=nodes,
        mounts=(Mount(device="/dev/sda", mountpoint="/mnt/[/]x", fstype="ext4",
                      options=("rw", "[bold]"), kname="sda"),),
        irqs=(Irq(irq=30, name="nvme0q0 [/]", device="[red]0000:01:00.0"),),
    )  # fmt: skip
    for section in ("storage", "irq"):
        out = io.StringIO()
        Console(width=200, file=out).print(render_topology(topology, section))
        text = out.getvalue()
        if section == "storage":
            assert "/mnt/[/]x" in text and "rw,[bold]" in text and "M[red]X[/red]" in text
        else:
            assert "nvme0q0 [/]" in text and "[red]0000:01:00.0" in text
