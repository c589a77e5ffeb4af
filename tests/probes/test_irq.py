"""Interrupts: counts per CPU, affinity, the owning PCI function, and captures without the table."""

from __future__ import annotations

from probes.hostfs import HostFS
from probes.irq import probe_irqs
from tests.sysfs_tree import SysTree
from tuner.topology.model import Irq

PCI0 = "sys/devices/pci0000:00"
RAID = "0000:01:00.0"
NIC = "0000:03:00.0"
EHCI = "0000:00:1a.0"

# CPU2 is offline, so the kernel leaves its column out.
INTERRUPTS = """\
            CPU0       CPU1       CPU3
   0:         38          0          0   IO-APIC   2-edge      timer
   4:          0        120          0   IO-APIC   4-edge      ttyS0
  16:        900          0          0   IO-APIC  16-fasteoi   ehci_hcd:usb1
  21:          5          5          0   IO-APIC  21-fasteoi   uhci_hcd:usb3, uhci_hcd:usb4
  40:     812345          0          0   PCI-MSI-edge      megasas0-msix0
  41:     700001          0          0   PCI-MSI-edge      megasas0-msix1
  42:     650000          0          0   PCI-MSI-edge      megasas0-msix2
  43:     640000          0          0   PCI-MSI-edge      megasas0-msix3
  50:          0       1000       2000   PCI-MSIX-0000:03:00.0   0-edge      eth0-TxRx-0
  51:         10         20         30   IR-PCI-MSI 524288-edge      PCIe PME, pciehp
this line is not an interrupt
  60:          7
 NMI:          0          0          0   Non-maskable interrupts
 LOC:      19035      20075      20111   Local timer interrupts
 ERR:          0
"""


def function(
    tree: SysTree, address: str, *, driver: str | None, irq: int, msi: range = range(0)
) -> None:
    path = f"{PCI0}/{address}"
    tree.file(f"{path}/irq", irq)
    for vector in msi:
        tree.file(f"{path}/msi_irqs/{vector}", "msix")
    if driver:
        tree.dir(f"sys/bus/pci/drivers/{driver}")
        tree.link_to(f"{path}/driver", f"sys/bus/pci/drivers/{driver}")
    tree.link_to(f"sys/bus/pci/devices/{address}", path)


def machine(tree: SysTree) -> SysTree:
    """A RAID controller with 4 MSI-X vectors, a NIC, USB controllers, one without a driver."""
    function(tree, RAID, driver="megaraid_sas", irq=32, msi=range(40, 44))
    function(tree, NIC, driver="ixgbe", irq=34, msi=range(50, 51))
    function(tree, EHCI, driver="ehci-pci", irq=16)
    function(tree, "0000:00:1a.1", driver=None, irq=16)  # no driver: not using the line
    function(tree, "0000:00:1d.0", driver="uhci_hcd", irq=21)
    function(tree, "0000:00:1d.1", driver="uhci_hcd", irq=21)
    for vector in range(40, 44):
        tree.files(
            f"proc/irq/{vector}", {"smp_affinity_list": "0-3", "effective_affinity_list": "0"}
        )
    # Older kernels: masks only.
    tree.files("proc/irq/50", {"smp_affinity": "0000000a", "effective_affinity": "00000002"})
    return tree


def by_number(irqs: list[Irq]) -> dict[int, Irq]:
    return {irq.irq: irq for irq in irqs}


def probed(tree: SysTree) -> tuple[dict[int, Irq], HostFS]:
    fs = HostFS(tree.root)
    return by_number(probe_irqs(fs)), fs


def test_raid_vectors_all_land_on_cpu0(tree: SysTree) -> None:
    machine(tree).file("proc/interrupts", INTERRUPTS)
    irqs, _ = probed(tree)
    raid = [irqs[n] for n in range(40, 44)]
    assert all(irq.device == RAID for irq in raid)
    assert all(irq.affinity == (0, 1, 2, 3) for irq in raid)
    assert all(irq.cpus == (0,) for irq in raid)
    assert irqs[40].counts == (812345, 0, 0, 0)
    assert all(sum(irq.counts[1:]) == 0 for irq in raid)
    assert (irqs[40].name, irqs[40].chip) == ("megasas0-msix0", "PCI-MSI-edge")


def test_counts_are_indexed_by_cpu_number_with_the_offline_cpu_zero(tree: SysTree) -> None:
    machine(tree).file("proc/interrupts", INTERRUPTS)
    irqs, _ = probed(tree)
    assert irqs[50].counts == (0, 1000, 0, 2000)  # CPU2 offline
    assert irqs[51].counts[3] == 30


