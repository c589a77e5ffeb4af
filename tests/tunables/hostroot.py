"""A small host as files: two block devices, the sysctls, a NIC, a PCI function's IRQs, cpufreq.

Every tunable runs on it exactly as on the live host; writes land in these files.
"""

from __future__ import annotations

from probes.hostfs import command_capture_path
from tests.ethtool_fixtures import captured
from tests.sysfs_tree import SysTree

QUEUE: dict[str, str | int] = {
    "scheduler": "[none] mq-deadline kyber bfq",
    "read_ahead_kb": 128,
    "nr_requests": 128,
    "max_sectors_kb": 1280,
    "max_hw_sectors_kb": 1280,
    "logical_block_size": 512,
    "rq_affinity": 1,
    "nomerges": 0,
    "write_cache": "write back",
    "wbt_lat_usec": 2000,
}
DEADLINE: dict[str, str | int] = {"fifo_batch": 16, "read_expire": 500, "write_expire": 5000}
"""mq-deadline's queue/iosched/ files (some of them), with the kernel's defaults."""
BFQ: dict[str, str | int] = {"slice_idle": 8, "slice_idle_us": 8000, "low_latency": 1}
"""bfq's queue/iosched/ files (some of them), with the kernel's defaults."""
SYSCTLS: dict[str, str | int] = {
    "vm/dirty_background_bytes": 0,
    "vm/dirty_background_ratio": 10,
    "vm/dirty_bytes": 0,
    "vm/dirty_ratio": 20,
    "vm/dirty_expire_centisecs": 3000,
    "net/ipv4/tcp_rmem": "4096\t131072\t6291456",
    "net/ipv4/tcp_wmem": "4096\t16384\t4194304",
    "net/core/rmem_max": 212992,
    "net/core/wmem_max": 212992,
    "net/core/default_qdisc": "pfifo_fast",
    "net/ipv4/tcp_congestion_control": "cubic",
    "net/ipv4/tcp_available_congestion_control": "reno cubic",
}
NVME = "0000:41:00.0"
"""A PCI function on NUMA node 1 (CPUs 2-3) with three MSI-X vectors, 40-42."""


def build_host(tree: SysTree, *, cpufreq: bool = True) -> SysTree:
    """Fill `tree` with the small host; returns it."""
    tree.files("sys/block/loop3/queue", QUEUE).file("sys/block/loop3/mq/0/nr_tags", 128)
    # sda runs mq-deadline over two hardware queues of different depth.
    sda: dict[str, str | int] = {"scheduler": "none [mq-deadline]", "nr_requests": 64,
                                 "logical_block_size": 4096, "max_hw_sectors_kb": 512,
                                 "max_sectors_kb": 512}  # fmt: skip
    tree.files("sys/block/sda/queue", {**QUEUE, **sda})
    tree.files("sys/block/sda/queue/iosched", DEADLINE)
    tree.file("sys/block/sda/mq/0/nr_tags", 64).file("sys/block/sda/mq/1/nr_tags", 32)
    for rel, value in SYSCTLS.items():
        tree.file(f"proc/sys/{rel}", value)
    tree.file("sys/class/net/eth0/mtu", 1500).file("sys/class/net/eth0/tx_queue_len", 1000)
    # eth0's rings and coalescing as this VM's virtio_net shows them (tests/fixtures/ethtool).
    for option in ("g", "c"):
        tree.file(command_capture_path(("ethtool", f"-{option}", "eth0")),
                  captured(f"virtio_net-{option}").rstrip("\n"))  # fmt: skip
    tree.file("sys/devices/system/cpu/online", "0-3")
    for cpu in range(4):
        tree.file(f"proc/irq/{40 + cpu}/smp_affinity_list", "0-3")
        if cpufreq:
            tree.files(f"sys/devices/system/cpu/cpu{cpu}/cpufreq", {
                "scaling_governor": "powersave",
                "scaling_available_governors": "performance powersave",
            })  # fmt: skip
    device = f"sys/devices/pci0000:40/{NVME}"
    tree.file(f"{device}/local_cpulist", "2-3").file(f"{device}/numa_node", 1)
    for vector in (40, 41, 42):
        tree.file(f"{device}/msi_irqs/{vector}", "msix")
    tree.link_to(f"sys/bus/pci/devices/{NVME}", device)
    return tree


def switch_scheduler(tree: SysTree, device: str, scheduler: str) -> None:
    """Make `scheduler` the one in force on `device`, as the kernel does: its own iosched/
    files with their defaults replace the old one's."""
    queue = f"sys/block/{device}/queue"
    names = (tree.root / queue / "scheduler").read_text().replace("[", "").replace("]", "")
    marked = " ".join(f"[{n}]" if n == scheduler else n for n in names.split())
    tree.file(f"{queue}/scheduler", marked)
    for old in (tree.root / queue / "iosched").glob("*"):
        old.unlink()
    tree.files(f"{queue}/iosched", {"mq-deadline": DEADLINE, "bfq": BFQ}.get(scheduler, {}))


def attach(tree: SysTree, device: str, diskseq: int, backing: str = "/dev/shm/disk.img") -> None:
    """Make `device` a loop device bound to `backing` as attachment `diskseq`, as the kernel
    shows it: its diskseq, a size and loop/backing_file. The queue stays as it was (a loop
    device keeps its settings from one attachment to the next)."""
    tree.file(f"sys/block/{device}/diskseq", diskseq).file(f"sys/block/{device}/size", 131072)
    tree.file(f"sys/block/{device}/loop/backing_file", backing)


def detach(tree: SysTree, device: str, diskseq: int) -> None:
    """What `losetup -d` leaves: the next diskseq, size 0, no loop/ directory, the queue kept."""
    tree.file(f"sys/block/{device}/diskseq", diskseq).file(f"sys/block/{device}/size", 0)
    for leftover in (tree.root / f"sys/block/{device}/loop").glob("*"):
        leftover.unlink()
    (tree.root / f"sys/block/{device}/loop").rmdir()
