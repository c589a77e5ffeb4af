"""Interrupt facts: which CPUs a controller's vectors land on, and whether they stay on its node.

Where a vector lands is read, in order of trust, from its per-CPU counts in /proc/interrupts
(where it did fire), its effective affinity (where the kernel routes it now), or its affinity
mask (where it may go). Counts accumulate since boot, so a vector moved recently still shows
its old CPUs; that is still where the work went.
"""

from __future__ import annotations

from collections.abc import Iterable

from tuner.facts.index import TopologyIndex
from tuner.facts.pci import controllers_with_roles
from tuner.facts.target import Target
from tuner.topology.model import Irq, PciFunction

KIND = "irq_device"


def landing_cpus(irq: Irq) -> tuple[int, ...]:
    """The CPUs a vector lands on: those that counted it, else its (effective) affinity."""
    fired = tuple(cpu for cpu, count in enumerate(irq.counts) if count > 0)
    return fired or irq.cpus


def cpu_list(cpus: Iterable[int]) -> str:
    """A kernel-style CPU list: (0, 1, 2, 3, 8) -> "0-3,8"."""
    ordered = sorted(set(cpus))
    ranges: list[str] = []
    first = 0
    for index, cpu in enumerate(ordered):
        last = index + 1 == len(ordered) or ordered[index + 1] != cpu + 1
        if last:
            start = ordered[first]
            ranges.append(str(cpu) if start == cpu else f"{start}-{cpu}")
            first = index + 1
    return ",".join(ranges)


def is_off_node(irq: Irq, local_cpus: frozenset[int]) -> bool:
    """True when a vector mostly lands outside the local CPUs.

    With counts, "mostly" weighs each CPU by what it handled; without, every CPU it may land on
    must be remote (an affinity spanning both nodes is not called off-node).
    """
    if any(irq.counts):
        local = sum(count for cpu, count in enumerate(irq.counts) if cpu in local_cpus)
        return local * 2 < sum(irq.counts)
    cpus = landing_cpus(irq)
    return bool(cpus) and local_cpus.isdisjoint(cpus)


def working_vectors(irqs: list[Irq]) -> list[Irq]:
    """The vectors that carry the device's work: each with at least 1% of its counted interrupts.

    A config or admin vector that fired a handful of times beside one busy queue vector is not
    a second vector to spread; without counts every vector is taken to work.
    """
    total = sum(sum(irq.counts) for irq in irqs)
    if not total:
        return irqs
    return [irq for irq in irqs if sum(irq.counts) * 100 >= total]


def all_on_one_cpu(irqs: list[Irq], cpu_count: int) -> bool:
    """True when two or more working vectors all land on the same single CPU of several."""
    working = working_vectors(irqs)
    landing = {cpu for irq in working for cpu in landing_cpus(irq)}
    return len(working) >= 2 and len(landing) == 1 and cpu_count > 1


def irq_facts(ix: TopologyIndex, fn: PciFunction, role: str, irqs: list[Irq]) -> dict[str, object]:
    """The catalogue's facts of one PCI function's interrupts."""
    landing = {cpu for irq in irqs for cpu in landing_cpus(irq)}
    node = ix.numa_node(fn.id)
    local = frozenset(cpu for cpu, owner in ix.cpu_node.items() if owner == node)
    off_node: int | None = None
    if len(ix.numa) <= 1:
        off_node = 0
    elif node is not None and local:
        off_node = sum(1 for irq in irqs if is_off_node(irq, local))
    return {
        "name": fn.address,
        "role": role,
        "irq_count": len(irqs),
        "cpus_used": len(landing),
        "landing_cpus": cpu_list(landing),
        "all_on_one_cpu": all_on_one_cpu(irqs, ix.cpu_count),
        "local_node": node,
        "off_node_irqs": off_node,
        "node_count": len(ix.numa),
    }


def irq_device_targets(ix: TopologyIndex) -> list[Target]:
    """One target per storage or network controller that raises interrupts."""
    targets = []
    for fn, role in controllers_with_roles(ix):
        irqs = ix.topology.irqs_of(fn.address)
        if irqs:
            targets.append(Target(KIND, fn.address, irq_facts(ix, fn, role, irqs)))
    return targets
