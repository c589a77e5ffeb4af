"""The keys of every tunable, with the scope a value applies to and how it is persisted.

Rules may only recommend keys listed here (the rule loader checks). Each key's reading,
validating and writing lives in tuner/tunables/{block,sysctl,nic,irq,cpu}.py, paired with its
key by tuner/tunables/table.py, which refuses to load if the two lists ever disagree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TunableSpec:
    """What a key means: scope is device, host, irq or nic; persist names the mechanism."""

    key: str
    scope: str
    kind: str  # int, choice, triple (three ints), cpus
    persist: str
    doc: str


_SPECS = (
    TunableSpec("block.read_ahead_kb", "device", "int", "udev", "readahead window, KB"),
    TunableSpec("block.scheduler", "device", "choice", "udev", "I/O scheduler"),
    TunableSpec("block.nr_requests", "device", "int", "udev", "request queue depth"),
    TunableSpec("block.max_sectors_kb", "device", "int", "udev", "largest request sent, KB"),
    TunableSpec("block.rq_affinity", "device", "int", "udev", "complete on the submitting CPU"),
    TunableSpec("block.nomerges", "device", "int", "udev", "request merging (0 = merge)"),
    TunableSpec("block.write_cache", "device", "choice", "udev", "volatile write cache"),
    TunableSpec("vm.dirty_background_bytes", "host", "int", "sysctl", "background writeback"),
    TunableSpec("vm.dirty_background_ratio", "host", "int", "sysctl", "background writeback, %"),
    TunableSpec("vm.dirty_bytes", "host", "int", "sysctl", "writer throttling threshold"),
    TunableSpec("vm.dirty_ratio", "host", "int", "sysctl", "writer throttling threshold, %"),
    TunableSpec("vm.dirty_expire_centisecs", "host", "int", "sysctl", "age of dirty data"),
    TunableSpec("net.ipv4.tcp_rmem", "host", "triple", "sysctl", "TCP receive buffer min/def/max"),
    TunableSpec("net.ipv4.tcp_wmem", "host", "triple", "sysctl", "TCP send buffer min/def/max"),
    TunableSpec("net.core.rmem_max", "host", "int", "sysctl", "largest receive buffer"),
    TunableSpec("net.core.wmem_max", "host", "int", "sysctl", "largest send buffer"),
    TunableSpec("net.ipv4.tcp_congestion_control", "host", "choice", "sysctl", "TCP congestion"),
    TunableSpec("nic.mtu", "nic", "int", "udev", "interface MTU"),
    TunableSpec("irq.affinity", "irq", "choice", "unit", "local-node, one-cpu or all"),
    TunableSpec("cpu.governor", "host", "choice", "unit", "cpufreq governor"),
)

TUNABLES: dict[str, TunableSpec] = {spec.key: spec for spec in _SPECS}
