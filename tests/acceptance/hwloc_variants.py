"""Edge cases real machines show that the nine hwloc captures in tests/fixtures/hwloc lack,
derived from them at test time (so they carry the same licence and provenance).

- `+nul`: every CPU list ends in "\\n\\0", as on hwloc's 128arm capture (an arm64 kernel's
  node and cpu lists); the probes must read the same CPUs as from the plain capture.
- `+offline`: some CPUs taken offline as the kernel shows it: `cpuN/online` holds 0 and
  `cpu/online` leaves them out, while the node's `cpulist` still names them; no NUMA node may
  count them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from probes.hostfs import parse_cpulist
from tuner.tunables.irq import format_cpulist

CPU = "sys/devices/system/cpu"
NODE = "sys/devices/system/node"

OFFLINE = {"40intel64-2g2n4c+pcilocality": (4, 5, 38)}
NUL = ("48amd64-4pa2n6c-sparse",)
VARIANTS = [f"{name}+nul" for name in NUL] + [f"{name}+offline" for name in OFFLINE]
"""Variant names: the capture's name and what was done to it."""


def base_of(variant: str) -> str:
    """The capture a variant is derived from."""
    return variant.rpartition("+")[0]


def build_variant(variant: str, root_of: Callable[[str], Path], dest: Path) -> Path:
    """Copy the base capture to `dest` and apply the variant's edit; returns the new root."""
    root = dest / variant
    if root.exists():
        return root
    # Hard links make the copy cheap; every edit below replaces a file, never writes into one.
    shutil.copytree(root_of(base_of(variant)), root, symlinks=True, copy_function=os.link)
    kind = variant.rpartition("+")[2]
    if kind == "nul":
        lists = [*root.glob(f"{NODE}/node*/cpulist"), *(root / CPU).glob("online")]
        lists += [*root.glob(f"{CPU}/possible"), *root.glob(f"{CPU}/present")]
        for path in lists:
            _replace(path, path.read_bytes().rstrip(b"\n") + b"\n\0")
    elif kind == "offline":
        gone = OFFLINE[base_of(variant)]
        for cpu in gone:
            _replace(root / CPU / f"cpu{cpu}" / "online", b"0\n")
        online = root / CPU / "online"
        kept = [c for c in parse_cpulist(online.read_text()) if c not in gone]
        _replace(online, format_cpulist(tuple(kept)).encode() + b"\n")
    return root


def _replace(path: Path, data: bytes) -> None:
    """A new file at `path`: the hard-linked original is left as it was."""
    path.unlink(missing_ok=True)
    path.write_bytes(data)


def expected_of(variant: str, base: dict[int, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """NUMA node -> CPUs for a variant, from what hwloc says of its base capture."""
    gone = set(OFFLINE.get(base_of(variant), ())) if variant.endswith("+offline") else set()
    return {node: tuple(c for c in cpus if c not in gone) for node, cpus in base.items()}
