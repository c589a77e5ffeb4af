"""`iotuner tune --idle-below PCT --io-cap MB` as a user runs it: the bounds the daemon's re-tune
uses. One small tune on a loop device over memory, busy until the tune says it waits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device
from tuner.trials.diskstats import read_diskstats

CAP_MB = 100


@pytest.mark.lab
# Beside other tests: its own loop device, a bound on bytes and no figure; the device stays busy
# until the tune says it waits, however long the tune takes to start.
@pytest.mark.lab_parallel
def test_trials_wait_for_an_idle_device_and_move_at_most_the_cap(tmp_path: Path) -> None:
    """~25 s: busy until the tune says it waits, then 10 trials of 1 s (3 baseline, 1 search
    trial within --time 1, 3 rounds of 2 to confirm), each after a 1 s idle sample."""
    with loop_device(256) as name:
        device = f"/dev/{name}"
        subprocess.run(["dd", "if=/dev/urandom", f"of={device}", "bs=1M", "count=256",
                        "status=none"], check=True)  # fmt: skip
        before = read_diskstats([name])[name]
        # Direct reads until the tune says it waits for them (fio reports what it read when
        # interrupted); the runtime only bounds a tune that never says so.
        job = subprocess.Popen(
            ["fio", "--name=busy", f"--filename={device}", "--rw=randread", "--bs=4k",
             "--direct=1", "--ioengine=libaio", "--iodepth=8", "--time_based=1",
             "--runtime=90s", "--output-format=json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            time.sleep(0.5)
            returncode, out_json, err = tune_stopping_at_the_wait(job, tmp_path, device)
        finally:
            if job.poll() is None:
                job.send_signal(signal.SIGINT)
            out, _ = job.communicate(timeout=30)
        moved = read_diskstats([name])[name] - before
    assert returncode == 0, err
    assert f"waiting for {name} " in err
    doc = json.loads(out_json)
    assert doc["baseline"]["mbps"] > 0
    background = json.loads(out[out.find("{") :])["jobs"][0]["read"]["io_bytes"]
    # Uncapped, a 1 s trial here reads gigabytes (the device is memory).
    assert moved.read_bytes - background <= len(doc["trials"]) * CAP_MB * 10**6


def tune_stopping_at_the_wait(
    busy: subprocess.Popen[str], tmp_path: Path, device: str
) -> tuple[int, str, str]:
    """The small tune with --idle-below and --io-cap; `busy` is interrupted once the tune says
    it waits for the device. Its exit code, stdout and stderr."""
    command = [sys.executable, "-m", "tuner.cli", "tune", "--target", device, "--budget", "3",
               "--runtime", "1", "--ramp", "0", "--time", "1", "--idle-below", "10",
               "--io-cap", str(CAP_MB), "--json"]  # fmt: skip
    env = {**os.environ, "IOTUNER_STATE_DIR": str(tmp_path / "state")}
    stdout = tmp_path / "tune.json"  # a file: a full pipe must not stall the tune
    err = ""
    with (
        stdout.open("w") as into,
        subprocess.Popen(command, stdout=into, stderr=subprocess.PIPE, text=True, env=env) as tune,
    ):
        deadline = threading.Timer(300, tune.kill)  # as iotuner()'s timeout
        deadline.start()
        try:
            assert tune.stderr is not None
            for line in tune.stderr:  # until the tune ends
                if "waiting for " in line and "waiting for " not in err:
                    busy.send_signal(signal.SIGINT)
                err += line
            tune.wait()
        finally:
            deadline.cancel()
    assert tune.returncode != -signal.SIGKILL, f"the tune took over 300 s: {err}"
    return tune.returncode, stdout.read_text(), err


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
