"""CPU probe: online CPUs, governors, model names across architectures."""

from __future__ import annotations

from probes.cpu import probe_cpu
from probes.hostfs import HostFS
from tests.sysfs_tree import SysTree

CPU = "sys/devices/system/cpu"


def test_governors_and_model(tree: SysTree) -> None:
    tree.file(f"{CPU}/online", "0-1")
    tree.files(
        f"{CPU}/cpu0/cpufreq", {"scaling_governor": "powersave", "cpuinfo_max_freq": 3_000_000}
    )
    tree.files(
        f"{CPU}/cpu1/cpufreq", {"scaling_governor": "powersave", "cpuinfo_max_freq": 3_500_000}
    )
    tree.file("proc/cpuinfo", "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6230\n")
    cpu = probe_cpu(HostFS(tree.root))
    assert cpu.online == (0, 1)
    assert cpu.governor == "powersave"
    assert cpu.max_mhz == 3500.0
    assert cpu.model_name == "Intel(R) Xeon(R) Gold 6230"


def test_mixed_governors_have_no_single_governor(tree: SysTree) -> None:
    tree.file(f"{CPU}/online", "0-1")
    tree.file(f"{CPU}/cpu0/cpufreq/scaling_governor", "performance")
    tree.file(f"{CPU}/cpu1/cpufreq/scaling_governor", "ondemand")
    cpu = probe_cpu(HostFS(tree.root))
    assert cpu.governor is None
    assert cpu.governors == ((0, "performance"), (1, "ondemand"))


def test_no_cpufreq_and_no_online_file(tree: SysTree) -> None:
    tree.dir(f"{CPU}/cpu0").dir(f"{CPU}/cpu1").dir(f"{CPU}/cpufreq")
    cpu = probe_cpu(HostFS(tree.root))
    assert cpu.online == (0, 1)
    assert cpu.governors == ()
