"""fio's measurement window against the device's counters: a late report time must not leave
the device's bytes out of a trial that has no ramp."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.trials.diskstats import Counters, Sampler
from tuner.trials.trial import measured_window

MB = 10**6


def sampled(tmp_path: Path, points: list[tuple[float, int]]) -> Sampler:
    """A sampler holding these (time, bytes read by loop1) samples, as its thread records
    them."""
    sampler = Sampler(["loop1"], tmp_path / "diskstats")
    for when, read in points:
        sampler.times.append(when)
        sampler.samples.append({"loop1": Counters(read, 0)})
    return sampler


# 100 MB read in 0.4 s from t=100.0; fio's report stamped 0.2 s after the last read.
RUN = [(100.0, 0), (100.2, 50 * MB), (100.4, 100 * MB), (100.6, 100 * MB)]


def test_without_a_ramp_the_whole_run_is_compared(tmp_path: Path) -> None:
    sampler = sampled(tmp_path, RUN)
    start, end = measured_window({"timestamp_ms": 100_600}, 0.4, sampler, ramp_s=0)
    assert sampler.between(start, end, ["loop1"]).read_bytes == 100 * MB


def test_with_a_ramp_the_window_is_the_runtime_before_the_report(tmp_path: Path) -> None:
    """What the ramp read stays out: the runtime before the report time."""
    sampler = sampled(tmp_path, RUN)
    start, end = measured_window({"timestamp_ms": 100_600}, 0.4, sampler, ramp_s=1)
    assert (start, end) == pytest.approx((100.2, 100.6))
    assert sampler.between(start, end, ["loop1"]).read_bytes == pytest.approx(50 * MB, rel=1e-6)


def test_without_a_report_time_the_whole_run_is_compared(tmp_path: Path) -> None:
    sampler = sampled(tmp_path, RUN)
    assert measured_window({}, 0.4, sampler, ramp_s=1) == (100.0, 100.6)
