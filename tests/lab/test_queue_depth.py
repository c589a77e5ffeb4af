"""A trial of scheduler none with a shallow queue, restored, leaves the device its whole
queue: the kernel keeps a tag depth written under none through later scheduler changes, and
sysfs shows it nowhere, so only the commands in flight tell (tuner/tunables/block.py,
full_tag_depth)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tuner.lab import lab_up, load_spec
from tuner.tunables.engine import TunableEngine

pytestmark = pytest.mark.lab


def in_flight_at_depth_32(device: str) -> int:
    """The most requests the device held at once while fio kept 32 direct reads queued."""
    name = device.removeprefix("/dev/")
    fio = subprocess.Popen(
        ["fio", "--name=q", f"--filename={device}", "--rw=randread", "--bs=4k", "--iodepth=32",
         "--ioengine=libaio", "--direct=1", "--runtime=2", "--time_based"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    most = 0
    try:
        end = time.monotonic() + 1.5
        time.sleep(0.5)
        while time.monotonic() < end:
            reads, writes = Path(f"/sys/block/{name}/inflight").read_text().split()
            most = max(most, int(reads) + int(writes))
            time.sleep(0.05)
    finally:
        assert fio.wait(timeout=30) == 0
    return most


@pytest.mark.lab_parallel  # its own lab disk; the kernel's request counts, no figure
def test_a_shallow_none_trial_restored_leaves_the_whole_queue(state: Path) -> None:
    device = lab_up(load_spec("hdd")).disks[0].device  # mq-deadline, like a hard disk's
    name = device.removeprefix("/dev/")
    before = in_flight_at_depth_32(device)
    with TunableEngine(Path("/"), None) as engine:
        engine.apply({("block.scheduler", name): "none", ("block.nr_requests", name): 8})
        shallow = in_flight_at_depth_32(device)
        engine.restore()
    after = in_flight_at_depth_32(device)
    print(f"requests in flight at depth 32: {before} before, {shallow} with none and 8, "
          f"{after} after the restore")  # fmt: skip
    assert before == 32 and shallow == 8
    assert after == 32, "the restored device took only the shallow trial's tags"
