"""The facts a rule may test, by target kind: the contract between `rules/*.yaml` and the code.

A rule names one target kind in `applies_to`; the engine asks `tuner.facts.collect` for every
target of that kind, each with a dict of facts, and evaluates the rule's `when` conditions over it.
A fact that could not be known (no link attributes, no --rtt-ms) is None; a rule that tests it is
skipped for that target and `advise --explain` says which facts were unknown.

Every target also has `name` (what the finding's target column shows).
"""

from __future__ import annotations

from tuner.tunables.ethtool import EthtoolSetting
from tuner.tunables.table import IMPLEMENTATIONS

NIC_SETTING_FACTS: dict[str, str] = {
    fact: meaning
    for impl in IMPLEMENTATIONS.values()
    if impl.scope == "nic"
    for fact, meaning in impl.facts.items()
}
"""The facts the nic-scope tunables report themselves (`Tunable.facts`: ring sizes, coalescing,
tx_queue_len), read by tuner/tunables/observe.py onto the topology."""
_ETHTOOL_FACTS = tuple(
    fact
    for impl in IMPLEMENTATIONS.values()
    if isinstance(impl, EthtoolSetting)
    for fact in impl.facts
)

FACTS: dict[str, dict[str, str]] = {
    "host": {
        "name": "host name",
        "cpu_count": "online CPUs",
        "numa_node_count": "NUMA nodes",
        "memory_bytes": "total memory",
        "governor": "cpufreq governor shared by every CPU (None when mixed or absent)",
        "non_performance_cpus": "CPUs whose governor is not 'performance' (0 without cpufreq)",
        "governors": "distinct governors in use, comma-separated",
        "dirty_ratio": "vm.dirty_ratio (%)",
        "dirty_background_ratio": "vm.dirty_background_ratio (%)",
        "dirty_bytes": "vm.dirty_bytes (0 when the ratio rules)",
        "dirty_background_bytes": "vm.dirty_background_bytes (0 when the ratio rules)",
        "dirty_limit_bytes": "effective dirty limit in bytes (bytes setting, else ratio x memory)",
        "dirty_background_limit_bytes": "effective background writeback threshold in bytes",
        "dirty_expire_centisecs": "vm.dirty_expire_centisecs",
        "tcp_rmem_max": "third field of net.ipv4.tcp_rmem",
        "tcp_wmem_max": "third field of net.ipv4.tcp_wmem",
        "rmem_max": "net.core.rmem_max",
        "wmem_max": "net.core.wmem_max",
        "congestion_control": "net.ipv4.tcp_congestion_control",
        "available_congestion_control": "available algorithms, comma-separated",
        "bbr_available": "True when bbr is among the available algorithms",
        "default_qdisc": "net.core.default_qdisc (the qdisc new interfaces get)",
        "link_gbps": "path rate from --link-gbps (None when not given)",
        "rtt_ms": "round-trip time from --rtt-ms (None when not given)",
        "bdp_bytes": "bandwidth-delay product from --link-gbps and --rtt-ms",
        "storage_controllers": "storage controllers on the host",
        "busiest_node": "NUMA node holding the most storage controllers",
        "busiest_node_controllers": "storage controllers on that node",
        "hdd_count": "rotational disks (physical, whole)",
        "ssd_count": "non-rotational physical disks",
    },
    "disk": {
        # Whole block devices that hold data: physical disks, NVMe namespaces, md/dm arrays,
        # bound loop devices. Partitions and unbound loop/zram slots are not disks.
        "name": "kernel name",
        "kind": "disk, nvme, md, dm or loop",
        "model": "model string, when known",
        "rotational": "True for spinning disks",
        "is_nvme": "True for NVMe namespaces",
        "is_physical": "True for disks behind a controller (not md/dm/loop)",
        "size_bytes": "capacity",
        "scheduler": "active I/O scheduler",
        "schedulers": "available schedulers, comma-separated",
        "read_ahead_kb": "queue/read_ahead_kb",
        "nr_requests": "queue/nr_requests",
        "max_sectors_kb": "queue/max_sectors_kb (largest request the kernel sends)",
        "max_hw_sectors_kb": "queue/max_hw_sectors_kb (largest the hardware takes)",
        "write_cache": "'write back' or 'write through'",
        "readahead_from_limits": "True when a rotational disk reads ahead twice max_sectors_kb "
        "(above 128 KB): what kernels 6.17+ set from its limits",
        "expected_mbps": "streaming MB/s its class gives (HDD, SATA SSD, NVMe bounded by its link)",
        "controller": "PCI address of its controller (None for virtual devices)",
        "numa_node": "NUMA node of its controller",
        "behind_raid_controller": "True when its controller is a RAID controller (class 0104)",
        "member_count": "devices it is built on (md/dm members; 0 for plain disks)",
        "mounted": "True when it or one of its partitions is mounted",
        "reads_enter": "True when reads enter the storage stack here: mounted, or read directly "
        "by the workload (tune --target DEVICE)",
        "entry": "how reads reach it, for evidence: 'holding a mounted file system' or "
        "'read directly by the workload'",
    },
    "array": {
        # Striped or parity sets: md arrays and multi-device btrfs.
        "name": "md device name or btrfs label/uuid",
        "level": "raid0, raid1, raid5, raid6, raid10, linear; btrfs data profile",
        "is_parity": "True for raid4/5/6",
        "chunk_bytes": "chunk (strip) size per member",
        "member_count": "members",
        "data_members": "members that carry data in a stripe (raid5: n-1, raid6: n-2, raid10: n/2)",
        "stripe_width_bytes": "chunk_bytes x data_members",
        "models": "distinct member models, comma-separated",
        "model_count": "distinct member models",
        "size_count": "distinct member sizes",
        "mixed_rotational": "True when spinning and solid-state members are mixed",
        "slowest_member_mbps": "lowest expected streaming rate among members",
        "fastest_member_mbps": "highest expected streaming rate among members",
    },
    "partition": {
        "name": "partition kernel name",
        "disk": "the disk it is on",
        "start_bytes": "offset of its first byte on the disk",
        "chunk_bytes": "chunk of the array it belongs to or lies under (None outside arrays)",
        "stripe_width_bytes": "stripe width of that array",
        "misalignment_bytes": "start_bytes modulo chunk_bytes",
        "physical_block_size": "the disk's physical sector size",
        "misaligned_to_sector": "True when start_bytes is not a multiple of the physical sector",
    },
    "mount": {
        "name": "mount point",
        "device": "block device kernel name",
        "fstype": "file-system type",
        "options": "mount options, comma-separated",
        "atime_updates": "True unless noatime (relatime still writes once a day per file)",
        "on_array": "True when the device is an md array or a btrfs multi-device set",
        "chunk_bytes": "chunk of that array",
        "xfs_sunit_bytes": "xfs stripe unit from xfs_info (live host only)",
        "xfs_swidth_bytes": "xfs stripe width from xfs_info (live host only)",
        "geometry_matches": "True when xfs sunit/swidth equal the array's chunk and stripe width",
    },
    "pci_function": {
        # Storage and network controllers: the devices whose slot and link matter.
        "name": "PCI address",
        "role": "storage or network",
        "class_name": "short class name (SAS, NVMe, Ethernet...)",
        "link_speed_gts": "trained PCIe speed, GT/s per lane",
        "link_width": "trained lanes",
        "link_max_speed_gts": "speed the device supports",
        "link_max_width": "lanes the device supports",
        "link_mbps": "usable MB/s as trained",
        "link_max_mbps": "usable MB/s at the device's maximum",
        "downtrained": "True when the link runs slower or narrower than the device allows",
        "link_fraction": "link_mbps / link_max_mbps (1.0 at the device's maximum)",
        "demand_mbps": "what the devices below it can stream together (a NIC: the ports of every "
        "function on its link at their link speed)",
        "link_short": "True when link_mbps is below demand_mbps; False when it is not, or when "
        "demand_mbps is unknown (nothing shows the link short)",
        "link_starved": "True when the link is below half its maximum and short (link_fraction "
        "< 0.5 and link_short)",
        "built_in": "True when it is part of the board and cannot move to another slot: the "
        "firmware lists it on board (SMBIOS type 41), or it sits on a root bus in no slot",
        "built_in_because": "why it counts as built in, for evidence",
        "slot": "the physical slot it sits in, when the firmware names one",
        "numa_node": "its NUMA node",
    },
    "path": {
        # A component several devices share: a storage controller, a SAS/SATA port, a PCI
        # bridge or root port or switch, a host bridge.
        "name": "its id (PCI address, port name, host bridge)",
        "component": "controller, port, bridge, root_port or host_bridge",
        "capacity_mbps": "what it can carry (link bandwidth, SAS lanes x rate)",
        "demand_mbps": "sum of the expected streaming rates of the disks below it",
        "oversubscription": "demand_mbps / capacity_mbps",
        "disk_count": "disks below it",
        "controller_count": "storage controllers below it",
        "nic_count": "network controllers below it",
        "controllers": "storage controllers below it, comma-separated",
        "nics": "network interfaces below it, comma-separated",
        "has_nic_and_storage": "True when both a NIC and a storage controller sit below it",
    },
    "irq_device": {
        # A PCI function with interrupts (storage and network controllers).
        "name": "PCI address",
        "role": "storage or network",
        "irq_count": "its interrupt vectors",
        "cpus_used": "distinct CPUs its interrupts land on (by counts, else effective affinity)",
        "landing_cpus": "those CPUs, as a CPU list",
        "all_on_one_cpu": "True when two or more vectors all land on one CPU of a multi-CPU host",
        "local_node": "its NUMA node",
        "off_node_irqs": "vectors landing outside its local node",
        "node_count": "NUMA nodes on the host",
    },
    "nic": {
        "name": "interface name",
        "speed_mbps": "link speed",
        "mtu": "MTU",
        "driver": "driver",
        "pci_address": "its PCI function",
        "numa_node": "its NUMA node",
        "rx_queues": "receive queues",
        **NIC_SETTING_FACTS,
    },
}


