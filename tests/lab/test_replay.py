"""A two-group workload captured with its trace, replayed by fio from iotuner's iolog onto
the same device, and the replay captured: its statistics within 15 % of the original's
(issue 32 point 2)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device
from tuner.capture.fingerprint import load

pytestmark = pytest.mark.lab

READER = (
    "--name=reader", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bssplit=4k/70:16k/30",
    "--iodepth=2", "--rate_iops=250", "--size=256M",
)  # fmt: skip
"""A paced direct random reader of 4 and 16 KiB, two requests deep (a database's backends)."""
APPENDER = (
    "--name=appender", "--ioengine=psync", "--rw=write", "--bs=8k", "--fdatasync=4",
    "--offset=320M", "--size=64M", "--rate=1m",
)  # fmt: skip
"""A buffered appender of 8 KiB calling fdatasync every 4 writes (its WAL writer)."""


def test_a_replay_of_the_trace_matches_the_captured_workload(tmp_path: Path) -> None:
    """About 15 s: 5 s of capture for the original, then the replay of its 4 s."""
    with loop_device(size_mb=512) as name:
        original, trace = tmp_path / "original.json", tmp_path / "original.trace"

        def run_fio() -> None:
            common = (f"--filename=/dev/{name}", "--time_based", "--runtime=4",
                      "--startdelay=1")  # fmt: skip
            subprocess.run(["fio", "--output=/dev/null", *common, *READER, *APPENDER],
                           check=True)  # fmt: skip

        worker = threading.Thread(target=run_fio)
        worker.start()
        done = iotuner("capture", "--device", name, "--seconds", "5.5", "--out", str(original),
                       "--trace", str(trace))  # fmt: skip
        worker.join()
        assert done.returncode == 0, done.stderr
        dev = load(original).busiest()
        assert dev is not None and 0.2 < dev["read_share"] < 0.95, dev["read_share"]
        assert dev["flushes"]["writes_per_sync"] is not None
        replay = iotuner("capture", "--replay-trace", str(trace), "--device", name,
                         "--against", str(original), "--destroy-data", "--json")  # fmt: skip
        assert replay.returncode == 0, replay.stderr
        rows = {row["name"]: row for row in json.loads(replay.stdout)["rows"]}
        for statistic in ("request sizes (histogram)", "read share (bytes)",
                          "queue depth (mean)", "requests/s"):  # fmt: skip
            assert rows[statistic]["difference"] <= 0.15, rows[statistic]
