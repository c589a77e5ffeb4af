"""Page-cache writeback thresholds: the vm.dirty_* sysctls.

Reads: proc/sys/vm/{dirty_ratio,dirty_background_ratio,dirty_bytes,dirty_background_bytes,
dirty_expire_centisecs}.
"""

from __future__ import annotations

from probes.hostfs import HostFS
from tuner.topology.model import VmSettings

VM_DIR = "proc/sys/vm"


def probe_vm(fs: HostFS) -> VmSettings:
    """The dirty-page thresholds; each None where the root does not hold it."""
    return VmSettings(
        dirty_ratio=fs.read_int(f"{VM_DIR}/dirty_ratio"),
        dirty_background_ratio=fs.read_int(f"{VM_DIR}/dirty_background_ratio"),
        dirty_bytes=fs.read_int(f"{VM_DIR}/dirty_bytes"),
        dirty_background_bytes=fs.read_int(f"{VM_DIR}/dirty_background_bytes"),
        dirty_expire_centisecs=fs.read_int(f"{VM_DIR}/dirty_expire_centisecs"),
    )