def fact_names(kind: str) -> frozenset[str]:
    """The facts a rule over targets of `kind` may test; empty for an unknown kind."""
    return frozenset(FACTS.get(kind, {}))


_SYSCTL = (
    "needs /proc/sys: run on the host itself, or on a capture made by `iotuner probe --gather`"
)
_PCIE = "needs the PCIe link attributes in sysfs (conventional PCI and some captures have none)"
_PATH = "needs the capacity of the shared component and the rates of the disks below it"
_SYSCTL_FACTS = (
    "tcp_rmem_max", "tcp_wmem_max", "rmem_max", "wmem_max", "congestion_control",
    "available_congestion_control", "dirty_ratio", "dirty_background_ratio", "dirty_bytes",
    "dirty_background_bytes", "dirty_limit_bytes", "dirty_background_limit_bytes",
    "dirty_expire_centisecs", "default_qdisc",
)  # fmt: skip
_PCIE_FACTS = (
    "link_speed_gts", "link_width", "link_max_speed_gts", "link_max_width", "link_mbps",
    "link_max_mbps", "downtrained", "link_fraction", "link_short", "link_starved",
)  # fmt: skip

UNKNOWN_HINTS: dict[str, str] = {
    # What would let an unknown fact be known, for advise's "could not be evaluated" lines.
    "link_gbps": "give --link-gbps and --rtt-ms",
    "rtt_ms": "give --link-gbps and --rtt-ms",
    "bdp_bytes": "give --link-gbps and --rtt-ms",
    **dict.fromkeys(_SYSCTL_FACTS, _SYSCTL),
    **dict.fromkeys(_PCIE_FACTS, _PCIE),
    **dict.fromkeys(("oversubscription", "capacity_mbps", "demand_mbps"), _PATH),
    "speed_mbps": "needs the interface's link speed (the link up; virtual interfaces have none)",
    "write_cache": "needs queue/write_cache in sysfs (kernel 4.7 and later)",
    "misalignment_bytes": "applies only to partitions of striped arrays (md, btrfs)",
    "chunk_bytes": "applies only to striped arrays (md, btrfs)",
    "governor": "needs cpufreq in sysfs (many virtual machines have none)",
    **dict.fromkeys(
        _ETHTOOL_FACTS,
        "needs ethtool's output for the interface (the host with ethtool installed, or a "
        "capture from `iotuner probe --gather`) and a driver that reports it",
    ),
}


def unknown_hint(fact: str) -> str:
    """What would let `fact` be known: an option to give, or what the host lacks."""
    return UNKNOWN_HINTS.get(fact, f"{fact} was not readable here")