def test_affinity_from_masks_when_lists_are_missing(tree: SysTree) -> None:
    machine(tree).file("proc/interrupts", INTERRUPTS)
    irqs, _ = probed(tree)
    assert (irqs[50].affinity, irqs[50].effective_affinity) == ((1, 3), (1,))
    assert irqs[4].affinity == ()  # no proc/irq/4 directory


def test_device_from_chip_name_msi_map_and_legacy_lines(tree: SysTree) -> None:
    machine(tree).file("proc/interrupts", INTERRUPTS)
    irqs, _ = probed(tree)
    assert (irqs[50].device, irqs[50].chip) == (NIC, "PCI-MSIX-0000:03:00.0")
    assert irqs[16].device == EHCI  # the driverless function on line 16 is not a claimant
    assert irqs[21].device is None  # shared by two bound functions: no single owner
    assert (irqs[4].device, irqs[4].name) == (None, "ttyS0")
    assert irqs[51].name == "PCIe PME, pciehp"
    assert irqs[51].chip == "IR-PCI-MSI"


def test_named_counters_are_skipped_and_bad_lines_warn(tree: SysTree) -> None:
    machine(tree).file("proc/interrupts", INTERRUPTS)
    irqs, fs = probed(tree)
    assert sorted(irqs) == [0, 4, 16, 21, 40, 41, 42, 43, 50, 51]
    assert len(fs.warnings) == 2
    assert all(w.startswith("proc/interrupts: ") for w in fs.warnings)
    assert any("this line is not" in w for w in fs.warnings)
    assert any("IRQ 60" in w for w in fs.warnings)


def test_malformed_affinity_list_warns_naming_the_file_and_falls_back_to_mask(
    tree: SysTree,
) -> None:
    machine(tree).file("proc/interrupts", INTERRUPTS)
    tree.files("proc/irq/4", {"smp_affinity_list": "0-x", "smp_affinity": "2"})
    irqs, fs = probed(tree)
    assert irqs[4].affinity == (1,)
    assert "proc/irq/4/smp_affinity_list: expected a CPU list, got '0-x'" in fs.warnings


def test_without_proc_interrupts_each_pci_irq_is_listed(tree: SysTree) -> None:
    machine(tree)
    irqs, fs = probed(tree)
    assert sorted(irqs) == [16, 21, 40, 41, 42, 43, 50]
    assert (irqs[40].chip, irqs[40].name, irqs[40].device) == ("MSI", "", RAID)
    assert (irqs[16].chip, irqs[16].device) == ("INTx", EHCI)
    assert irqs[40].counts == ()
    assert irqs[40].cpus == (0,)  # proc/irq/40 is in the capture
    assert irqs[16].affinity == ()
    assert fs.warnings == []


def test_unreadable_header_warns_and_falls_back_to_pci(tree: SysTree) -> None:
    machine(tree).file("proc/interrupts", "garbage\n  40: 1 2\n")
    irqs, fs = probed(tree)
    assert sorted(irqs) == [16, 21, 40, 41, 42, 43, 50]
    assert fs.warnings == ["proc/interrupts: no CPU header line, got 'garbage'"]


def test_bad_msi_entry_warns_and_the_rest_stay(tree: SysTree) -> None:
    machine(tree).file(f"{PCI0}/{RAID}/msi_irqs/bogus", "msix")
    irqs, fs = probed(tree)
    assert irqs[41].device == RAID
    assert fs.warnings == [f"{PCI0}/{RAID}/msi_irqs: unexpected entries bogus"]


def test_nothing_to_read_gives_no_irqs_and_no_warning(tree: SysTree) -> None:
    tree.dir("sys")
    fs = HostFS(tree.root)
    assert probe_irqs(fs) == []
    assert fs.warnings == []


def test_300_irqs_affine_to_65536_cpus_stay_within_memory_and_time(tree: SysTree) -> None:
    import time
    import tracemalloc

    lines = ["            CPU0"]
    for irq in range(300):
        lines.append(f" {irq + 100}:   1   PCI-MSI-edge   q{irq}")
        # Each list differs, so sharing equal tuples alone cannot hold the bound.
        tree.file(f"proc/irq/{irq + 100}/smp_affinity_list", f"{irq}-65535")
        tree.file(f"proc/irq/{irq + 100}/effective_affinity_list", "0-65535")
    tree.file("proc/interrupts", "\n".join(lines))
    fs = HostFS(tree.root)
    tracemalloc.start()
    start = time.monotonic()
    try:
        irqs = probe_irqs(fs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(irqs) == 300
    assert peak < 80 << 20, f"peak {peak >> 20} MiB"
    assert time.monotonic() - start < 20
    assert irqs[0].effective_affinity == tuple(range(65536))
    assert any("budget" in w for w in fs.warnings)
