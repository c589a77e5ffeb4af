"""Disk trials at steady state on the modelled hard disk (tuner/trials/steady.py): both sides
of the readahead guard.

Several buffered streams with large windows keep two windows each in flight, bytes the device
read that the readers consume after the window: six streams of 8 MiB windows in a fixed 3 s
window read 140 % of fio's bytes and were set aside as "readahead beyond what fio read". The
memory-mapped random reader whose huge readaround pulled its data into memory (x432 claimed,
14 IOPS against 338 re-measured: docs/trials.md) must still be caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.conftest import module_lab
from tuner.lab import LabDisk, load_spec
from tuner.rules.model import Workload
from tuner.trials.flags import PAGE_CACHE, READAHEAD
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import run_trial

pytestmark = [pytest.mark.lab, pytest.mark.lab_parallel]  # no figure held; its own lab's queue

STREAMS = Workload("concurrent-streams", "", {"rw": "read", "bs": "64k", "iodepth": 1,
                   "numjobs": 6, "direct": 0, "ioengine": "psync"})  # fmt: skip
MMAP = Workload("random-read", "", {"rw": "randread", "bs": "4k", "ioengine": "mmap",
                "direct": 0, "iodepth": 1, "numjobs": 2, "fadvise_hint": 0},
                region={"size": "128m"})  # fmt: skip


@pytest.fixture(scope="module")
def disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabDisk]:
    """The built-in `hdd` lab's disk, for this module's trials."""
    with module_lab(tmp_path_factory, load_spec("hdd")) as (lab, _):
        yield lab.disks[0]


def _readahead(disk: LabDisk, kb: int) -> Path:
    path = Path(f"/sys/block/{Path(disk.device).name}/queue/read_ahead_kb")
    path.write_text(f"{kb}\n")
    return path


@pytest.mark.parametrize("window_kb", [4096, 8192])
def test_six_streams_with_large_windows_are_not_flagged(disk: LabDisk, window_kb: int) -> None:
    """Old code: 8192 KB flagged at 140 % of fio's bytes in its 3 s window."""
    path = _readahead(disk, window_kb)
    try:
        result = run_trial(TrialTarget.device(disk.device), STREAMS, runtime_s=3, ramp_s=1)
    finally:
        path.write_text("128\n")
    print(f"{window_kb} KB: {result.mbps:.1f} MB/s, x{result.amplification:.2f} of fio's bytes, "
          f"{result.measured_s:.1f} s settled={result.settled}", result.flagged)  # fmt: skip
    assert not [flag for flag in result.flags if flag.kind == READAHEAD], result.flagged
    assert result.length is not None and result.measured_s >= result.length.floor_s * 0.95


def test_the_mmap_readers_huge_readaround_is_still_caught(disk: LabDisk) -> None:
    """40988 KB of readaround pulls the readers' 128 MiB into memory within the ramp: fio then
    reads memory, far more than the device moves, and the trial is flagged page cache."""
    path = _readahead(disk, 40988)
    try:
        result = run_trial(TrialTarget.device(disk.device), MMAP, runtime_s=3, ramp_s=1)
    finally:
        path.write_text("128\n")
    print(f"40988 KB: {result.iops:.0f} IOPS, device x{result.amplification}", result.flagged)
    assert PAGE_CACHE in {flag.kind for flag in result.flags}, result.flagged
