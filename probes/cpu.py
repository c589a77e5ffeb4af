"""Host CPUs: which are online, their model, and each one's cpufreq governor.

Reads: sys/devices/system/cpu/{online,cpuN/cpufreq/scaling_governor,cpuinfo_max_freq},
proc/cpuinfo.
"""

from __future__ import annotations

from probes.hostfs import HostFS, digits
from probes.numa import online_cpus
from tuner.topology import CpuInfo

CPU_DIR = "sys/devices/system/cpu"


def probe_cpu(fs: HostFS) -> CpuInfo:
    """Online CPUs, model name, governors and the highest maximum frequency."""
    online = online_cpus(fs)
    governors: list[tuple[int, str]] = []
    max_khz: list[int] = []
    for cpu in online:
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
    )


def _model_name(fs: HostFS) -> str | None:
    # x86 says "model name", ARM "Processor" or "model name", s390 "processor 0: version...".
    for line in fs.read_lines("proc/cpuinfo"):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("model name", "processor", "cpu model") and value:
            value = value.strip()
            if not digits(value):
                return value
    return None
