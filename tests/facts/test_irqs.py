"""Interrupt facts: where a controller's vectors land, and whether they stay on its node."""

from __future__ import annotations

from tests.facts.model import RAID, SAS_HBA, Host, link
from tuner.facts import FactOptions, Target, collect
from tuner.facts.irqs import cpu_list, landing_cpus
from tuner.topology.model import Irq


def irq_devices(host: Host) -> dict[str, Target]:
    return {t.name: t for t in collect(host.build(), FactOptions())["irq_device"]}


def test_raid_controller_vectors_all_on_cpu0_by_counts() -> None:
    host = Host(cpus=8)
    host.function("0000:03:00.0", host.host_bridge(), RAID, link(8.0, 8))
    for n in range(8):
        # Affinity allows every CPU, but CPU0 did all the work.
        host.irq(
            100 + n, "0000:03:00.0", counts=(5000, 0, 0, 0, 0, 0, 0, 0), affinity=tuple(range(8))
        )
    facts = irq_devices(host)["0000:03:00.0"].facts
    assert facts["irq_count"] == 8
    assert (facts["cpus_used"], facts["landing_cpus"]) == (1, "0")
    assert facts["all_on_one_cpu"] is True
    assert facts["off_node_irqs"] == 0


def test_effective_affinity_when_nothing_was_counted() -> None:
    host = Host(cpus=8)
    host.function("0000:03:00.0", host.host_bridge(), RAID, link(8.0, 8))
    for n in range(4):
        host.irq(100 + n, "0000:03:00.0", effective=(0,), affinity=tuple(range(8)))
    assert irq_devices(host)["0000:03:00.0"].facts["all_on_one_cpu"] is True


def test_spread_vectors_and_one_busy_vector_are_not_all_on_one_cpu() -> None:
    host = Host(cpus=8)
    host.function("0000:03:00.0", host.host_bridge(), RAID, link(8.0, 8))
    for n in range(4):
        host.irq(100 + n, "0000:03:00.0", effective=(n,))
    host.function("0000:04:00.0", host.host_bridge("01"), RAID, link(8.0, 8))
    # A config vector that fired once beside one queue vector: nothing to spread.
    host.irq(200, "0000:04:00.0", counts=(0, 1), effective=(1,))
    host.irq(201, "0000:04:00.0", counts=(0, 90000), effective=(1,))
    found = irq_devices(host)
    assert found["0000:03:00.0"].facts["all_on_one_cpu"] is False
    assert found["0000:03:00.0"].facts["landing_cpus"] == "0-3"
    assert found["0000:04:00.0"].facts["all_on_one_cpu"] is False


def test_hba_on_node1_with_every_vector_on_node0() -> None:
    host = Host(cpus=8, numa_nodes=2)
    host.function("0000:81:00.0", host.host_bridge("80"), SAS_HBA, link(8.0, 8), numa_node=1)
    for n in range(6):
        host.irq(100 + n, "0000:81:00.0", effective=(n % 4,), affinity=(0, 1, 2, 3))
    facts = irq_devices(host)["0000:81:00.0"].facts
    assert facts["local_node"] == 1
    assert facts["off_node_irqs"] == facts["irq_count"] == 6
    assert facts["node_count"] == 2


def test_off_node_by_counts_weighs_where_the_work_went() -> None:
    host = Host(cpus=8, numa_nodes=2)
    host.function("0000:81:00.0", host.host_bridge("80"), SAS_HBA, link(8.0, 8), numa_node=1)
    host.irq(100, "0000:81:00.0", counts=(900, 0, 0, 0, 10, 0, 0, 0))  # mostly node 0
    host.irq(101, "0000:81:00.0", counts=(10, 0, 0, 0, 900, 0, 0, 0))  # mostly node 1
    assert irq_devices(host)["0000:81:00.0"].facts["off_node_irqs"] == 1


def test_unknown_node_leaves_off_node_unknown() -> None:
    host = Host(cpus=8, numa_nodes=2)
    host.function("0000:81:00.0", host.host_bridge("80"), SAS_HBA, link(8.0, 8))
    host.irq(100, "0000:81:00.0", effective=(0,))
    assert irq_devices(host)["0000:81:00.0"].facts["off_node_irqs"] is None


def test_landing_cpus_and_cpu_lists() -> None:
    assert landing_cpus(Irq(1, "x", counts=(0, 3, 0, 4), effective_affinity=(0,))) == (1, 3)
    assert landing_cpus(Irq(1, "x", counts=(0, 0), effective_affinity=(1,), affinity=(0, 1))) == (
        1,
    )
    assert landing_cpus(Irq(1, "x", affinity=(0, 1))) == (0, 1)
    assert cpu_list([8, 0, 1, 2, 3, 10, 11]) == "0-3,8,10-11"
    assert cpu_list([]) == ""
