"""Walking the topology tree: what lies below a node, and the branches worth showing.

The terminal tree (`iotuner probe`, tuner/topology/view.py) and the report's diagram
(tuner/report/diagram.py) draw the same PCI paths, each with its own idea of which nodes matter
(lstopo's "important" filter): both take their rows from `branch`. A tune places its settings
along a storage stack with `reads_enter` and `queues_below`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from tuner.topology.model import BlockDevice, Node, Topology


def descendants(topology: Topology, node_id: str) -> list[Node]:
    """Every node below `node_id`, at any depth."""
    found: list[Node] = []
    stack = list(topology.children(node_id))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(topology.children(node.id))
    return found


def leads_to(topology: Topology, node: Node, keep: Callable[[Node], bool]) -> bool:
    """True when `node`, or a node below it, is one `keep` wants shown."""
    return keep(node) or any(keep(n) for n in descendants(topology, node.id))


def branch(
    topology: Topology,
    parent_id: str,
    keep: Callable[[Node], bool],
    *,
    depth: int = 0,
    partitions: bool = False,
) -> Iterator[tuple[int, Node]]:
    """(depth, node) for the nodes below `parent_id` that `keep` wants or that lead to one,
    depth-first with each node before its children (a drawer hangs a node under the last one
    yielded one level up). Partitions are left out unless asked for."""
    for node in topology.children(parent_id):
        if isinstance(node, BlockDevice) and node.partition is not None and not partitions:
            continue
        if not leads_to(topology, node, keep):
            continue
        yield depth, node
        yield from branch(topology, node.id, keep, depth=depth + 1, partitions=partitions)


QUEUE_EDGES = frozenset(("partition", "member", "dm"))
"""Stack edges a request goes down: a partition's to its disk, an array's or a dm volume's to
its members. Not "loop": a loop device's backing file is read through a file system, so the
loop device's own queue is the one its requests wait in."""


def reads_enter(topology: Topology, name: str) -> str:
    """The device whose readahead window reads entering at `name` use: a partition's disk
    (it has no queue of its own), else `name` itself."""
    for edge in topology.edges:
        if edge.upper == name and edge.kind == "partition":
            return edge.lower
    return name


def queues_below(topology: Topology, name: str) -> list[str]:
    """The devices whose request queues I/O entering at `name` waits in: the bottom of its
    stack (the disks under an md array's partitions, under a dm volume), or `name` itself when
    nothing sits below it (a plain disk, a loop device over a file). Each once, in edge order."""
    found: list[str] = []
    seen: set[str] = set()

    def down(device: str) -> None:
        if device in seen:
            return
        seen.add(device)
        lower = [e.lower for e in topology.edges if e.upper == device and e.kind in QUEUE_EDGES]
        if not lower:
            found.append(device)
        for below in lower:
            down(below)

    down(name)
    return found
