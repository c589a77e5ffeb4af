"""The workload watch: classify() on synthetic intervals, WorkloadWatch over a diskstats file the
test rewrites between samples, and for real: fio on a loop device, sampled every 0.5 s."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fuzz.common import within
from tests.loopdev import loop_device
from tests.yaml_bombs import sized_bomb
from tuner.daemon.events import Event
from tuner.daemon.workload import WorkloadWatch, classify, profile_names, profiles
from tuner.trials.activity import Activity, activity
from tuner.trials.diskstats import DiskCounters, read_counters

PROFILES = profile_names()


def interval(
    read_kb: float = 0, write_kb: float = 0, reads: float = 0, writes: float = 0,
    util: float = 50.0, depth: float = 1.0,
) -> Activity:  # fmt: skip
    """One second of a device: KiB and requests each way, utilisation, requests in flight."""
    moved = (read_kb + write_kb) * 1024
    return Activity(
        read_mbps=read_kb * 1024 / 1e6,
        write_mbps=write_kb * 1024 / 1e6,
        read_iops=reads,
        write_iops=writes,
        avg_request_kb=(read_kb + write_kb) / (reads + writes) if reads + writes else 0.0,
        read_fraction=read_kb * 1024 / moved if moved else 0.0,
        util_percent=util,
        queue_depth=depth,
    )


# -- classify --------------------------------------------------------------------------------


def test_the_profiles_classify_names_are_in_the_rule_base() -> None:
    assert {"stream-read", "stream-write", "random-read"} <= PROFILES


def test_buffered_16k_reads_reach_the_disk_as_readahead_and_are_a_stream() -> None:
    # 100 MB/s of 256 KiB requests, one in flight: what fio's 16 KiB buffered reader made.
    assert classify([interval(read_kb=97656, reads=381, depth=0.9)], PROFILES) == "stream-read"


def test_writeback_merges_into_large_requests_a_stream_of_writes() -> None:
    found = classify([interval(write_kb=200_000, writes=400, depth=22)], PROFILES)
    assert found == "stream-write"


def test_small_requests_with_many_in_flight_are_random() -> None:
    assert classify([interval(read_kb=4 * 80_000, reads=80_000, depth=50)]) == "random-read"
    assert classify([interval(write_kb=4 * 60_000, writes=60_000, depth=5)]) == "random-write"


def test_between_the_sizes_the_queue_decides() -> None:
    # 48 KiB requests: one at a time is a reader with a small readahead, 8 deep is random.
    assert classify([interval(read_kb=48 * 1000, reads=1000, depth=1.0)]) == "stream-read"
    assert classify([interval(read_kb=48 * 1000, reads=1000, depth=8.0)]) == "random-read"


def test_idle_is_below_a_little_utilisation_and_rate() -> None:
    assert classify([]) == "idle"
    assert classify([interval(write_kb=40, writes=3, util=1.0)]) == "idle"  # journald
    # Busy with little data is not idle: a disk seeking for 4 KiB reads.
    assert classify([interval(read_kb=400, reads=100, util=60.0, depth=1)]) == "random-read"


def test_mixed_only_where_the_rule_base_has_it_otherwise_the_larger_direction() -> None:
    both = [interval(read_kb=60_000, reads=240, write_kb=40_000, writes=160, depth=2)]
    assert "mixed" not in PROFILES
    assert classify(both, PROFILES) == "stream-read"
    assert classify(both, PROFILES | {"mixed"}) == "mixed"
    # Each direction is judged by its own request size: large reads, small writes.
    reads_win = [interval(read_kb=70_000, reads=70, write_kb=30_000, writes=7500, depth=3)]
    assert classify(reads_win, PROFILES) == "stream-read"


def test_devices_together_are_one_workload() -> None:
    a = interval(read_kb=4 * 5000, reads=5000, depth=20)
    b = interval(read_kb=4 * 5000, reads=5000, depth=20)
    assert classify({"sda": a, "sdb": b}) == "random-read"


def test_activity_from_two_counter_samples() -> None:
    before = DiskCounters(100, 100 * 4096, 10, 10 * 65536, 1000, 2000)
    after = DiskCounters(1100, 1100 * 4096, 10, 10 * 65536, 1500, 34000)
    got = activity(before, after, 2.0)
    assert got.read_iops == 500 and got.write_iops == 0
    assert got.avg_request_kb == 4.0 and got.read_fraction == 1.0
    assert got.util_percent == 25.0  # 500 ms busy in 2 s
    assert got.queue_depth == 16.0  # 32 s of queue time in 2 s
    assert activity(after, before, 2.0).iops == 0  # went back: nothing, not negative


# -- WorkloadWatch over a fixture file -------------------------------------------------------


@dataclass
class Disk:
    """Cumulative counters of one fixture device, advanced as a workload would."""

    name: str
    reads: int = 0
    read_sectors: int = 0
    writes: int = 0
    write_sectors: int = 0
    ticks: int = 0
    queue: int = 0

    def run(self, seconds: float, kb: int, per_s: int, util: float, depth: float,
            write: bool = False) -> None:  # fmt: skip
        """`per_s` requests of `kb` KiB a second for `seconds`."""
        n = int(per_s * seconds)
        if write:
            self.writes += n
            self.write_sectors += n * kb * 2
        else:
            self.reads += n
            self.read_sectors += n * kb * 2
        self.ticks += int(seconds * 10 * util)
        self.queue += int(seconds * 1000 * depth)

    def line(self, minor: int) -> str:
        return (f"   7 {minor:7d} {self.name} {self.reads} 0 {self.read_sectors} 0 {self.writes} "
                f"0 {self.write_sectors} 0 0 {self.ticks} {self.queue} 0 0 0 0 0 0")  # fmt: skip


class Fixture:
    """A /proc/diskstats stand-in; `write()` after changing the disks."""

    def __init__(self, path: Path, *disks: Disk) -> None:
        self.path = path
        self.disks = list(disks)
        self.write()

    def write(self) -> None:
        other = "   8       0 vda 1 0 8 0 1 0 8 0 0 1 1 0 0 0 0 0 0"
        lines = [other] + [d.line(i) for i, d in enumerate(self.disks)]
        self.path.write_text("\n".join(lines) + "\n")


def stream(disk: Disk, seconds: float = 5) -> None:
    disk.run(seconds, kb=256, per_s=400, util=60, depth=1)


def random(disk: Disk, seconds: float = 5) -> None:
    disk.run(seconds, kb=4, per_s=20_000, util=80, depth=30)


def kinds(events: list[Event]) -> list[tuple[str, object]]:
    return [(e.kind, e.data.get("workload") or e.data.get("device")) for e in events]


def test_a_class_is_reported_once_it_held_for_the_window(tmp_path: Path) -> None:
    disk = Disk("sdx")
    stats = Fixture(tmp_path / "diskstats", disk)
    watch = WorkloadWatch(["sdx"], 5.0, 20.0, path=stats.path, profile_set=PROFILES)
    assert watch.sample(0) == [] and watch.current is None  # the baseline
    seen: list[Event] = []
    for t in range(5, 20, 5):
        stream(disk)
        stats.write()
        seen += watch.sample(t)
    assert seen == [], "15 s of stream-read is not yet the 20 s window"
    stream(disk)
    stats.write()
    (found,) = watch.sample(20)
    assert kinds([found]) == [("workload", "stream-read")]
    assert found.data["previous"] is None and found.data["since"] == 0
    assert watch.current == "stream-read" and watch.since == 0
    assert watch.activity["sdx"].avg_request_kb == pytest.approx(256)
    stream(disk)
    stats.write()
    assert watch.sample(25) == [], "the same class again is no change"


def test_idle_samples_neither_start_nor_break_a_change(tmp_path: Path) -> None:
    disk = Disk("sdx")
    stats = Fixture(tmp_path / "diskstats", disk)
    watch = WorkloadWatch(["sdx"], 5.0, 20.0, path=stats.path, profile_set=PROFILES)
    watch.sample(0)
    for t in (5, 10, 15, 20):
        stream(disk)
        stats.write()
        watch.sample(t)
    assert watch.current == "stream-read"
    events: list[Event] = []
    # random-read from 20 to 30, idle from 30 to 45, random-read again: 20 s after it began.
    for t, step in ((25, random), (30, random), (35, None), (40, None), (45, random)):
        if step is not None:
            step(disk)
        stats.write()
        events += watch.sample(t)
    assert kinds(events) == [("workload", "random-read")]
    assert events[0].data["previous"] == "stream-read" and watch.since == 20
    # Idle after that changes nothing: the last class stays current.
    for t in (50, 55, 60, 65, 70):
        stats.write()
        assert watch.sample(t) == []
    assert watch.current == "random-read"
    assert watch.idle_seconds(10.0) == 25.0
    assert watch.idle_seconds(0.0) == 0.0  # nothing is below 0 %


def test_another_class_in_the_window_restarts_it(tmp_path: Path) -> None:
    disk = Disk("sdx")
    stats = Fixture(tmp_path / "diskstats", disk)
    watch = WorkloadWatch(["sdx"], 5.0, 10.0, path=stats.path, profile_set=PROFILES)
    watch.sample(0)
    events: list[Event] = []
    for t, step in ((5, stream), (10, random), (15, stream), (20, stream), (25, stream)):
        step(disk)
        stats.write()
        events += watch.sample(t)
    # stream-read runs from 10 (the sample at 15 covers 10-15) and holds 10 s at 20.
    assert kinds(events) == [("workload", "stream-read")]
    assert events[0].data["since"] == 10


def test_a_reattached_device_restarts_its_baseline_and_a_missing_one_is_skipped(
    tmp_path: Path,
) -> None:
    disk, other = Disk("sdx"), Disk("sdy")
    stats = Fixture(tmp_path / "diskstats", disk, other)
    watch = WorkloadWatch(["sdx", "sdy", "sdz"], 5.0, 5.0, path=stats.path, profile_set=PROFILES)
    first = watch.sample(0)
    assert kinds(first) == [("error", "sdz")] and "sdz" in first[0].message
    stream(disk)
    stats.write()
    assert kinds(watch.sample(5)) == [("workload", "stream-read")], "sdz is still missing: once"
    # sdx re-attached: its counters start over from small numbers.
    stats.disks[0] = disk = Disk("sdx")
    random(disk, 1)
    stats.write()
    assert watch.sample(10) == []
    assert "sdx" not in watch.activity and "sdy" in watch.activity
    random(disk)
    stats.write()
    # One random interval from the new baseline, and the window (5 s) is met.
    assert kinds(watch.sample(15)) == [("workload", "random-read")]
    assert watch.activity["sdx"].avg_request_kb == pytest.approx(4)
    # sdy goes away: one error; back: watched again without a word.
    stats.disks.pop()
    stats.write()
    assert kinds(watch.sample(20)) == [("error", "sdy")]
    assert watch.sample(25) == []
    stats.disks.append(other)
    stats.write()
    assert watch.sample(30) == []


def test_an_unreadable_file_is_one_error_not_a_crash(tmp_path: Path) -> None:
    watch = WorkloadWatch(["sdx"], 5.0, 5.0, path=tmp_path / "absent")
    assert [e.kind for e in watch.sample(0)] == ["error"]
    assert watch.sample(5) == []


def test_own_io_counts_for_no_class(tmp_path: Path) -> None:
    disk = Disk("sdx")
    stats = Fixture(tmp_path / "diskstats", disk)
    watch = WorkloadWatch(["sdx"], 5.0, 5.0, path=stats.path, profile_set=PROFILES)
    watch.sample(0)
    random(disk)
    stats.write()
    assert watch.sample(5, own_io=True) == []
    assert watch.current is None and watch.activity["sdx"].iops > 0
    assert watch.state()["devices"]["sdx"]["avg_request_kb"] == pytest.approx(4)


def test_read_counters_on_this_host() -> None:
    names = [line.split()[2] for line in Path("/proc/diskstats").read_text().splitlines()]
    found = read_counters(names[:3])
    assert set(found) == set(names[:3])
    assert all(c.io_ticks_ms >= 0 and c.bytes.read_bytes >= 0 for c in found.values())


# -- for real --------------------------------------------------------------------------------


def _fio(device: str, seconds: float, *options: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["fio", "--name=w", f"--filename={device}", "--time_based=1", f"--runtime={seconds}s",
         "--size=256m", "--group_reporting", *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.lab
def test_stream_then_random_reads_on_a_loop_device() -> None:
    """~9 s: 4 s of a buffered 16 KiB stream, then 4 s of 4 KiB random reads 32 deep."""
    with loop_device(256) as name:
        watch = WorkloadWatch([name], 0.5, 1.5, profile_set=PROFILES)
        events: list[Event] = []
        watch.sample(time.monotonic())
        for options in (
            ("--rw=read", "--bs=16k", "--direct=0", "--ioengine=psync"),
            ("--rw=randread", "--bs=4k", "--iodepth=32", "--direct=1", "--ioengine=libaio"),
        ):
            job = _fio(f"/dev/{name}", 4, *options)
            try:
                while job.poll() is None:
                    time.sleep(0.5)
                    events += watch.sample(time.monotonic())
            finally:
                job.kill()
                job.wait()
        found = [e.data["workload"] for e in events if e.kind == "workload"]
        assert found == ["stream-read", "random-read"], [e.message for e in events]


# -- the rule base's workloads file, hostile (issue 27) ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "workloads: " + "[" * 10_000 + "]" * 10_000,  # was a RecursionError in the daemon
        "workloads:\n  - name: x\n    fio:\n" + sized_bomb(38_000, indent="      "),
        "workloads: [{name: 2026-02-31}]",  # was a ValueError
    ],
)
def test_a_hostile_workloads_file_gives_no_profiles(tmp_path: Path, text: str) -> None:
    (tmp_path / "workloads.yaml").write_text(text)
    with within(2.0):
        assert profiles(tmp_path) == {}
