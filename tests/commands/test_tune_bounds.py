"""`iotuner tune --idle-below PCT --io-cap MB` as a user runs it: the bounds the daemon's re-tune
uses. One small tune on a loop device over memory, busy for its first seconds."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device
from tuner.trials.diskstats import read_diskstats

CAP_MB = 100


@pytest.mark.lab
def test_trials_wait_for_an_idle_device_and_move_at_most_the_cap(tmp_path: Path) -> None:
    """~35 s: 8 s busy, then 10 trials of 1 s (3 baseline, 1 search trial within --time,
    3 rounds of 2 to confirm), each after a 1 s idle sample; on a loaded machine up to 80 s."""
    with loop_device(256) as name:
        device = f"/dev/{name}"
        subprocess.run(["dd", "if=/dev/urandom", f"of={device}", "bs=1M", "count=256",
                        "status=none"], check=True)  # fmt: skip
        before = read_diskstats([name])[name]
        # Direct reads for 8 s: busy still when the tune (seconds to start) wants its baseline.
        job = subprocess.Popen(
            ["fio", "--name=busy", f"--filename={device}", "--rw=randread", "--bs=4k",
             "--direct=1", "--ioengine=libaio", "--iodepth=8", "--time_based=1",
             "--runtime=8s", "--output-format=json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            time.sleep(0.5)
            result = iotuner("tune", "--target", device, "--budget", "3", "--runtime", "1",
                             "--ramp", "0", "--time", "1",
                             "--idle-below", "10", "--io-cap", str(CAP_MB), "--json",
                             state=tmp_path / "state")  # fmt: skip
        finally:
            out, _ = job.communicate(timeout=30)
        moved = read_diskstats([name])[name] - before
    assert result.returncode == 0, result.stderr
    assert f"waiting for {name} " in result.stderr
    doc = json.loads(result.stdout)
    assert doc["baseline"]["mbps"] > 0
    background = json.loads(out[out.find("{") :])["jobs"][0]["read"]["io_bytes"]
    # Uncapped, a 1 s trial here reads gigabytes (the device is memory).
    assert moved.read_bytes - background <= len(doc["trials"]) * CAP_MB * 10**6


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--idle-below", "0"),
        ("--idle-below", "101"),
        ("--io-cap", "0"),
        ("--ramp", "-1"),
        ("--ramp", "61"),
    ],
)
def test_bounds_out_of_range_are_bad_input(option: str, value: str) -> None:
    result = iotuner("tune", "--target", "/dev/null", option, value)
    assert result.returncode == 2
    assert option in result.stderr
