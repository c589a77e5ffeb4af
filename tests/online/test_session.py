"""The online session on a fixture host: the engines write its files, a modelled device answers.

The device's throughput and latency are functions of the settings its files hold now (a disk
whose requests are split at max_sectors_kb, whose queue's latency grows with nr_requests); the
clock is the session's own, advanced by its sleeps, so a 15-minute tune takes a second. The
lab test (tests/lab/test_online.py) runs the same session on a real device.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import build_host
from tuner.online.latency import Request
from tuner.online.session import OnlineConfig, OnlineResult, OnlineTune
from tuner.online.trust_region import MAX_SECTORS, NR_REQUESTS, READ_AHEAD
from tuner.trials.diskstats import DiskCounters
from tuner.tunables.engine import TunableEngine

DEVICE = "sda"
KEYS = (MAX_SECTORS, NR_REQUESTS, READ_AHEAD)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Device:
    """Counters and traced requests of a device whose figures follow its queue files."""

    def __init__(
        self,
        root: Path,
        clock: Clock,
        mbps: Callable[[dict[str, int]], float],
        p99_ms: Callable[[dict[str, int]], float],
    ) -> None:
        self.root, self.clock, self.mbps, self.p99_ms = root, clock, mbps, p99_ms
        self.bytes = 0.0
        self.last = 0.0
        self.last_drain = 0.0

    def settings(self) -> dict[str, int]:
        queue = self.root / f"sys/block/{DEVICE}/queue"
        return {name: int((queue / name).read_text()) for name in
                ("max_sectors_kb", "nr_requests", "read_ahead_kb")}  # fmt: skip

    def counters(self) -> DiskCounters:
        self.bytes += self.mbps(self.settings()) * 1e6 * (self.clock.now - self.last)
        self.last = self.clock.now
        requests = int(self.bytes // 8192)
        return DiskCounters(requests, int(self.bytes), 0, 0, int(self.clock.now * 1000),
                            int(self.clock.now * 8000))  # fmt: skip

    def drain(self) -> list[Request]:
        # 200 requests of 8 KiB a second, their times spread evenly up to the p99 the
        # settings give: a deeper queue slows them all, as queueing does.
        seconds, self.last_drain = self.clock.now - self.last_drain, self.clock.now
        slow = self.p99_ms(self.settings())
        count = int(200 * seconds)
        return [Request(8192, slow * (i + 1) / count) for i in range(count)]


def split_requests(s: dict[str, int]) -> float:
    """Requests split at max_sectors_kb: 0.2 ms of overhead each against 200 MB/s."""
    kib = s["max_sectors_kb"]
    return kib * 1024 / 1e6 / (0.0002 + kib * 1024 / 200e6)


def deeper_is_slower(s: dict[str, int]) -> float:
    return 0.25 * s["nr_requests"]


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    build_host(tree)
    tree.file(f"sys/block/{DEVICE}/queue/max_sectors_kb", 8)
    return tree


def run(
    host: SysTree, mbps: Callable[[dict[str, int]], float], **bounds: float
) -> tuple[OnlineResult, Device]:
    clock = Clock()
    device = Device(host.root, clock, mbps, deeper_is_slower)
    config = OnlineConfig(keys=KEYS, **bounds)  # type: ignore[arg-type]
    with TunableEngine(host.root) as held, TunableEngine(host.root) as trial:
        session = OnlineTune(DEVICE, held, trial, config, sampler=device,  # type: ignore[arg-type]
                             counters=device.counters, clock=clock, sleep=clock.sleep)  # fmt: skip
        result = session.run()
    return result, device


def test_a_harmful_start_is_improved_and_kept_with_its_interval(host: SysTree) -> None:
    result, device = run(host, split_requests)
    assert result.found[MAX_SECTORS] == 8
    assert result.kept
    assert result.reached[MAX_SECTORS] >= 256
    assert result.low > 1.0
    assert device.settings()["max_sectors_kb"] == result.reached[MAX_SECTORS]
    assert result.elapsed_s <= 900.0


def test_a_candidate_past_the_latency_bound_ends_within_its_slice(host: SysTree) -> None:
    result, _ = run(host, split_requests)
    deeper = [s for s in result.slices if s.setting.startswith(f"{NR_REQUESTS}=") and
              int(s.setting.split("=")[1]) > 64]  # fmt: skip
    assert deeper, "the deeper queue was never tried"
    for s in deeper:
        assert s.stopped is not None and "p99 latency rose" in s.stopped
        assert s.seconds < 10.0  # ended inside the slice, at its first check
    stopped = [t for t in result.tried if t.outcome == "stopped"]
    assert {t.candidate.key for t in stopped} == {NR_REQUESTS}
    assert result.worse_s >= sum(s.seconds for s in deeper)


def test_a_device_no_setting_helps_keeps_what_it_had(host: SysTree) -> None:
    result, device = run(host, lambda s: 100.0, time_s=300.0)
    assert not result.kept
    assert result.changes() == {}
    assert device.settings() == {"max_sectors_kb": 8, "nr_requests": 64, "read_ahead_kb": 128}


def test_time_on_worse_settings_is_bounded(host: SysTree) -> None:
    # Anything but the settings found costs 15 %: worse, yet inside the bound that would end
    # its slices at once (a halving ends each in 2 s, and the region runs out first).
    def only_found(s: dict[str, int]) -> float:
        found = {"max_sectors_kb": 8, "nr_requests": 64, "read_ahead_kb": 128}
        return 100.0 if s == found else 85.0

    result, device = run(host, only_found, max_worse_s=25.0, slice_s=10.0)
    assert result.ended.startswith("the bound on time on worse settings")
    assert 25.0 <= result.worse_s <= 25.0 + 2 * 10.0
    assert not result.kept
    assert device.settings()["max_sectors_kb"] == 8
