"""The probe tree's words for devices: what an I/O engineer reads at a glance."""

from __future__ import annotations

import io

from rich.console import Console

from probes.ids import MACHINE_ID, block_id
from tuner.topology import BlockDevice, Machine, NumaNode, Topology
from tuner.topology_view import render_topology

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
