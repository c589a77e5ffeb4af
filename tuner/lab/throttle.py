"""Block throttling: per-device MB/s and IOPS ceilings, cgroup v1 or v2.

cgroup v1: rules in the ROOT blkio cgroup (`blkio.throttle.{read,write}_{bps,iops}_device`)
apply to every process and to the loop workers that carry a disk's I/O down to its bus; a rule
is removed by writing "MAJ:MIN 0". cgroup v2 has no `io.max` at the root, so the rules go to a
child cgroup made for the lab, and only processes placed in it are throttled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tuner.lab.system import LabError

V1_ROOT = Path("/sys/fs/cgroup/blkio")
V1_FILES = {
    "read_bps": "blkio.throttle.read_bps_device",
    "write_bps": "blkio.throttle.write_bps_device",
    "read_iops": "blkio.throttle.read_iops_device",
    "write_iops": "blkio.throttle.write_iops_device",
}
V2_KEYS = {"read_bps": "rbps", "write_bps": "wbps", "read_iops": "riops", "write_iops": "wiops"}


@dataclass(frozen=True)
class Caps:
    """Ceilings for one device; 0 means no ceiling."""

    read_bps: int = 0
    write_bps: int = 0
    read_iops: int = 0
    write_iops: int = 0

    def as_dict(self) -> dict[str, int]:
        """The four limits by name."""
        return {k: getattr(self, k) for k in V1_FILES}


def backend() -> str:
    """'v1' (root blkio cgroup), 'v2:/path/to/cgroup2' or LabError if neither can throttle."""
    if (V1_ROOT / V1_FILES["read_bps"]).exists():
        return "v1"
    for kind, point in _cgroup2_mounts():
        controllers = Path(point) / "cgroup.controllers"
        if kind == "cgroup2" and controllers.exists() and "io" in controllers.read_text().split():
            return f"v2:{point}"
    raise LabError("no block throttling here: no cgroup v1 blkio, no cgroup v2 io controller")


def _cgroup2_mounts() -> list[tuple[str, str]]:
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            found.append(("cgroup2", fields[1]))
    return found


def v2_cgroup(root: str, lab_id: str) -> Path:
    """The lab's own cgroup under a cgroup v2 root."""
    return Path(root) / f"iotuner-lab-{lab_id}"


def v2_prepare(cgroup: Path) -> None:
    """Enable the io controller for children of the root and create the lab's cgroup."""
    _write(cgroup.parent / "cgroup.subtree_control", "+io")
    cgroup.mkdir(exist_ok=True)


def set_caps(where: str, majmin: str, caps: Caps) -> None:
    """Install the ceilings for device MAJ:MIN; `where` is 'v1' or a v2 cgroup directory."""
    if where == "v1":
        for key, name in V1_FILES.items():
            if getattr(caps, key):
                _write(V1_ROOT / name, f"{majmin} {getattr(caps, key)}")
        return
    parts = [f"{V2_KEYS[k]}={v or 'max'}" for k, v in caps.as_dict().items()]
    _write(Path(where) / "io.max", f"{majmin} {' '.join(parts)}")


def clear_caps(where: str, majmin: str) -> None:
    """Remove every ceiling on MAJ:MIN (a no-op where there is none)."""
    if where == "v1":
        for name in V1_FILES.values():
            _write(V1_ROOT / name, f"{majmin} 0")
        return
    if (Path(where) / "io.max").exists():
        _write(Path(where) / "io.max", f"{majmin} rbps=max wbps=max riops=max wiops=max")


def read_caps(where: str, majmin: str) -> Caps:
    """The ceilings installed on MAJ:MIN now (0 where none)."""
    values: dict[str, int] = {}
    if where == "v1":
        for key, name in V1_FILES.items():
            for line in (V1_ROOT / name).read_text().splitlines():
                dev, _, value = line.partition(" ")
                if dev == majmin:
                    values[key] = int(value)
        return Caps(**values)
    path = Path(where) / "io.max"
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        dev, *pairs = line.split()
        if dev != majmin:
            continue
        by_v2 = dict(pair.split("=", 1) for pair in pairs)
        for key, v2 in V2_KEYS.items():
            if by_v2.get(v2, "max") != "max":
                values[key] = int(by_v2[v2])
    return Caps(**values)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as err:
        raise LabError(f"cannot write {text!r} to {path}: {err.strerror}") from None
