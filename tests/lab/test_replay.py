"""A two-group workload captured with its trace, replayed by fio from iotuner's iolog onto
the same modelled disk, and the replay captured: its statistics within 15 % of the
original's (issue 32 point 2)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from tests.cli import iotuner
from tuner.capture.fingerprint import load
from tuner.lab import lab_up, parse_spec

pytestmark = pytest.mark.lab

DISK = (
    "disks: [{name: d0, size: 2GiB, model: {kind: hdd, rpm: 7200, seek_full_ms: 16, "
    "queue_depth: 32, seed: 1}}]"
)
"""A modelled 7200 rpm disk: its service times (milliseconds of seek and rotation) make the
queue depth a property of the workload and the disk, not of the machine's CPU load, as it
is on a loop device whose requests take microseconds."""
READER = (
    "--name=reader", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bssplit=4k/70:16k/30",
    "--iodepth=2", "--rate_iops=60", "--size=1536M",
)  # fmt: skip
"""A paced direct random reader of 4 and 16 KiB, two requests deep (a database's backends)."""
APPENDER = (
    "--name=appender", "--ioengine=psync", "--rw=write", "--bs=8k", "--fdatasync=4",
    "--offset=1600M", "--size=256M", "--rate=512k",
)  # fmt: skip
"""A buffered appender of 8 KiB calling fdatasync every 4 writes (its WAL writer)."""


def test_a_replay_of_the_trace_matches_the_captured_workload(state: Path, tmp_path: Path) -> None:
    """About 15 s: the lab, 5.5 s of capture for the original, then the replay of its 4 s."""
    device = lab_up(parse_spec(DISK, "replay", "replay")).disks[0].device
    name = Path(device).name
    original, trace = tmp_path / "original.json", tmp_path / "original.trace"

    def run_fio() -> None:
        common = (f"--filename={device}", "--time_based", "--runtime=4", "--startdelay=1")
        subprocess.run(["fio", "--output=/dev/null", *common, *READER, *APPENDER], check=True)

    worker = threading.Thread(target=run_fio)
    worker.start()
    done = iotuner("capture", "--device", name, "--seconds", "5.5", "--out", str(original),
                   "--trace", str(trace))  # fmt: skip
    worker.join()
    assert done.returncode == 0, done.stderr
    dev = load(original).busiest()
    assert dev is not None and 0.2 < dev["read_share"] < 0.95, dev["read_share"]
    assert dev["flushes"]["writes_per_sync"] is not None
    assert dev["queue_depth"]["mean"] > 0.3  # the disk holds requests long enough to queue
    replay = iotuner("capture", "--replay-trace", str(trace), "--device", name,
                     "--against", str(original), "--destroy-data", "--json")  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    rows = {row["name"]: row for row in json.loads(replay.stdout)["rows"]}
    for statistic in ("request sizes (histogram)", "read share (bytes)", "queue depth (mean)",
                      "requests/s", "writes per flush"):  # fmt: skip
        assert rows[statistic]["difference"] <= 0.15, rows[statistic]
