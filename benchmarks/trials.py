"""The trial engine measured: a direct read on an unthrottled loop device, and the page-cache
guard's flag rate on repeated buffered trials with and without dropping caches.

    python -m benchmarks.trials [--repeat 8]        (root: creates loop devices in /dev/shm)

Everything it creates (loop devices, a mount, /dev/shm files) is removed at the end, also
when it fails. Prints a JSON document and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuner.rules.installed import load_rule_base
from tuner.rules.model import Workload
from tuner.trials import AppParams, TrialTarget, run_trial

GiB = 1 << 30


def sh(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


@contextmanager
def shm_loop(stack: ExitStack, size: int, name: str) -> Iterator[str]:
    """A loop device over a filled /dev/shm file, detached and removed on exit."""
    path = Path(f"/dev/shm/iotuner-bench-{os.getpid()}-{name}.img")
    stack.callback(path.unlink, missing_ok=True)
    fill(path, size)
    with _loop_over(str(path)) as device:
        yield device


def fill(path: Path, size: int) -> None:
    block = os.urandom(1 << 20)
    with path.open("wb") as out:
        for _ in range(size >> 20):
            out.write(block)


@contextmanager
def ext4(device: str) -> Iterator[Path]:
    """An ext4 file system on `device`, mounted on a temporary directory."""
    sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", device)
    with tempfile.TemporaryDirectory(prefix="iotuner-bench-") as point:
        sh("mount", device, point)
        try:
            yield Path(point)
        finally:
            sh("umount", point)


def direct_read(device: str, repeat: int, stream: Workload) -> dict[str, Any]:
    """3 s direct 1 MiB reads (1 s ramp) on the device, `repeat` times."""
    target = TrialTarget.device(device)
    runs = [run_trial(target, stream, AppParams(bs="1M", direct=True), 3, 1) for _ in range(repeat)]
    mbps = [r.mbps for r in runs]
    ratios = [r.device_bytes / r.fio_bytes for r in runs]
    return {
        "mbps_median": round(statistics.median(mbps)),
        "mbps_min": round(min(mbps)),
        "mbps_max": round(max(mbps)),
        "device_over_fio_median": round(statistics.median(ratios), 3),
        "flagged": sum(r.flagged is not None for r in runs),
        "seconds_median": round(statistics.median(r.seconds for r in runs), 2),
    }


def flag_rate(target: TrialTarget, workload: Workload, drop: bool, repeat: int) -> dict[str, Any]:
    """Repeated buffered trials (2 s, 1 s ramp); how many the guard flags, and their MB/s."""
    runs = [run_trial(target, workload, None, 2, 1, drop_caches=drop) for _ in range(repeat)]
    ratios = [r.device_bytes / r.fio_bytes for r in runs]
    reasons = {
        part.rsplit(": ", 1)[-1] for r in runs if r.flagged for part in r.flagged.split("; ")
    }
    return {
        "flagged": sum(r.flagged is not None for r in runs),
        "trials": len(runs),
        "mbps_median": round(statistics.median(r.mbps for r in runs)),
        "device_over_fio_median": round(statistics.median(ratios), 3),
        "reasons": sorted(reasons),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=8)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("benchmarks.trials: needs root (loop devices, drop_caches)")
    stream = load_rule_base().workload("stream-read")
    assert stream is not None
    keep = replace(stream, name="stream-read invalidate=0", fio={**stream.fio, "invalidate": 0})
    out: dict[str, Any] = {"workload": dict(stream.fio)}
    with ExitStack() as stack:
        raw = stack.enter_context(shm_loop(stack, GiB, "raw"))
        out["direct_1m_read_3s"] = direct_read(raw, args.repeat, stream)
        lower = stack.enter_context(shm_loop(stack, 5 * GiB, "fs"))
        point = stack.enter_context(ext4(lower))
        rows = {}
        # 2 GiB: more than a 3 s buffered trial reads here, so no pass starts over.
        with TrialTarget.scratch(point, 2 * GiB) as scratch:
            for label, workload in (("scratch file", stream), ("scratch, invalidate=0", keep)):
                for drop in (True, False):
                    rows[f"{label}, drop_caches={drop}"] = flag_rate(
                        scratch, workload, drop, args.repeat
                    )
        # The lab's stacking without direct I/O: a loop device over a file on ext4.
        backing = point / "disk.img"
        stack.callback(backing.unlink, missing_ok=True)
        fill(backing, 2 * GiB)
        upper = stack.enter_context(_loop_over(str(backing)))
        for drop in (True, False):
            rows[f"loop over a cached file, drop_caches={drop}"] = flag_rate(
                TrialTarget.device(upper), stream, drop, args.repeat
            )
        out["buffered_flag_rate"] = rows
    print(json.dumps(out, indent=1))
    print("\n| case | flagged | MB/s (median) | device/fio | reasons |\n|---|---|---|---|---|")
    for case, row in out["buffered_flag_rate"].items():
        reasons = "; ".join(row["reasons"]) or "-"
        print(
            f"| {case} | {row['flagged']}/{row['trials']} | {row['mbps_median']} "
            f"| {row['device_over_fio_median']} | {reasons} |"
        )


@contextmanager
def _loop_over(backing: str) -> Iterator[str]:
    device = sh("losetup", "--find", "--show", backing)
    try:
        yield device
    finally:
        sh("losetup", "-d", device)


if __name__ == "__main__":
    main()
