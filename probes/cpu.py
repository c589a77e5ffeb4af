"""Host CPUs: which are online, their model, each one's cpufreq governor, core and socket.

Reads: sys/devices/system/cpu/{online,cpuN/cpufreq/scaling_governor,cpuinfo_max_freq},
cpuN/topology/{core_cpus_list (thread_siblings_list before Linux 5.6), package_cpus_list
(core_siblings_list), physical_package_id}, proc/cpuinfo.

A core is a set of hardware threads and a package a set of cores, as the sibling lists give
them (as hwloc reads them): ids alone mislead (core_id repeats on the two dies of an Opteron
6100 package; s390 reports package -1). The lists are read once per group, must partition the
online CPUs, and are bounded in total: a capture that breaks either gives a warning and no
places, never a wrong count.
"""

from __future__ import annotations

from probes.hostfs import MAX_CPUS, HostFS, digits, read_cpulist
from probes.numa import cpu_dirs, online_cpus
from tuner.topology.model import CpuInfo, CpuPlace

CPU_DIR = "sys/devices/system/cpu"
_GROUPS = (("core", ("core_cpus_list", "thread_siblings_list")),
           ("package", ("package_cpus_list", "core_siblings_list")))  # fmt: skip
_BUDGET = 8 * MAX_CPUS  # CPUs the sibling lists may name in all, offline ones included


def probe_cpu(fs: HostFS) -> CpuInfo:
    """Online CPUs, model name, governors, the highest maximum frequency, and CPU places."""
    online = online_cpus(fs)
    # Per-CPU files are read only where the CPU has a directory to hold them.
    dirs = cpu_dirs(fs)
    walked = tuple(cpu for cpu in online if cpu in dirs)
    governors: list[tuple[int, str]] = []
    max_khz: list[int] = []
    for cpu in walked:
        base = f"{CPU_DIR}/cpu{cpu}/cpufreq"
        governor = fs.read(f"{base}/scaling_governor")
        if governor:
            governors.append((cpu, governor))
        khz = fs.read_int(f"{base}/cpuinfo_max_freq")
        if khz:
            max_khz.append(khz)
    return CpuInfo(
        online=online,
        model_name=_model_name(fs),
        governors=tuple(governors),
        max_mhz=max(max_khz) / 1000 if max_khz else None,
        places=_places(fs, online, walked),
    )


def _places(fs: HostFS, online: tuple[int, ...], walked: tuple[int, ...]) -> tuple[CpuPlace, ...]:
    """Each online CPU's core, package and socket number; () when sysfs does not say.
    `walked`: the online CPUs that have a directory, whose files are read."""
    first: dict[str, dict[int, int]] = {}
    budget = [_BUDGET]
    for kind, names in _GROUPS:
        groups = _groups(fs, online, walked, names, budget)
        if groups is None:
            return ()
        first[kind] = groups
    if not first["core"] and not first["package"]:
        return ()
    had = frozenset(walked)
    return tuple(
        CpuPlace(
            cpu=cpu,
            core=first["core"].get(cpu),
            package=first["package"].get(cpu),
            socket=_socket(fs, cpu) if cpu in had else None,
        )
        for cpu in online
    )


def _socket(fs: HostFS, cpu: int) -> int | None:
    # -1: the architecture has no socket number (s390 before Linux 6.x, some arm64).
    number = fs.read_int(f"{CPU_DIR}/cpu{cpu}/topology/physical_package_id", low=-1, high=2**31)
    return None if number is None or number < 0 else number


def _groups(
    fs: HostFS,
    online: tuple[int, ...],
    walked: tuple[int, ...],
    names: tuple[str, ...],
    budget: list[int],
) -> dict[int, int] | None:
    """CPU -> first CPU of its group, from the first of `names` each CPU has; {} when no CPU
    has one; None (with a warning) when the lists overlap or name too many CPUs."""
    up = frozenset(online)
    first: dict[int, int] = {}
    for cpu in walked:
        if cpu in first:
            continue  # its group was read through another CPU
        rel, cpus = _first_list(fs, cpu, names)
        if cpus is None:
            continue
        budget[0] -= len(cpus)
        group = sorted(c for c in cpus if c in up)
        if budget[0] < 0 or cpu not in group or any(c in first for c in group):
            fs.warn(f"{rel}: CPU lists that overlap or run too long; CPU topology not read")
            return None
        first.update(dict.fromkeys(group, group[0]))
    return first


def _first_list(fs: HostFS, cpu: int, names: tuple[str, ...]) -> tuple[str, tuple[int, ...] | None]:
    base = f"{CPU_DIR}/cpu{cpu}/topology"
    for name in names:
        cpus = read_cpulist(fs, f"{base}/{name}")
        if cpus is not None:
            return f"{base}/{name}", cpus
    return base, None


def _model_name(fs: HostFS) -> str | None:
    # x86 says "model name", ARM "Processor" or "model name", s390 "processor 0: version...".
    for line in fs.read_lines("proc/cpuinfo"):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("model name", "processor", "cpu model") and value:
            value = value.strip()
            if not digits(value):
                return value
    return None
