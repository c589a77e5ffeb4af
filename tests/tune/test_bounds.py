"""The re-tune's bounds inside the tune: a trial's I/O cap, and busy devices stopping the search.

Real trials: the I/O cap on the lab's single-disk (100 MB/s, 200 IOPS, so a capped trial's
figure is known in advance), the idle gate on a loop device made busy by a background fio.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.loopdev import loop_device, need_root
from tuner.lab.session import lab_session
from tuner.rules.installed import load_rule_base
from tuner.trials.diskstats import read_diskstats
from tuner.trials.fio import job_text
from tuner.trials.idle import BUSY, DevicesBusy, utilisation, wait_until_idle
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import run_trial
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tune.result import TrialRecord
from tuner.tune.session import Tune, TuneConfig
from tuner.tune.setup import current_point, recommended_points, tune_space

QUEUE = ("read_ahead_kb", "nr_requests", "max_sectors_kb", "scheduler")
STREAM = load_rule_base().workload("stream-read")
assert STREAM is not None


def queue_of(name: str) -> dict[str, str]:
    return {attr: Path(f"/sys/block/{name}/queue/{attr}").read_text().strip() for attr in QUEUE}


def busy_fio(device: str, seconds: float = 30) -> subprocess.Popen[bytes]:
    """Direct 4 KiB random reads keeping `device` busy (killed by the caller)."""
    return subprocess.Popen(
        ["fio", "--name=busy", f"--filename={device}", "--rw=randread", "--bs=4k",
         "--direct=1", "--ioengine=libaio", "--iodepth=8", "--time_based=1",
         f"--runtime={seconds}s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def stop(job: subprocess.Popen[bytes]) -> None:
    job.kill()
    job.wait()


def test_without_a_cap_the_job_is_as_before_and_with_one_it_ends_at_io_size() -> None:
    plain = job_text({"rw": "read", "bs": "16k"}, runtime_s=3, ramp_s=1, filename="/dev/x",
                     region_bytes=1 << 30)  # fmt: skip
    assert "io_size" not in plain and "time_based=1" in plain
    capped = job_text({"rw": "read", "bs": "16k"}, runtime_s=3, ramp_s=1, filename="/dev/x",
                      region_bytes=1 << 30, io_size=50_000_000)  # fmt: skip
    assert "io_size=50000000" in capped and "time_based=0" in capped
    assert capped.replace("io_size=50000000\n", "").replace("time_based=0", "time_based=1") == plain


@pytest.mark.lab
def test_a_capped_trial_moves_at_most_the_cap_and_reports_true_mbps(state: Path) -> None:
    """~20 s: capped and uncapped trials interleaved (A, B, A, B). Buffered 16 KiB reads reach
    the lab disk as 256 KiB requests: 200 IOPS x 256 KiB = 52 MB/s. Capped at 80 MB a trial
    ends after ~1.5 s of its 3 s, and its MB/s is still the disk's: the uncapped trial's of
    this test, not 80 MB over the 3 s asked for."""
    need_root()
    capped: list[float] = []
    plain: list[float] = []
    with lab_session("single-disk") as lab:
        name = lab.disks[0].device.removeprefix("/dev/")
        target = TrialTarget.device(lab.disks[0].device)
        for _ in range(2):
            before = read_diskstats([name])[name]
            result = run_trial(target, STREAM, None, runtime_s=3, ramp_s=1,
                               io_cap_bytes=80_000_000)  # fmt: skip
            moved = read_diskstats([name])[name] - before
            assert moved.read_bytes <= 80_000_000, moved
            assert result.fio_bytes < 80_000_000
            # fio measured for well under the 3 s asked: its figure is its bytes over its time.
            assert result.fio_bytes / (result.mbps * 1e6) < 1.5
            assert result.flagged is not None and "the I/O cap ended it after" in result.flagged
            capped.append(result.mbps)
            plain.append(run_trial(target, STREAM, None, runtime_s=3, ramp_s=1).mbps)
    ratio = max(capped) / max(plain)
    print(f"SPREAD bounds: ratio {ratio:.3f} capped {capped} plain {plain}")
    # Other work only slows the throttled disk: the capped trial never reads past its 52 MB/s.
    assert max(capped) < 65
    # Its MB/s is the disk's: the faster of each, measured side by side. Over 10 runs
    # (2026-11-28, the VM shared by 7 engineers, load average 0.5-22) capped / uncapped was
    # 1.061 / 1.067 / 1.069 (min / median / max): blk-throttle lets a short run's start through
    # above its rate, and the capped trial is all short run. 15 % allowed.
    assert ratio == pytest.approx(1, rel=0.15)


def _session(
    stack: ExitStack, device: str, on_trial: object = None, bound_s: float = 2.0
) -> tuple[Tune, dict[tuple[str, str], object], list[dict[tuple[str, str], object]]]:
    """A Tune on `device` (stream-read, budget 3, 1 s trials) whose trials wait for idle."""
    target = TrialTarget.device(device)
    topology = probe_host(HostFS("/"))
    space = tune_space(topology, target.devices, STREAM, False)
    journal = stack.enter_context(Journal())
    engine = stack.enter_context(TunableEngine(Path("/"), journal))
    baseline = current_point(space, engine.tunables, STREAM)
    suggested = recommended_points(load_rule_base(), topology, STREAM, space, baseline)
    config = TuneConfig(budget=3, runtime_s=1, io_cap_bytes=200_000_000)
    gate = lambda: wait_until_idle(target.devices, 10.0, bound_s)  # noqa: E731
    tune = Tune(target, STREAM, space, engine, config, before_trial=gate,
                on_trial=on_trial or (lambda record: None))  # type: ignore[arg-type]  # fmt: skip
    return tune, baseline, suggested


@pytest.fixture
def loop() -> Iterator[str]:
    with loop_device(128) as name:
        subprocess.run(["dd", "if=/dev/urandom", f"of=/dev/{name}", "bs=1M", "count=128",
                        "status=none"], check=True)  # fmt: skip
        yield name


@pytest.mark.lab
def test_busy_devices_stop_the_search_and_nothing_is_chosen(state: Path, loop: str) -> None:
    """~12 s: three baseline trials, then the device is kept busy past the 2 s bound."""
    before = queue_of(loop)
    jobs: list[subprocess.Popen[bytes]] = []

    def after(record: TrialRecord) -> None:
        if record.phase == "baseline" and record.number == 3:
            jobs.append(busy_fio(f"/dev/{loop}"))

    try:
        with ExitStack() as stack:
            tune, baseline, suggested = _session(stack, f"/dev/{loop}", after)
            result = tune.run(baseline, suggested)
    finally:
        for job in jobs:
            stop(job)
    assert result.stop_reason.startswith("stopped early: before trial 4 ("), result.stop_reason
    assert BUSY in result.stop_reason
    assert [t.phase for t in result.trials] == ["baseline"] * 3, "no trial ran on a busy disk"
    assert not result.chosen and result.changes() == {}
    assert result.baseline_mbps > 0 and result.gain == 1.0
    assert queue_of(loop) == before


@pytest.mark.lab
def test_busy_before_the_baseline_measures_nothing(state: Path, loop: str) -> None:
    before = queue_of(loop)
    job = busy_fio(f"/dev/{loop}")
    try:
        assert utilisation([loop])[loop] > 10
        with ExitStack() as stack, pytest.raises(DevicesBusy, match=r"before trial 1 \(baseline\)"):
            tune, baseline, suggested = _session(stack, f"/dev/{loop}", bound_s=1.0)
            tune.run(baseline, suggested)
    finally:
        stop(job)
    assert tune.records == []
    assert queue_of(loop) == before


@pytest.mark.lab
def test_the_gate_returns_once_the_device_is_idle(loop: str) -> None:
    job = busy_fio(f"/dev/{loop}", seconds=2)
    heard: list[str] = []
    try:
        waited = wait_until_idle([loop], 10.0, 20.0, on_wait=heard.append)
    finally:
        stop(job)
    assert 1.0 <= waited < 6, waited
    assert heard and heard[0].startswith(f"waiting for {loop} ")
    assert wait_until_idle([loop], 10.0, 5.0) < 2.0  # idle now: one sample
