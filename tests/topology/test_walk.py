"""The one walk both drawings of the tree take: every node that leads to a wanted one, each
before its children, partitions only when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.synthetic_host import Shape, build
from probes.host import probe_host
from probes.hostfs import HostFS
from tuner.topology.model import BlockDevice, Node, PciHostBridge, Topology
from tuner.topology.walk import branch, descendants


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Topology:
    root: Path = build(tmp_path_factory.mktemp("walk") / "host", Shape(disks=6, controllers=2))
    return probe_host(HostFS(root))


def disks(node: Node) -> bool:
    return isinstance(node, BlockDevice)


def test_each_node_comes_before_its_children_and_leads_to_a_wanted_one(host: Topology) -> None:
    bridge = host.of_type(PciHostBridge)[0]
    rows = list(branch(host, bridge.id, disks))
    assert rows, "the synthetic host has disks under its first bridge"
    depth_of: dict[str | None, int] = {bridge.id: -1}
    for depth, node in rows:
        assert node.parent in depth_of, f"{node.id} drawn before its parent"
        assert depth == depth_of[node.parent] + 1
        depth_of[node.id] = depth
        assert disks(node) or any(disks(n) for n in descendants(host, node.id))
    names = {node.name for _, node in rows if isinstance(node, BlockDevice)}
    assert names and not any(host.block_device(n).partition for n in names)  # type: ignore[union-attr]


def test_partitions_only_when_asked(host: Topology) -> None:
    bridge = host.of_type(PciHostBridge)[0]
    with_parts = [n for _, n in branch(host, bridge.id, disks, partitions=True)]
    assert any(isinstance(n, BlockDevice) and n.partition is not None for n in with_parts)
