"""XFS stripe geometry of a mounted file system, from `xfs_info MOUNTPOINT` (live host only).

xfs_info prints sections (meta-data, data, naming, log, realtime); the data section's `bsize`
is the block size and its `sunit`/`swidth` the stripe unit and width in those blocks:

    data     =                       bsize=4096   blocks=262144, imaxpct=25
             =                       sunit=128    swidth=256 blks

The log section has a `sunit` of its own, so only the data section is read.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

XFS_INFO_TIMEOUT_S = 10
_SECTION = re.compile(r"^([a-z-]+)\s*=")
_FIELD = re.compile(r"\b(bsize|sunit|swidth)=(\d+)")


@dataclass(frozen=True)
class XfsGeometry:
    """Stripe unit and width in bytes (0 when the file system was made without a stripe)."""

    sunit_bytes: int
    swidth_bytes: int


def parse_xfs_info(text: str) -> XfsGeometry | None:
    """The data section's geometry from xfs_info's output; None when it is not there."""
    section = ""
    found: dict[str, int] = {}
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match:
            section = match.group(1)
        if section != "data":
            continue
        for key, value in _FIELD.findall(line):
            found.setdefault(key, int(value))
    if not {"bsize", "sunit", "swidth"} <= found.keys():
        return None
    return XfsGeometry(found["sunit"] * found["bsize"], found["swidth"] * found["bsize"])


def read_xfs_geometry(mountpoint: str, command: str = "xfs_info") -> XfsGeometry | None:
    """Run xfs_info on a mount point; None when it is missing, fails or prints no geometry."""
    try:
        done = subprocess.run(
            [command, mountpoint],
            capture_output=True,
            text=True,
            timeout=XFS_INFO_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_xfs_info(done.stdout) if done.returncode == 0 else None
