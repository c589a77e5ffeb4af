"""Real trials on loop devices over /dev/shm: figures, the page-cache guard, the scratch file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.trials.conftest import Loops
from tuner.errors import IotunerError
from tuner.rules.installed import load_rule_base
from tuner.trials import AppParams, TrialTarget, run_trial
from tuner.trials.fio import FIO_MISSING
from tuner.trials.flags import CACHE_BELOW
from tuner.trials.pagecache import TOLERANCE

pytestmark = pytest.mark.lab
WORKLOADS = {w.name: w for w in load_rule_base().workloads}


def test_a_direct_read_measures_the_device(loops: Loops) -> None:
    target = TrialTarget.device(loops.loop(256 << 20))
    result = run_trial(target, WORKLOADS["stream-read"], AppParams(bs="1M", direct=True), 2, 1)
    # A loop device over memory on a busy 2-core VM: hundreds of MB/s to several GB/s.
    assert 50 < result.mbps < 50_000
    assert result.iops == pytest.approx(result.mbps * 1e6 / (1 << 20), rel=0.01)
    assert result.p99_latency_us is not None and result.p99_latency_us > 0
    assert result.flagged is None
    # In fio's measurement window the device moved what fio read.
    assert result.device_bytes / result.fio_bytes == pytest.approx(1, abs=TOLERANCE)
    assert 3 <= result.seconds < 30


def test_a_buffered_reread_served_from_cache_is_flagged(loops: Loops) -> None:
    point = loops.mkfs_mount(loops.loop(128 << 20))
    # invalidate=0: fio keeps the file's pages between passes, as an application would; a
    # 16 MiB file read for 2 s is then read from memory after its first pass.
    cached = replace(
        WORKLOADS["stream-read"], fio={**WORKLOADS["stream-read"].fio, "invalidate": 0}
    )
    with TrialTarget.scratch(point, 16 << 20) as target:
        result = run_trial(target, cached, None, 2, 1)
    assert result.flagged is not None
    assert result.flagged.startswith("device moved ")
    assert "of fio's bytes: page cache" in result.flagged
    assert "data set 16.0 MiB smaller than the trial read" in result.flagged
    assert result.device_bytes < result.fio_bytes / 4


def test_a_buffered_reread_that_fio_invalidates_reaches_the_device(loops: Loops) -> None:
    point = loops.mkfs_mount(loops.loop(128 << 20))
    with TrialTarget.scratch(point, 16 << 20) as target:
        result = run_trial(target, WORKLOADS["stream-read"], None, 2, 1)
    # fio drops the file's pages before each pass: every pass is read from the device.
    assert result.flagged is None, result.flagged
    assert result.device_bytes == pytest.approx(result.fio_bytes, rel=0.1)


def test_a_buffered_write_to_a_scratch_file_reaches_the_device(loops: Loops) -> None:
    point = loops.mkfs_mount(loops.loop(256 << 20))
    with TrialTarget.scratch(point, 128 << 20) as target:
        result = run_trial(target, WORKLOADS["stream-write"], None, 2, 1)
    assert result.fio_bytes > 0 and result.mbps > 10
    assert result.flagged is None, result.flagged
    assert not list(point.glob("iotuner-scratch-*"))


def test_a_small_files_trial_lays_out_reads_and_removes_its_files(loops: Loops) -> None:
    point = loops.mkfs_mount(loops.loop(256 << 20))
    few = replace(WORKLOADS["small-files"], fio={**WORKLOADS["small-files"].fio, "nrfiles": 16})
    with TrialTarget.scratch(point, 8 << 20) as target:
        result = run_trial(target, few, None, 2, 1)
        files = Path(target.directory or "").glob(f"{target.scratch_prefix}.fio.*")
        assert len(list(files)) == 4 * 16
    # Over many files a job makes one pass (fio hangs with time_based there): 4 MiB is read
    # within the ramp, which the trial says rather than report a figure of nothing.
    assert result.flagged == (
        "data set 4.0 MiB read through in 0.0 s of the 2 s runtime: too small to measure"
    )
    assert sorted(p.name for p in point.iterdir()) == ["lost+found"]


@pytest.mark.lab_parallel  # refused before fio runs, on its own loop device
def test_missing_fio_is_one_line(
    loops: Loops, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = TrialTarget.device(loops.loop(64 << 20))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(IotunerError) as caught:
        run_trial(target, WORKLOADS["stream-read"], None, 1, 0)
    assert str(caught.value) == FIO_MISSING


def test_reads_served_by_a_cache_below_a_loop_device_are_flagged(loops: Loops) -> None:
    # The lab's arrangement without direct I/O: a loop device over a file on a file system
    # on another device. fio invalidates the upper device's pages before each pass, but the
    # file's pages stay: after the first pass the lower device moves nothing.
    point = loops.mkfs_mount(loops.loop(128 << 20))
    upper = loops.over(str(loops.file(32 << 20, point)))
    lower = loops.devices[0].removeprefix("/dev/")
    result = run_trial(TrialTarget.device(upper), WORKLOADS["stream-read"], None, 2, 1)
    name = upper.removeprefix("/dev/")
    # Its own flag, whatever else the trial says: under load (eight busy loops beside it) the
    # double loop's throughput was still trending at the ceiling and "not at steady state"
    # followed it.
    below = [flag.message for flag in result.flags if flag.kind == CACHE_BELOW]
    assert len(below) == 1, result.flagged
    assert below[0].startswith(f"{lower} under {name} moved ")
    assert below[0].endswith(f"of {name}'s bytes: page cache below")
