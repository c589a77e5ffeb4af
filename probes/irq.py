"""Interrupt lines: per-CPU counts, where each may run and does run, and the PCI function owning it.

Reads: proc/interrupts; proc/irq/N/{smp_affinity_list,smp_affinity,effective_affinity_list,
effective_affinity}; sys/bus/pci/devices/*/{msi_irqs/,irq,driver}.

`Irq.counts` is indexed by CPU number (counts[c] is CPU c's count, CPUs the header of
/proc/interrupts leaves out count 0), so it lines up with affinity lists.

Without /proc/interrupts (a capture that lacks it, like hwloc's), the interrupts are the ones the
PCI functions list: one Irq per MSI vector (chip "MSI") and per legacy line (chip "INTx"), name
"", with counts left empty and affinity from proc/irq/N/ where the capture has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from probes.hostfs import HostFS, digits, read_cpulist, read_cpumask
from probes.interrupts import msi_chip_address, parse_interrupts
from tuner.topology.model import Irq

INTERRUPTS = "proc/interrupts"
IRQ_DIR = "proc/irq"
PCI_DEVICES = "sys/bus/pci/devices"


@dataclass
class PciIrqOwners:
    """Which PCI function raises which interrupt, built once per probe run."""

    msi: dict[int, str] = field(default_factory=dict)
    intx: dict[int, list[str]] = field(default_factory=dict)

    def owner(self, irq: int) -> str | None:
        """The function's address; None for non-PCI lines and legacy lines shared by several."""
        if irq in self.msi:
            return self.msi[irq]
        claimants = self.intx.get(irq, [])
        return claimants[0] if len(claimants) == 1 else None


def pci_irq_owners(fs: HostFS) -> PciIrqOwners:
    """MSI vectors from each function's msi_irqs/, legacy lines from its `irq` file.

    A function with MSI vectors enabled, or with no driver bound, does not use its legacy line
    (the `irq` file still names one), so only the others claim it. A dangling `driver` link
    (captures often leave bus/pci/drivers/ out) still counts as a bound driver.
    """
    owners = PciIrqOwners()
    for name in fs.listdir(PCI_DEVICES):
        base = fs.realpath(f"{PCI_DEVICES}/{name}")
        if base is None:
            continue
        address = PurePosixPath(base).name
        # One listing spares a path resolution per missing attribute; the paths are the ones
        # probes/pci.py reads, so within one run HostFS has them resolved already.
        have = frozenset(fs.listdir(base))
        vectors = fs.listdir(f"{base}/msi_irqs") if "msi_irqs" in have else []
        bad = [vector for vector in vectors if not digits(vector)]
        if bad:
            # Worded as probes/pci.py words it, so one run reports it once.
            fs.warn(f"{base}/msi_irqs: unexpected entries {', '.join(bad[:3])}")
        for vector in vectors:
            if digits(vector):
                owners.msi.setdefault(int(vector), address)
        if vectors or "irq" not in have or "driver" not in have:
            continue
        line = fs.read_int(f"{base}/irq")
        if line:
            owners.intx.setdefault(line, []).append(address)
    return owners


def probe_irqs(fs: HostFS) -> list[Irq]:
    """Every interrupt line from /proc/interrupts, else those the PCI functions list."""
    owners = pci_irq_owners(fs)
    with_affinity = set(fs.listdir(IRQ_DIR))
    text = fs.read(INTERRUPTS)
    if text is not None:
        lines, problems = parse_interrupts(text)
        for problem in problems:
            fs.warn(f"{INTERRUPTS}: {problem}")
        if lines:
            return [
                _irq(
                    fs,
                    with_affinity,
                    line.irq,
                    name=line.actions,
                    chip=line.chip,
                    device=msi_chip_address(line.chip) or owners.owner(line.irq),
                    counts=line.counts,
                )
                for line in lines
            ]
    found = {irq: "MSI" for irq in owners.msi}
    for irq in owners.intx:
        found.setdefault(irq, "INTx")
    return [
        _irq(fs, with_affinity, irq, name="", chip=chip, device=owners.owner(irq), counts=())
        for irq, chip in sorted(found.items())
    ]


def _irq(
    fs: HostFS,
    with_affinity: set[str],
    irq: int,
    *,
    name: str,
    chip: str | None,
    device: str | None,
    counts: tuple[int, ...],
) -> Irq:
    affinity: tuple[int, ...] = ()
    effective: tuple[int, ...] = ()
    if str(irq) in with_affinity:
        affinity = _cpus(fs, f"{IRQ_DIR}/{irq}/smp_affinity")
        effective = _cpus(fs, f"{IRQ_DIR}/{irq}/effective_affinity")
    return Irq(
        irq=irq,
        name=name,
        chip=chip,
        device=device,
        affinity=affinity,
        effective_affinity=effective,
        counts=counts,
    )


def _cpus(fs: HostFS, mask_path: str) -> tuple[int, ...]:
    """The CPUs of `<mask_path>_list`, or of the hexadecimal mask when the list is missing."""
    cpus = read_cpulist(fs, f"{mask_path}_list")
    if cpus is None:
        cpus = read_cpumask(fs, mask_path)
    return cpus or ()
