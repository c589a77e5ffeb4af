"""Short direct-read fio runs on lab devices, for the tests that measure the lab itself."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence


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
