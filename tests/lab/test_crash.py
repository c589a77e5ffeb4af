"""kill -9 in the middle of `lab up`: the record lets `lab down` remove everything anyway."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.lab.conftest import assert_nothing_left, snapshot

pytestmark = pytest.mark.lab


def first_loop_device(record: Path) -> str | None:
    try:
        steps = json.loads(record.read_text())["steps"]
    except (OSError, ValueError):
        return None  # not written yet (it is replaced atomically, never seen half-written)
    return next((s["device"] for s in steps if s["kind"] == "loop" and s["device"]), None)


def start_up_and_wait_for_a_loop(state: Path) -> tuple[subprocess.Popen[str], str]:
    """`lab up three-disks-one-bus` in its own session, once its first loop device exists."""
    up = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "lab", "up", "three-disks-one-bus"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    try:
        while (device := first_loop_device(state / "lab.json")) is None:
            assert up.poll() is None, "lab up ended before creating a loop device"
            assert time.monotonic() < deadline, "no loop device after 120 s"
            time.sleep(0.02)
    except BaseException:
        os.killpg(up.pid, signal.SIGKILL)
        up.wait()
        raise
    return up, device


@pytest.mark.lab_parallel  # its own lab, checked by path and its own record, no figure
def test_kill_9_mid_up_then_down_removes_everything(state: Path) -> None:
    up, device = start_up_and_wait_for_a_loop(state)
    # The whole session: the command and whatever mkfs or losetup it was running.
    os.killpg(up.pid, signal.SIGKILL)
    up.wait()
    assert Path(f"/sys/block/{Path(device).name}/loop/backing_file").exists()
    record = snapshot(state)
    assert record.state == "building"

    status = iotuner("lab", "status")
    assert status.returncode == 1
    assert "`lab up` did not finish" in status.stdout

    down = iotuner("lab", "down")
    assert down.returncode == 0, down.stderr
    assert f"removed loop {device} (bus0)" in down.stdout
    assert_nothing_left(record)


@pytest.mark.lab_parallel  # its own lab, checked by path and its own record, no figure
def test_sigterm_mid_up_removes_everything_itself(state: Path) -> None:
    up, device = start_up_and_wait_for_a_loop(state)
    record = snapshot(state)
    up.terminate()  # SIGTERM to the command only, as a service manager sends it
    _, err = up.communicate(timeout=120)
    assert up.returncode == 143, err
    assert_nothing_left(record)
    assert any(s.kind == "loop" and s.device == device for s in record.steps)
