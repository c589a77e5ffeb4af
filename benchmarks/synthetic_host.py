"""Build a synthetic but kernel-shaped /sys and /proc tree: SAS HBAs with expanders and disks.

Used by the probe benchmark (1,000 disks behind 40 controllers, 200 PCI functions) and by tests
that need a large host. The layout follows what a real SAS host shows:
  sys/devices/pci0000:R/0000:R:PP.0 (root port) /0000:BB:00.0 (HBA)
      /hostH/port-H:0/expander-H:0/port-H:0:D/end_device-H:0:D/targetH:0:D/H:0:D:0/block/sdX/sdX1
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Shape:
    """How big the synthetic host is."""

    disks: int = 1000
    controllers: int = 40
    pci_functions: int = 200
    numa_nodes: int = 2
    cpus: int = 16
    nics: int = 4


def disk_name(index: int) -> str:
    """sda, sdb, ... sdz, sdaa, ... as the kernel names SCSI disks."""
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return f"sd{letters}"


class _Writer:
    def __init__(self, root: Path) -> None:
        self.root = root

    def file(self, rel: str, content: object) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{content}\n")

    def link(self, rel: str, target_rel: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(self.root / target_rel, path.parent), path)


def build(root: Path, shape: Shape = Shape()) -> Path:
    """Write the tree under `root` and return it."""
    w = _Writer(root)
    per_node = shape.cpus // shape.numa_nodes
    for node in range(shape.numa_nodes):
        w.file(
            f"sys/devices/system/node/node{node}/cpulist",
            f"{node * per_node}-{(node + 1) * per_node - 1}",
        )
    w.file("sys/devices/system/cpu/online", f"0-{shape.cpus - 1}")
    w.file("proc/meminfo", "MemTotal:       263921344 kB")

    functions = 0
    irq = 100
    irq_lines: list[str] = []
    disks_per_hba = shape.disks // shape.controllers
    disk_index = 0
    for c in range(shape.controllers):
        node = c * shape.numa_nodes // shape.controllers
        root_bus = f"{node * 0x80:02x}"
        port = f"0000:{root_bus}:{c % 32:02x}.0"
        bus = f"{(c + 1) + node * 0x80:02x}"
        hba = f"0000:{bus}:00.0"
        port_dir = f"sys/devices/pci0000:{root_bus}/{port}"
        hba_dir = f"{port_dir}/{hba}"
        for addr, path, cls, drv in (
            (port, port_dir, "0x060400", "pcieport"),
            (hba, hba_dir, "0x010700", "mpt3sas"),
        ):
            _pci_function(w, addr, path, cls, drv, node, per_node)
            functions += 1
        vectors = []
        for v in range(8):
            w.file(f"{hba_dir}/msi_irqs/{irq}", "msix")
            w.file(
                f"proc/irq/{irq}/smp_affinity_list",
                f"{node * per_node}-{(node + 1) * per_node - 1}",
            )
            w.file(f"proc/irq/{irq}/effective_affinity_list", node * per_node)
            vectors.append(irq)
            irq_lines.append(
                _irq_line(irq, shape.cpus, node * per_node, f"mpt3sas{c}-msix{v}", hba)
            )
            irq += 1
        host = f"host{c}"
        sas = f"{hba_dir}/{host}/port-{c}:0/expander-{c}:0"
        for d in range(disks_per_hba):
            name = disk_name(disk_index)
            disk_index += 1
            dev_dir = f"{sas}/port-{c}:0:{d}/end_device-{c}:0:{d}/target{c}:0:{d}/{c}:0:{d}:0"
            _disk(w, name, f"{dev_dir}/block/{name}", disk_index, dev_dir)
    for n in range(shape.nics):
        addr = f"0000:{0xE0 + n:02x}:00.0"
        path = f"sys/devices/pci0000:00/{addr}"
        _pci_function(w, addr, path, "0x020000", "ixgbe", 0, per_node)
        functions += 1
        w.file(f"{path}/net/eth{n}/mtu", 1500)
        w.file(f"{path}/net/eth{n}/speed", 10000)
        w.link(f"sys/class/net/eth{n}", f"{path}/net/eth{n}")
    # The rest: host bridges, SMBus, memory controllers... to reach the function count.
    for f in range(shape.pci_functions - functions):
        addr = f"0000:00:{0x18 + f // 8:02x}.{f % 8}"
        _pci_function(w, addr, f"sys/devices/pci0000:00/{addr}", "0x088000", "", 0, per_node)
    header = "      " + "".join(f"CPU{i:<8}" for i in range(shape.cpus))
    w.file("proc/interrupts", "\n".join([header, *irq_lines]))
    w.file("proc/self/mounts", "/dev/sda1 /data xfs rw,noatime 0 0\nproc /proc proc rw 0 0")
    for name, value in (("tcp_rmem", "4096 131072 6291456"), ("tcp_wmem", "4096 16384 4194304")):
        w.file(f"proc/sys/net/ipv4/{name}", value)
    return root


def _pci_function(
    w: _Writer, addr: str, path: str, cls: str, driver: str, node: int, per_node: int
) -> None:
    w.file(f"{path}/class", cls)
    w.file(f"{path}/vendor", "0x1000")
    w.file(f"{path}/device", "0x0097")
    w.file(f"{path}/numa_node", node)
    w.file(f"{path}/local_cpulist", f"{node * per_node}-{(node + 1) * per_node - 1}")
    w.file(f"{path}/current_link_speed", "8.0 GT/s PCIe")
    w.file(f"{path}/current_link_width", 8)
    w.file(f"{path}/max_link_speed", "8.0 GT/s PCIe")
    w.file(f"{path}/max_link_width", 8)
    if driver:
        w.link(f"{path}/driver", f"sys/bus/pci/drivers/{driver}")
        (w.root / f"sys/bus/pci/drivers/{driver}").mkdir(parents=True, exist_ok=True)
    w.link(f"sys/bus/pci/devices/{addr}", path)


def _disk(w: _Writer, name: str, path: str, index: int, scsi_dir: str) -> None:
    queue = {
        "rotational": 1, "read_ahead_kb": 128, "scheduler": "[mq-deadline] kyber bfq none",
        "nr_requests": 256, "max_sectors_kb": 1280, "max_hw_sectors_kb": 16383,
        "write_cache": "write back", "rq_affinity": 1, "nomerges": 0,
        "logical_block_size": 512, "physical_block_size": 4096,
        "minimum_io_size": 4096, "optimal_io_size": 0,
    }  # fmt: skip
    w.file(f"{path}/dev", f"{8 + index // 16}:{(index % 16) * 16}")
    w.file(f"{path}/size", 35156656128)
    w.file(f"{path}/removable", 0)
    for key, value in queue.items():
        w.file(f"{path}/queue/{key}", value)
    w.file(f"{scsi_dir}/model", "ST18000NM000J")
    w.file(f"{scsi_dir}/vendor", "SEAGATE")
    w.file(f"{scsi_dir}/wwid", f"naa.5000c500{index:08x}")
    w.link(f"{path}/device", scsi_dir)
    w.file(f"{path}/{name}1/partition", 1)
    w.file(f"{path}/{name}1/start", 2048)
    w.file(f"{path}/{name}1/size", 35156652032)
    w.file(f"{path}/{name}1/dev", f"{8 + index // 16}:{(index % 16) * 16 + 1}")
    w.link(f"sys/block/{name}", path)
    w.link(f"sys/class/block/{name}", path)
    w.link(f"sys/class/block/{name}1", f"{path}/{name}1")


def _irq_line(irq: int, cpus: int, busy_cpu: int, name: str, address: str) -> str:
    counts = "".join(f"{(1000 if cpu == busy_cpu else 0):>10} " for cpu in range(cpus))
    return f"{irq:>4}: {counts} PCI-MSIX-{address} {irq % 64}-edge {name}"
