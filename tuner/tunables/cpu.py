"""cpu.governor: the cpufreq governor of every online CPU.

Written to /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor for each CPU that has cpufreq.
Read back as one name when every CPU agrees, otherwise as a per-CPU layout "0:performance
1:powersave", which is also what a save of mixed governors restores.
"""

from __future__ import annotations

from probes.hostfs import digits
from probes.numa import online_cpus
from tuner.tunables.base import KernelRead, Pending, Tunable, Value
from tuner.tunables.sysroot import SysRoot

CPU_DIR = "sys/devices/system/cpu"


class Governor(Tunable):
    """The cpufreq governor, the same on every CPU."""

    key = "cpu.governor"
    scope = "host"
    value_kind = "choice"
    persist = "unit"
    doc = "cpufreq governor"
    current_fact = "governor"
    read_kind = "name"

    def cpus(self, sys: SysRoot, target: str) -> list[int]:
        """Online CPUs with cpufreq; TunableError when there are none (a VM, or no driver)."""
        found = [c for c in online_cpus(sys.fs()) if sys.exists(f"{CPU_DIR}/cpu{c}/cpufreq")]
        if not found:
            raise self.fail(
                target,
                f"no cpufreq on this host ({sys.shown(CPU_DIR)}/cpu0/cpufreq is missing:"
                " no frequency driver, as in most VMs)",
            )
        return found

    def read(self, sys: SysRoot, target: str) -> Value:
        """One governor name, or a "cpu:governor ..." layout when the CPUs differ."""
        layout = {
            cpu: self.read_attr(sys, target, f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")
            for cpu in self.cpus(sys, target)
        }
        names = set(layout.values())
        if len(names) == 1:
            return names.pop()
        return " ".join(f"{cpu}:{name}" for cpu, name in layout.items())

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """A governor every CPU offers (scaling_available_governors), or a full layout."""
        text = self.as_name(target, value)
        for cpu, name in self.layout(sys, target, text).items():
            rel = f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_available_governors"
            offered = self.read_attr(sys, target, rel).split()
            if name not in offered:
                raise self.invalid(
                    target,
                    f"{name!r} is not offered by CPU {cpu} (choose from {', '.join(offered)})",
                )
        return text

    def layout(self, sys: SysRoot, target: str, text: str) -> dict[int, str]:
        """CPU -> governor for a name (every CPU) or a "cpu:governor ..." layout."""
        cpus = self.cpus(sys, target)
        if ":" not in text:
            return dict.fromkeys(cpus, text)
        layout: dict[int, str] = {}
        for word in text.split():
            cpu, _, name = word.partition(":")
            if not digits(cpu) or not name:
                raise self.invalid(target, f"{word!r} is not cpu:governor")
            layout[int(cpu)] = name
        if sorted(layout) != cpus:
            raise self.invalid(target, f"layout {text!r} does not name CPUs {cpus}")
        return layout

    def verify_reads(self, sys: SysRoot, target: str, expected: Value) -> tuple[KernelRead, ...]:
        """One read per CPU of the expected layout, the CPUs taken from the host."""
        return tuple(
            KernelRead(f"/{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor", "name", name)
            for cpu, name in self.layout(sys, target, str(expected)).items()
        )

    def kernel_path(self, sys: SysRoot, target: str) -> str:
        """Every CPU's scaling_governor (the host's governor is theirs)."""
        return "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write every CPU's governor."""
        for cpu, name in self.layout(sys, target, str(value)).items():
            self.write_attr(sys, target, f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor", name)


CPU_TUNABLES: tuple[Tunable, ...] = (Governor(),)
