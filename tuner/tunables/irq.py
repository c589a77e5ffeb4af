"""irq.affinity: where a PCI function's interrupts may run, via /proc/irq/N/smp_affinity_list.

The target is the function's address ("0000:00:02.0"); its interrupts are its MSI vectors
(sys/bus/pci/devices/<addr>/msi_irqs/), else its legacy line. Three policies:

- `local-node`: the vectors spread one per CPU, round robin, over the CPUs local to the device
  (its local_cpulist, i.e. its NUMA node), so completions stay near its memory;
- `one-cpu`: every vector on the first local CPU;
- `all`: every vector allowed on every online CPU (what the kernel starts with).

Reading gives the exact layout, "35:0 36:1" (IRQ:CPU list, by IRQ), which is also what a save
restores. Many VMs, and managed interrupts on real hosts, refuse affinity writes with EPERM:
the kernel then makes the file read-only, so the refusal is reported before anything is written.
"""

from __future__ import annotations

from probes.hostfs import digits, parse_cpulist, read_cpulist
from probes.numa import online_cpus
from tuner.tunables.base import KernelRead, Pending, Tunable, Value
from tuner.tunables.sysroot import SysRoot

POLICIES = ("local-node", "one-cpu", "all")
PCI_DEVICES = "sys/bus/pci/devices"


def format_cpulist(cpus: tuple[int, ...]) -> str:
    """The kernel's compact CPU list: (0, 1, 2, 5) -> "0-2,5"."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


class IrqAffinity(Tunable):
    """The CPUs each interrupt of one PCI function may run on."""

    key = "irq.affinity"
    scope = "irq"
    value_kind = "choice"
    persist = "unit"
    doc = "local-node, one-cpu or all"
    read_kind = "cpulist"

    def irqs(self, sys: SysRoot, target: str) -> list[int]:
        """The function's interrupt numbers; TunableError when it has none."""
        base = f"{PCI_DEVICES}/{target}"
        if "/" in target or not target or not sys.exists(base):
            raise self.gone(target, f"no such PCI function ({sys.shown(base)})")
        vectors = sorted(int(v) for v in sys.listdir(f"{base}/msi_irqs") if digits(v))
        if vectors:
            return vectors
        line = sys.read(f"{base}/irq")
        if line is not None and digits(line) and int(line) > 0:
            return [int(line)]
        raise self.fail(target, "the function has no interrupts")

    def local_cpus(self, sys: SysRoot, target: str) -> tuple[int, ...]:
        """Online CPUs of the device's NUMA node (all online CPUs when it has none)."""
        fs = sys.fs()
        online = online_cpus(fs)
        local = read_cpulist(fs, f"{PCI_DEVICES}/{target}/local_cpulist") or ()
        return tuple(c for c in local if c in online) or online

    def read(self, sys: SysRoot, target: str) -> Value:
        """The exact layout, "IRQ:CPUs IRQ:CPUs"."""
        return format_layout(self.current(sys, target))

    def current(self, sys: SysRoot, target: str) -> dict[int, tuple[int, ...]]:
        """IRQ -> the CPUs it may run on now."""
        layout = {}
        for irq in self.irqs(sys, target):
            rel = f"proc/irq/{irq}/smp_affinity_list"
            text = self.read_attr(sys, target, rel)
            try:
                layout[irq] = parse_cpulist(text)
            except ValueError:
                why = f"{sys.shown(rel)} holds {text[:40]!r}, not a CPU list"
                raise self.fail(target, why) from None
        return layout

    def resolve(self, sys: SysRoot, target: str, value: str) -> dict[int, tuple[int, ...]]:
        """IRQ -> CPUs for a policy name or an explicit layout."""
        irqs = self.irqs(sys, target)
        if value == "local-node":
            local = self.local_cpus(sys, target)
            return {irq: (local[i % len(local)],) for i, irq in enumerate(irqs)}
        if value == "one-cpu":
            return dict.fromkeys(irqs, self.local_cpus(sys, target)[:1])
        if value == "all":
            return dict.fromkeys(irqs, online_cpus(sys.fs()))
        if ":" not in value:
            raise self.invalid(target, f"{value!r} is not one of {', '.join(POLICIES)}")
        return self.parse_layout(sys, target, value, irqs)

    def parse_layout(
        self, sys: SysRoot, target: str, value: str, irqs: list[int]
    ) -> dict[int, tuple[int, ...]]:
        """An explicit "IRQ:CPUs ..." layout naming exactly the function's IRQs, online CPUs."""
        online = set(online_cpus(sys.fs()))
        layout: dict[int, tuple[int, ...]] = {}
        for word in value.split():
            irq, _, cpus = word.partition(":")
            try:
                layout[int(irq)] = parse_cpulist(cpus)
            except ValueError:
                raise self.invalid(target, f"{word!r} is not IRQ:CPU-list") from None
            if not layout[int(irq)] or not set(layout[int(irq)]) <= online:
                raise self.invalid(target, f"{word!r} names CPUs that are not online")
        if sorted(layout) != irqs:
            raise self.invalid(target, f"layout {value!r} does not name IRQs {irqs}")
        return layout

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """A policy or layout, refused up front where the kernel will not let it be written."""
        text = self.as_name(target, value)
        wanted = self.resolve(sys, target, text)
        now = self.current(sys, target)
        for irq, cpus in wanted.items():
            rel = f"proc/irq/{irq}/smp_affinity_list"
            if now.get(irq) != cpus and sys.writable(rel) is False:
                raise self.fail(target, f"not permitted here (EPERM writing {sys.shown(rel)})")
        return text

    def expected(self, sys: SysRoot, target: str, value: Value) -> Value:
        """The layout a policy gives on this host."""
        return format_layout(self.resolve(sys, target, str(value)))

    def verify_reads(self, sys: SysRoot, target: str, expected: Value) -> tuple[KernelRead, ...]:
        """One read per IRQ of the expected layout ("35:0 36:1-3"), each CPU list in the
        kernel's compact form."""
        reads = []
        for word in str(expected).split():
            irq, _, cpus = word.partition(":")
            listed = format_cpulist(parse_cpulist(cpus))
            reads.append(KernelRead(f"/proc/irq/{int(irq)}/smp_affinity_list", "cpulist", listed))
        return tuple(reads)

    def kernel_path(self, sys: SysRoot, target: str) -> str:
        """The affinity lists of the target's interrupts (one file per IRQ)."""
        return "/proc/irq/*/smp_affinity_list"

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write each IRQ that changes; on a refusal, put back the ones already written."""
        wanted = self.resolve(sys, target, str(value))
        before = self.current(sys, target)
        done: list[int] = []
        try:
            for irq, cpus in wanted.items():
                if before.get(irq) != cpus:
                    text = format_cpulist(cpus)
                    self.write_attr(sys, target, f"proc/irq/{irq}/smp_affinity_list", text)
                    done.append(irq)
        except Exception:
            for irq in reversed(done):
                sys.write(f"proc/irq/{irq}/smp_affinity_list", format_cpulist(before[irq]))
            raise


def format_layout(layout: dict[int, tuple[int, ...]]) -> str:
    """The layout text, "35:0 36:1", of {35: (0,), 36: (1,)}."""
    return " ".join(f"{irq}:{format_cpulist(cpus)}" for irq, cpus in sorted(layout.items()))


IRQ_TUNABLES: tuple[Tunable, ...] = (IrqAffinity(),)
