"""What the lab benchmarks measure with: fio on a lab device, and the CPU time the lab's
servers (nbdkit, nbdfuse, the delay line) spend meanwhile."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil


def fio(device: str, rw: str, block: str, depth: int, seconds: float, *extra: str) -> Any:
    """One direct-I/O fio job; its section for `rw`'s direction."""
    cmd = [
        "fio", "--output-format=json", "--name=j", f"--filename={device}", f"--rw={rw}",
        f"--bs={block}", f"--iodepth={depth}", "--ioengine=libaio", "--direct=1",
        "--ramp_time=1", f"--runtime={seconds:g}", "--time_based", *extra,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    return json.loads(done.stdout)["jobs"][0]["write" if "write" in rw else "read"]


def fio_group(jobs: list[list[str]], seconds: float, *common: str) -> Any:
    """Several fio jobs at once (each its own options: `--filename=...`, `--offset=...`;
    `common` go to all), reported as one group: the group's read section."""
    cmd = [
        "fio", "--output-format=json", "--ramp_time=1", f"--runtime={seconds:g}",
        "--time_based", "--group_reporting", *common,
    ]  # fmt: skip
    for index, options in enumerate(jobs):
        cmd += [f"--name=j{index}", *options]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    return json.loads(done.stdout)["jobs"][0]["read"]


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU seconds of `pids` (threads included)."""
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def with_cpu(pids: list[int], seconds: float, job: Callable[[], Any]) -> tuple[Any, float]:
    """Run `job` (a fio run of `seconds` after a 1 s ramp); its result and the servers' CPU
    share of one core over the measured seconds."""
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", job()))
    worker.start()
    time.sleep(1.5)  # past fio's ramp
    before, started = cpu_seconds(pids), time.monotonic()
    time.sleep(max(0.5, seconds - 1))
    used = (cpu_seconds(pids) - before) / (time.monotonic() - started)
    worker.join()
    return box["result"], used
