"""fio's measurement window against the device's counters: placed on when fio's I/O happened,
not on fio's report time, which comes late on a loaded machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tuner.trials import pagecache
from tuner.trials.diskstats import Counters, Sampler
from tuner.trials.fio import FioResult, parse_result
from tuner.trials.flags import PAGE_CACHE, Flag
from tuner.trials.trial import measured_window, ramp_left_out

MB = 10**6
DATA = Path(__file__).parent / "data"


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
    start, end = measured_window({"timestamp_ms": 100_600}, 0.4, sampler, 0, ("loop1",))
    assert sampler.between(start, end, ["loop1"]).read_bytes == 100 * MB


def test_without_a_report_time_the_whole_run_is_compared(tmp_path: Path) -> None:
    sampler = sampled(tmp_path, RUN)
    assert measured_window({}, 0.4, sampler, 1, ("loop1",)) == (100.0, 100.6)


def recorded(name: str) -> tuple[dict[str, Any], Sampler, str]:
    """fio's report and the 20 ms device samples of a real trial, as run_trial took them."""
    record = json.loads((DATA / name).read_text())
    device = record["device"]
    sampler = Sampler([device], Path("/nonexistent"))
    sampler.times = record["times"]
    pairs = zip(record["read_bytes"], record["write_bytes"], strict=True)
    sampler.samples = [{device: Counters(read, write)} for read, write in pairs]
    return record["doc"], sampler, device


def judged(doc: dict[str, Any], sampler: Sampler, device: str, ramp_s: float) -> Flag | None:
    """The page-cache guard's verdict on a recorded trial, its window placed as run_trial
    places it."""
    fio = parse_result(doc)
    start, end = measured_window(doc, fio.runtime_s, sampler, ramp_s, (device,))
    moved = sampler.between(start, end, [device])
    return pagecache.compare(Counters(fio.read_bytes, 0), moved, sequential=False)


def left_out(doc: dict[str, Any], ramp_s: float) -> float:
    """ramp_left_out for a recorded trial: its job's options and cap are in fio's report."""
    options = dict(doc["global options"])
    return ramp_left_out(options, ramp_s, parse_result(doc), int(options["io_size"]))


def test_a_capped_reader_that_ended_in_its_ramp_is_judged_on_its_whole_run() -> None:
    """Recorded at load 9-10 (python busy loops on both cores beside the suite's own load):
    a direct random reader capped at 60 MB read it all in its 1 s ramp. fio reported 35 ms
    after the device's last read (its libaio teardown) and counted the whole run as its
    0.32 s runtime; the window before the report left 30 % of the device's reads out, and
    the trial was flagged "device moved 70% of fio's bytes: page cache"."""
    doc, sampler, device = recorded("late-report-in-ramp.json")
    stamp = doc["timestamp_ms"] / 1000
    moving = sampler.moving([device])
    assert moving is not None and stamp - moving[1] > 0.03  # the report came late
    fio = parse_result(doc)
    before_report = sampler.between(stamp - fio.runtime_s, stamp, [device])
    assert before_report.read_bytes / fio.read_bytes == pytest.approx(0.70, abs=0.01)

    assert judged(doc, sampler, device, left_out(doc, 1.0)) is None
    assert left_out(doc, 1.0) == 0  # all fio moved is in its figures
    start, end = measured_window(doc, fio.runtime_s, sampler, 0, (device,))
    moved = sampler.between(start, end, [device])
    assert moved.read_bytes == fio.read_bytes  # a direct reader: every byte reached the device


def test_a_capped_reader_past_its_ramp_is_judged_where_its_io_ran() -> None:
    """Recorded like the one above, paced so that the cap ended it 0.3 s after its ramp:
    the window before fio's report time held 85 % of fio's bytes (a late report and a start
    placed too late); the window ending where the device's reads ended holds 94 % (its edges
    are a 20 ms sample off)."""
    doc, sampler, device = recorded("late-report-past-ramp.json")
    fio = parse_result(doc)
    stamp = doc["timestamp_ms"] / 1000
    before_report = sampler.between(stamp - fio.runtime_s, stamp, [device])
    assert before_report.read_bytes / fio.read_bytes < 0.86

    start, end = measured_window(doc, fio.runtime_s, sampler, left_out(doc, 1.0), (device,))
    moved = sampler.between(start, end, [device])
    assert moved.read_bytes / fio.read_bytes > 0.93
    assert left_out(doc, 1.0) == 1.0  # fio left its ramp out
    moving = sampler.moving([device])
    assert moving is not None and end == moving[1] < stamp
    assert end - start == pytest.approx(fio.runtime_s)
    assert judged(doc, sampler, device, 1.0) is None


