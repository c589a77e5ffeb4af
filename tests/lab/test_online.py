"""`tune --online` on a live fio workload on the lab's modelled hard disk; and kill -9 in the
middle of a candidate's slice, which the journal's recovery undoes."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device
from tuner.lab import lab_down, lab_up, load_spec
from tuner.online.latency import LatencySampler, device_numbers
from tuner.online.session import OnlineConfig, OnlineTune
from tuner.online.trust_region import NR_REQUESTS
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal

pytestmark = [pytest.mark.lab, pytest.mark.lab_parallel]  # its own lab; no figure held
QUEUE = ("max_sectors_kb", "nr_requests", "read_ahead_kb", "scheduler")


def queue(device: str) -> dict[str, str]:
    base = Path(f"/sys/block/{device}/queue")
    return {name: (base / name).read_text().strip() for name in QUEUE}


def write_queue(device: str, **values: int) -> None:
    for name, value in values.items():
        Path(f"/sys/block/{device}/queue/{name}").write_text(str(value))


def fio(device: str, *options: str) -> subprocess.Popen[bytes]:
    """fio on `device` until stopped (at most 10 min), in the background."""
    return subprocess.Popen(
        ["fio", "--name=bg", f"--filename=/dev/{device}", "--ioengine=libaio", "--direct=1",
         "--time_based", "--runtime=600", "--output=/dev/null", *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End fio and its job processes: they are sessions of their own (fio's setsid), so a
    kill of the parent or of its group left them holding the device and the lab could not
    detach it; SIGTERM makes fio end them, and any still there are killed by pid."""
    jobs = psutil.Process(proc.pid).children(recursive=True) if proc.poll() is None else []
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for job in jobs:
        with contextlib.suppress(psutil.NoSuchProcess):
            job.kill()
            job.wait(timeout=30)


@pytest.fixture
def hdd(state: Path) -> Iterator[str]:
    device = Path(lab_up(load_spec("hdd")).disks[0].device).name
    try:
        yield device
    finally:
        lab_down()


def test_a_harmful_start_is_improved_and_a_deeper_queue_stopped_by_the_bound(
    state: Path, hdd: str
) -> None:
    """About 70 s: two online tunes of 3 s slices on a live workload, each long enough for
    a few paired slices (the acceptance's own runs are 15 minutes, in benchmarks/online.py).

    1. Four direct sequential readers of 1 MiB with max_sectors_kb 8 (requests split into
       8 KiB, a quarter of the throughput): the tune keeps a larger limit, with its interval
       above 1, or keeps what it found, never something measured worse.
    2. Random 8 KiB readers at depth 32 with nr_requests 4: the next depth up doubles the
       requests in flight and with them each one's time at the device, past the 20 % bound:
       its slice ends at its first check and the candidate is dropped.
    """
    write_queue(hdd, max_sectors_kb=8)
    found = queue(hdd)
    streams = fio(hdd, "--rw=read", "--bs=1M", "--iodepth=4", "--numjobs=4",
                  "--offset_increment=400M", "--size=400M")  # fmt: skip
    try:
        time.sleep(1)
        result = iotuner("tune", "--online", "--device", hdd, "--slice", "3", "--time", "42",
                         "--json", state=state, timeout=180)  # fmt: skip
    finally:
        stop(streams)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["found"]["block.max_sectors_kb"] == 8
    assert doc["slices"][0]["setting"] == "baseline"
    kinds = [s["setting"] == "baseline" for s in doc["slices"]]
    assert kinds[:3] == [True, False, True], "slices alternate"
    now = queue(hdd)
    if doc["kept"]:
        assert doc["ci"][0] > 1.0
        assert int(now["max_sectors_kb"]) == doc["reached"]["block.max_sectors_kb"] > 8
    else:
        assert now == found
    with Journal() as journal:
        assert journal.open_changes() == []

    write_queue(hdd, nr_requests=4)
    random = fio(hdd, "--rw=randread", "--bs=8k", "--iodepth=32", "--randseed=7")
    try:
        time.sleep(1)
        numbers = device_numbers(hdd)
        assert numbers is not None
        config = OnlineConfig(slice_s=3.0, time_s=24.0, keys=(NR_REQUESTS,))
        with (
            Journal() as journal,
            TunableEngine(Path("/"), journal) as held,
            TunableEngine(Path("/"), journal) as trial,
            LatencySampler.open(*numbers) as sampler,  # type: ignore[union-attr]
        ):
            online = OnlineTune(hdd, held, trial, config, sampler=sampler).run()
    finally:
        stop(random)
    first = online.tried[0]
    assert first.candidate.value == 8
    assert first.outcome == "stopped" and "p99 latency rose" in str(first.why)
    stopped = next(s for s in online.slices if s.setting == f"{NR_REQUESTS}=8")
    assert stopped.seconds < 3.0
    assert online.worse_s >= stopped.seconds
    assert not online.kept and queue(hdd)["nr_requests"] == "4"
    assert not list(Path("/sys/kernel/tracing/instances").glob("iotuner-online-*"))


def test_kill_9_mid_slice_leaves_a_journal_that_recovery_rolls_back(state: Path) -> None:
    with loop_device() as device:
        before = queue(device)
        load = fio(device, "--rw=read", "--bs=1M", "--iodepth=4")
        tune = subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "tune", "--online", "--device", device,
             "--slice", "5", "--time", "60"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while queue(device) == before:  # the first candidate, after the first baseline
                assert tune.poll() is None, "the tune ended before trying a candidate"
                assert time.monotonic() < deadline, "no candidate applied in 60 s"
                time.sleep(0.05)
            time.sleep(0.5)  # inside the candidate's slice
            tune.send_signal(signal.SIGKILL)
            assert tune.wait() == -signal.SIGKILL
        finally:
            if tune.poll() is None:
                tune.kill()
                tune.wait()
            stop(load)
        assert queue(device) != before, "nothing restored it yet"
        rolled = iotuner("rollback")
        assert rolled.returncode == 0, rolled.stderr
        assert queue(device) == before
        # The killed tune's tracefs instance goes with the next sampler (remove_stale).
        numbers = device_numbers(device)
        assert numbers is not None
        sampler = LatencySampler.open(*numbers)
        if sampler is not None:
            sampler.close()
        assert not list(Path("/sys/kernel/tracing/instances").glob(f"iotuner-online-{tune.pid}"))
