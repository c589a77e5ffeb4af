"""A per-device dirty limit on a lab disk: buffered writes to it wait for the disk.

Linux lets a writer dirty memory up to `vm.dirty_ratio` of the host's before it waits, and
starts writeback only at `vm.dirty_background_ratio`: on this VM gigabytes, so a trial of
seconds into a file (iperf3 -s -F) measures the network, not the disk. Kernel 6.2+ limits
one device instead (`/sys/class/bdi/MAJ:MIN/`): `strict_limit` 1 makes the kernel hold the
device to its own share even below the global thresholds, and `max_bytes` sets that share.
Writers to the lab disk then pause in balance_dirty_pages at the disk's writeback rate; the
host's `vm.dirty_*` and every other device are left alone.

The values found are recorded before anything is written; `lab down` writes them back
(`max_ratio_fine` or `max_ratio`, which `max_bytes` also moves, and `strict_limit`). A loop
device outlives the lab, so the next user of it finds what it had.
"""

from __future__ import annotations

from pathlib import Path

from probes.hostfs import digits
from tuner.lab import system
from tuner.lab.record import LabRecord, Step

BDI = Path("/sys/class/bdi")
# A quarter second of the disk's writes, at least 1 MiB: small enough that the first burst
# into the page cache is a few percent of a trial of seconds.
HOLD_S = 0.25
MIN_BYTES = 1 << 20
# max_ratio_fine (parts per million, kernel 6.2+) restores what max_ratio's whole percent may
# round away.
_KEYS = ("strict_limit", "max_ratio", "max_ratio_fine", "max_bytes")


def limit_bytes(write_mbps: float) -> int:
    """The dirty bytes a disk writing `write_mbps` MB/s may hold."""
    return max(MIN_BYTES, int(write_mbps * 1e6 * HOLD_S))


def limit(record: LabRecord, device: str, label: str, max_bytes: int, bdi: Path = BDI) -> None:
    """Hold `device`'s dirty pages to `max_bytes`, recording what it had first."""
    majmin = system.majmin(device)
    directory = _directory(bdi, majmin)
    if not (directory / "strict_limit").exists():
        raise system.LabError(
            f"{directory}/strict_limit is missing: a per-device dirty limit needs kernel 6.2+"
        )
    found = {
        key: (directory / key).read_text().strip() for key in _KEYS if (directory / key).exists()
    }
    step = record.intend(Step("dirty", majmin, device=device, label=label,
                              detail={"found": found, "max_bytes": max_bytes}))  # fmt: skip
    _write(directory / "max_bytes", str(max_bytes))
    _write(directory / "strict_limit", "1")
    record.finish(step)


def undo(step: Step, bdi: Path = BDI) -> list[str]:
    """Write back the values found (nothing to do when the device is gone)."""
    directory = _directory(bdi, step.target)
    found = step.detail.get("found") or {}
    if not directory.is_dir() or not found:
        return []
    ratio = "max_ratio_fine" if "max_ratio_fine" in found else "max_ratio"
    _write(directory / ratio, str(found[ratio]))
    _write(directory / "strict_limit", str(found["strict_limit"]))
    return [f"dirty limit on {step.target} ({step.label})"]


def present(step: Step, bdi: Path = BDI) -> bool:
    """Whether the limit is still set."""
    path = _directory(bdi, step.target) / "strict_limit"
    return path.exists() and path.read_text().strip() == "1"


def _directory(bdi: Path, majmin: str) -> Path:
    major, _, minor = majmin.partition(":")
    if not (digits(major) and digits(minor)):
        raise system.LabError(f"not a device number: {majmin!r}")
    return bdi / majmin


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as err:
        raise system.LabError(f"cannot write {text!r} to {path}: {err.strerror}") from None