def test_a_reader_served_from_cache_keeps_its_window_when_its_device_goes_quiet(
    tmp_path: Path,
) -> None:
    """A reader paced at the device's rate fills its cache with 60 MB in the first 0.6 s of
    its ramp and reads the rest of its 2 s runtime from memory: the device is quiet from
    then on. A window ending where the device went quiet would hold the fill, 60 MB against
    fio's 60 MB, and pass; fio's clock, counted from the first read, ends it 3 s after."""
    fill = [(100.0 + i / 10, min(i, 6) * 10 * MB) for i in range(32)]
    sampler = sampled(tmp_path, fill)
    doc = {"timestamp_ms": 103_100}
    start, end = measured_window(doc, 2.0, sampler, 1.0, ("loop1",))
    moved = sampler.between(start, end, ["loop1"])
    flag = pagecache.compare(Counters(60 * MB, 0), moved, sequential=False)
    assert flag is not None and flag.kind == PAGE_CACHE
    assert (start, end) == pytest.approx((101.0, 103.0))


def test_a_readers_window_is_placed_by_reads_not_by_a_journal_write_before_it(
    tmp_path: Path,
) -> None:
    """The reader above on a file system whose journal wrote 1 MB as the sampler started, a
    second before fio's first read: counted from that write, the window would end at 103.0
    and hold the whole fill (60 MB, a pass); counted from the first read it is the run's."""
    sampler = Sampler(["loop1"], tmp_path / "diskstats")
    for i in range(42):
        sampler.times.append(100.0 + i / 10)
        fill = min(max(i - 10, 0), 6) * 10 * MB
        sampler.samples.append({"loop1": Counters(fill, MB if i else 0)})
    doc = {"timestamp_ms": 104_100}
    start, end = measured_window(doc, 2.0, sampler, 1.0, ("loop1",), reads_only=True)
    moved = sampler.between(start, end, ["loop1"])
    flag = pagecache.compare(Counters(60 * MB, 0), moved, sequential=False)
    assert flag is not None and flag.kind == PAGE_CACHE
    assert (start, end) == pytest.approx((102.0, 104.0))


def test_a_device_moving_until_the_report_ends_the_window_at_the_report(
    tmp_path: Path,
) -> None:
    """Another process's I/O (or writeback) moving the device until fio reports: the window
    is the runtime before the report, as fio's report time is the latest its I/O can end."""
    steady = [(100.0 + i / 10, i * 10 * MB) for i in range(40)]
    sampler = sampled(tmp_path, steady)
    start, end = measured_window({"timestamp_ms": 103_500}, 2.0, sampler, 1.0, ("loop1",))
    assert (start, end) == pytest.approx((101.5, 103.5))


def result(read: int, write: int = 0) -> FioResult:
    return FioResult(read, write, 100.0, 100.0, None, 0.5)


def test_the_ramp_left_out_of_fios_figures() -> None:
    reader = {"rw": "randread", "direct": 1, "numjobs": 2}
    assert ramp_left_out(reader, 1.0, result(10 * MB), None) == 1.0
    # Capped at 5 MB a job: the two jobs counted all 10 MB, so neither left a ramp out.
    assert ramp_left_out(reader, 1.0, result(10 * MB), 5 * MB) == 0
    assert ramp_left_out(reader, 1.0, result(7 * MB), 5 * MB) == 1.0
    # A buffered writer makes one pass without a ramp (job_text).
    assert ramp_left_out({"rw": "write"}, 1.0, result(0, 10 * MB), None) == 0
    assert ramp_left_out({"rw": "write", "direct": 1}, 1.0, result(0, 10 * MB), None) == 1.0
