"""A small-files trial lays its files out without fio's fsync after each one (unseen draws 2
and 25: 8192 files laid out at 34 ms a file on a RAID-5 of hard disks stalled the baseline
past its 144 s timeout), and its timeout grows with the files it must create."""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tuner.lab import lab_down, lab_up, parse_spec
from tuner.rules.installed import load_rule_base
from tuner.trials import TrialTarget, run_trial
from tuner.trials.fio import job_text
from tuner.trials.trial import LAYOUT_FILE_S, layout_seconds

SMALL = next(w for w in load_rule_base().workloads if w.name == "small-files")
FILES = 128  # a job; the rule base's small-files workload runs 4 jobs: 512 files of 64 KiB

HDD = """
name: layout-hdd
disks:
  - {name: d0, fs: xfs, size: 1GiB, model: {kind: hdd, rpm: 5400, outer_mbps: 120,
     inner_mbps: 55, zones: 24, seek_track_ms: 1.5, seek_full_ms: 24, overhead_ms: 0.3,
     cache_kib: 8192, queue_depth: 32, seed: 2}}
"""


def test_the_layout_s_time_grows_with_the_files_to_create() -> None:
    assert layout_seconds({"nrfiles": 8192, "numjobs": 1}) == pytest.approx(8192 * LAYOUT_FILE_S)
    assert layout_seconds({"nrfiles": 100, "numjobs": 4}) == pytest.approx(400 * LAYOUT_FILE_S)


@pytest.mark.lab  # serial: it holds two durations measured side by side to an ordering
def test_a_small_files_trial_takes_less_than_laying_out_with_a_fsync_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 5400 rpm disk model: fio's own layout of 512 files with create_fsync (its default),
    then a whole trial of the same files (its layout, a 2 s run), side by side. About 25 s:
    the fsync'd layout is what the old trial paid, and it must be long enough to tell apart
    from the trial on a loaded machine. Before, the trial took as long as that layout."""
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(tmp_path / "state"))
    lab = lab_up(parse_spec(HDD, "layout.yaml", "layout-hdd"))
    try:
        assert lab.mountpoint is not None
        options = {**SMALL.fio, "nrfiles": FILES}
        fsynced = Path(lab.mountpoint, "fsynced")
        fsynced.mkdir()
        job = tmp_path / "layout.fio"
        text = job_text({**options, "create_fsync": 1}, runtime_s=0, ramp_s=0,
                        directory=str(fsynced), file_prefix="f", create_only=True)  # fmt: skip
        job.write_text(text)
        started = time.monotonic()
        subprocess.run(["fio", str(job)], check=True, capture_output=True, timeout=600)
        one_fsync_each = time.monotonic() - started
        with TrialTarget.scratch(lab.mountpoint, 8 << 20) as target:
            started = time.monotonic()
            result = run_trial(target, replace(SMALL, fio=options), None, 2, 1)
            trial = time.monotonic() - started
        print(f"layout with a fsync a file {one_fsync_each:.1f} s; the whole trial {trial:.1f} s")
        assert result.fio_bytes > 0
        # Measured 4.5 s against 23.7 (the old trial: 23.5 against 23.5); half leaves room for
        # a burst of load beside either.
        assert trial < 0.5 * one_fsync_each, (trial, one_fsync_each)
    finally:
        lab_down()
