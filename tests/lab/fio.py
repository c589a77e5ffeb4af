"""Short direct-read fio runs on lab devices, for the tests that measure the lab itself."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any


def direct_read_mbps(devices: Sequence[str], block: str = "1M", seconds: int = 3) -> float:
    """Total MB/s (10^6 bytes/s) of direct reads, one job per device, iodepth 8."""
    cmd = [
        "fio", "--output-format=json", "--rw=read", f"--bs={block}", "--iodepth=8",
        "--ioengine=libaio", "--direct=1", "--ramp_time=1", f"--runtime={seconds}",
        "--time_based", "--group_reporting",
    ]  # fmt: skip
    for index, device in enumerate(devices):
        cmd += [f"--name=d{index}", f"--filename={device}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
    return float(json.loads(done.stdout)["jobs"][0]["read"]["bw_bytes"]) / 1e6


def fio_job(
    device: str, rw: str, block: str, depth: int, seconds: float, *extra: str, ramp: float = 1
) -> dict[str, Any]:
    """One fio job on `device` with direct I/O (libaio); its JSON section for `rw`'s direction."""
    cmd = [
        "fio", "--output-format=json", "--name=j", f"--filename={device}", f"--rw={rw}",
        f"--bs={block}", f"--iodepth={depth}", "--ioengine=libaio", "--direct=1",
        f"--ramp_time={ramp:g}", f"--runtime={seconds:g}", "--time_based", "--randseed=7",
        *extra,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    job = json.loads(done.stdout)["jobs"][0]
    return dict(job["write" if "write" in rw else "read"])


def fio_jobs(
    jobs: Sequence[Sequence[str]], seconds: float, *common: str, ramp: float = 1
) -> dict[str, Any]:
    """Several fio jobs at once, reported as one group: each job is its own options
    (`--filename=...`, `--offset=...`); `common` go to all. The group's read section."""
    cmd = [
        "fio", "--output-format=json", f"--ramp_time={ramp:g}", f"--runtime={seconds:g}",
        "--time_based", "--group_reporting", "--randseed=7", *common,
    ]  # fmt: skip
    for index, options in enumerate(jobs):
        cmd += [f"--name=j{index}", *options]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return dict(json.loads(done.stdout)["jobs"][0]["read"])
