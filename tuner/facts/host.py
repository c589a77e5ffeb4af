"""Host facts: CPUs and their governors, memory and writeback thresholds, TCP, controllers."""

from __future__ import annotations

from collections import Counter

from tuner.facts.index import TopologyIndex
from tuner.facts.network import bdp_bytes
from tuner.facts.target import FactOptions, Target
from tuner.topology.model import CpuInfo, VmSettings


def dirty_limit_bytes(
    set_bytes: int | None, ratio: int | None, memory_bytes: int | None
) -> int | None:
    """The effective threshold: the *_bytes setting when non-zero, else ratio % of memory.

    The kernel takes the ratio of dirtyable memory (free plus page cache), which is somewhat
    less than the total; the total is what the host can tell without running, and the gap
    does not change which side of a recommendation a setting falls on.
    """
    if set_bytes:
        return set_bytes
    if ratio is None or memory_bytes is None:
        return None
    return memory_bytes * ratio // 100


def governor_facts(cpu: CpuInfo) -> dict[str, object]:
    """The shared governor, how many CPUs do not run `performance`, and the governors in use."""
    names = sorted({gov for _, gov in cpu.governors})
    return {
        "governor": cpu.governor,
        "non_performance_cpus": sum(1 for _, gov in cpu.governors if gov != "performance"),
        "governors": ",".join(names),
    }


def vm_facts(vm: VmSettings, memory_bytes: int | None) -> dict[str, object]:
    """The vm.dirty_* settings and the thresholds in bytes they amount to."""
    return {
        "dirty_ratio": vm.dirty_ratio,
        "dirty_background_ratio": vm.dirty_background_ratio,
        "dirty_bytes": vm.dirty_bytes,
        "dirty_background_bytes": vm.dirty_background_bytes,
        "dirty_limit_bytes": dirty_limit_bytes(vm.dirty_bytes, vm.dirty_ratio, memory_bytes),
        "dirty_background_limit_bytes": dirty_limit_bytes(
            vm.dirty_background_bytes, vm.dirty_background_ratio, memory_bytes
        ),
        "dirty_expire_centisecs": vm.dirty_expire_centisecs,
    }


def tcp_facts(ix: TopologyIndex) -> dict[str, object]:
    """Socket buffer ceilings and congestion control.

    `bbr_available` reads tcp_available_congestion_control, which lists loaded algorithms
    only: False may still mean "modprobe tcp_bbr" away.
    """
    tcp = ix.topology.tcp
    available = tcp.available_congestion_control
    return {
        "tcp_rmem_max": tcp.tcp_rmem_max,
        "tcp_wmem_max": tcp.tcp_wmem_max,
        "rmem_max": tcp.rmem_max,
        "wmem_max": tcp.wmem_max,
        "congestion_control": tcp.congestion_control,
        "available_congestion_control": ",".join(available) if available else None,
        "bbr_available": "bbr" in available if available else None,
        "default_qdisc": tcp.default_qdisc,
    }


def controller_facts(ix: TopologyIndex) -> dict[str, object]:
    """Storage controllers, and the NUMA node holding most of them (the lowest on a tie)."""
    per_node = Counter(ix.numa_node(fn.id) for fn in ix.storage_controllers)
    per_node.pop(None, None)
    busiest = min(per_node, key=lambda node: (-per_node[node], node)) if per_node else None
    return {
        "storage_controllers": len(ix.storage_controllers),
        "busiest_node": busiest,
        "busiest_node_controllers": per_node[busiest] if busiest is not None else None,
    }


def host_target(ix: TopologyIndex, options: FactOptions) -> Target:
    """The one host target."""
    machine = ix.machine
    memory = machine.memory_bytes if machine else None
    name = (machine.hostname or machine.name) if machine else ix.topology.root
    classes = [ix.device_class.get(dev.name) for dev in ix.attached]
    facts: dict[str, object] = {
        "name": name,
        "cpu_count": ix.cpu_count or None,
        "numa_node_count": len(ix.numa),
        "memory_bytes": memory,
        **governor_facts(ix.topology.cpu),
        **vm_facts(ix.topology.vm, memory),
        **tcp_facts(ix),
        "link_gbps": options.link_gbps,
        "rtt_ms": options.rtt_ms,
        "bdp_bytes": bdp_bytes(options.link_gbps, options.rtt_ms),
        **controller_facts(ix),
        # Counted by device class, so a virtual disk claiming to spin is neither.
        "hdd_count": sum(1 for c in classes if c == "hdd"),
        "ssd_count": sum(1 for c in classes if c in ("sata_ssd", "sas_ssd", "nvme")),
    }
    return Target("host", str(name), facts)
