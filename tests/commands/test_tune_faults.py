"""A device that fails during trials, as users meet it: tune, sweep, apply --measure and the
daemon's re-tune on a modelled flash drive with a bad region (`eio`), or whose server is killed
mid-tune, or whose loop device is detached. Each stops, restores, says so in one line naming
the device and exits 1; nothing is left changed, journaled, planned or saved.

Small disks (512 MiB) so that a 1 s trial reads into the bad region at once.

The killed server and the daemon's fault run beside other tests (lab_parallel); the rest
stay serial: a detached device's number is then anyone's (another test's device would answer
under it), and a trial must reach a bad region 64 MiB in within its second.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from tests.apply.applylab import write_plan
from tests.cli import iotuner
from tests.daemon.test_retune import config, drive
from tests.lab.conftest import assert_no_server_left, module_lab, snapshot
from tuner.bottleneck.groups import Component, Group
from tuner.bottleneck.scaling import run_scaling
from tuner.daemon.events import Event
from tuner.daemon.retune import PLAN_NAME, Retune
from tuner.lab import LabSpec, lab_down, lab_up, parse_spec
from tuner.lab.record import LabRecord, load_record
from tuner.trials.faults import TrialFault

pytestmark = pytest.mark.lab

QUEUE = ("read_ahead_kb", "nr_requests", "max_sectors_kb", "scheduler")
BAD = "eio: [64MiB, 1MiB]"  # stream-read at 400 MB/s reaches it in a fifth of a second


def queue_of(name: str) -> dict[str, str]:
    return {attr: Path(f"/sys/block/{name}/queue/{attr}").read_text().strip() for attr in QUEUE}


def flash_spec(faults: str = "") -> LabSpec:
    """One modelled flash drive of 512 MiB with `faults` (model keys)."""
    extra = f", {faults}" if faults else ""
    return parse_spec(
        f"disks: [{{name: d0, size: 512MiB, model: {{kind: ssd{extra}}}}}]", "faults", "x"
    )


@contextmanager
def flash_drive(faults: str = "") -> Iterator[str]:
    """flash_spec(faults)'s drive, torn down after; yields its kernel name."""
    device = lab_up(flash_spec(faults)).disks[0].device
    try:
        yield device.removeprefix("/dev/")
    finally:
        lab_down()


@pytest.fixture
def disk(state: Path) -> Iterator[str]:
    """A sound drive (its server is killed, or its loop device detached, by the test)."""
    with flash_drive() as name:
        yield name


@pytest.fixture(scope="module")
def bad_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A drive whose region BAD answers EIO, one for the tests that meet it: each only reads
    it, and checks that its settings are as it found them."""
    with module_lab(tmp_path_factory, flash_spec(BAD)) as (lab, _):
        yield lab.disks[0].device.removeprefix("/dev/")


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def assert_nothing_to_roll_back(state: Path) -> None:
    undone = iotuner("rollback", state=state)
    assert (undone.returncode, undone.stdout.strip()) == (0, "nothing to roll back")


@pytest.mark.lab_parallel  # waits for a changed setting, whatever the trials measure
@pytest.mark.parametrize("kind", ["server", "fuse"])
def test_tune_whose_server_is_killed_mid_search_restores_the_settings_it_had_changed(
    state: Path, disk: str, tmp_path: Path, kind: str
) -> None:
    """The server (nbdkit, or the nbdfuse that shows it as the loop device's file) is killed
    as soon as a trial runs with changed settings (the first rule's point, after the
    baseline): the device then answers EIO to everything."""
    record = load_record(state / "lab.json")
    assert isinstance(record, LabRecord)
    (server,) = [s for s in record.steps if s.kind == kind]
    before = queue_of(disk)
    plan = tmp_path / "plan.yaml"
    tune = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "tune", "--target", f"/dev/{disk}", "--budget", "3",
         "--runtime", "1", "--ramp", "0", "--plan-out", str(plan)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "IOTUNER_STATE_DIR": str(state)},
    )  # fmt: skip
    try:
        end = time.monotonic() + 60
        while queue_of(disk) == before and tune.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        changed = queue_of(disk)
        assert changed != before, "no trial with changed settings: the test shows nothing"
        psutil.Process(int(server.detail["pid"])).send_signal(signal.SIGKILL)
        _, err = tune.communicate(timeout=120)
    finally:
        if tune.poll() is None:
            tune.kill()
            tune.wait()
    line = last_line(err)
    print(f"settings during the trial: {changed}\n{line}")
    assert tune.returncode == 1, err
    assert line.startswith(f"iotuner: tune: {disk}: I/O error during trial ")
    assert "(baseline)" not in line
    assert line.endswith("; settings restored, no plan written")
    assert queue_of(disk) == before
    assert not plan.exists()
    assert_nothing_to_roll_back(state)


def fio_holds(disk: str) -> bool:
    """Whether a fio process has /dev/`disk` open (a trial is reading it)."""
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] != "fio":
            continue
        try:
            fds = list(Path(f"/proc/{proc.pid}/fd").iterdir())
            if any(os.path.realpath(fd) == f"/dev/{disk}" for fd in fds):
                return True
        except OSError:
            continue  # ended meanwhile
    return False


def detached_mid_trial(
    state: Path, disk: str, args: list[str], ready: Callable[[], bool] = lambda: True
) -> tuple[int, str]:
    """Run `iotuner args`; once `ready()` and fio has /dev/`disk` open, `losetup -d` it. The
    command's exit code and stderr."""
    command = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "IOTUNER_STATE_DIR": str(state)},
    )  # fmt: skip
    try:
        end = time.monotonic() + 60
        while not ready() and command.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        assert ready(), "not ready before the command ended: the test shows nothing"
        while not fio_holds(disk) and command.poll() is None and time.monotonic() < end:
            time.sleep(0.01)
        assert fio_holds(disk), "fio never opened the device"
        subprocess.run(["losetup", "-d", f"/dev/{disk}"], check=True, timeout=30)
        _, err = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    return command.returncode, err


GONE_WHY = "size is 0: detached, disconnected or without its medium)"


def test_tune_whose_loop_device_is_detached_mid_trial_stops_with_the_device_gone(
    state: Path, disk: str, tmp_path: Path
) -> None:
    """`losetup -d` while a trial with changed settings reads: the kernel lets fio finish
    (the detach waits for the last close), then the disk behind the node is gone (size 0).
    The next trial finds it so before it writes a setting, and the tune stops."""
    before = queue_of(disk)
    plan = tmp_path / "plan.yaml"
    code, err = detached_mid_trial(
        state, disk, ["tune", "--target", f"/dev/{disk}", "--budget", "3", "--runtime", "1",
                      "--ramp", "0", "--plan-out", str(plan)],
        ready=lambda: queue_of(disk) != before,
    )  # fmt: skip
    line = last_line(err)
    print(line)
    assert code == 1, err
    assert line.startswith(f"iotuner: tune: {disk}: device gone during trial ")
    assert f"(/sys/class/block/{disk}/{GONE_WHY}" in line
    assert line.endswith("; settings restored, no plan written")
    assert Path(f"/sys/block/{disk}/size").read_text().strip() == "0"
    assert queue_of(disk) == before  # a loop device keeps its queue settings for its next user
    assert not plan.exists()
    assert_nothing_to_roll_back(state)
    status = iotuner("lab", "status", state=state)
    assert status.returncode == 1
    assert f"problem: d0: /dev/{disk} is not attached to " in status.stdout
    record = snapshot(state)
    lab_down()  # with no loop device over the disk's file left to detach
    assert_no_server_left(record)


def test_sweep_whose_loop_device_is_detached_names_the_next_cell(state: Path, disk: str) -> None:
    """The first cell's fio finishes (the detach waits for it); the second meets size 0."""
    code, err = detached_mid_trial(
        state, disk, ["sweep", disk, "--sizes", "64k,1m", "--depths", "1", "--runtime", "1"]
    )
    line = last_line(err)
    print(line)
    assert code == 1, err
    assert line.startswith(f"iotuner: sweep: {disk}: device gone during trial 2 (read bs=1M")
    assert line.endswith("; nothing changed, no result saved")
    assert not (state / "results" / "sweep.json").exists()


def test_tune_on_a_bad_region_stops_restores_and_writes_no_plan(
    state: Path, bad_disk: str, tmp_path: Path
) -> None:
    disk = bad_disk
    before = queue_of(disk)
    plan = tmp_path / "plan.yaml"
    result = iotuner("tune", "--target", f"/dev/{disk}", "--budget", "3", "--runtime", "1",
                     "--ramp", "0", "--plan-out", str(plan), state=state)  # fmt: skip
    line = last_line(result.stderr)
    print(line)
    assert result.returncode == 1, result.stderr
    assert line.startswith(f"iotuner: tune: {disk}: I/O error during trial 1 (baseline) (fio: ")
    assert "Input/output error" in line
    assert line.endswith("; settings restored, no plan written")
    assert queue_of(disk) == before
    assert not plan.exists()
    assert not (state / "results" / "tune.json").exists()
    assert_nothing_to_roll_back(state)


def test_sweep_on_a_bad_region_names_the_cell_and_saves_nothing(state: Path, bad_disk: str) -> None:
    disk = bad_disk
    # 64 KiB reads at depth 1 (25 MB/s) stop short of the region in 1.25 s; 1 MiB ones reach it.
    result = iotuner("sweep", disk, "--sizes", "64k,1m", "--depths", "1", "--runtime", "1",
                     state=state)  # fmt: skip
    line = last_line(result.stderr)
    print(line)
    assert result.returncode == 1, result.stderr
    assert line.startswith(
        f"iotuner: sweep: {disk}: I/O error during trial 2 (read bs=1M iodepth=1"
    )
    assert line.endswith("; nothing changed, no result saved")
    assert not (state / "results" / "sweep.json").exists()


def test_apply_measure_on_a_bad_region_applies_nothing(
    state: Path, bad_disk: str, conf: Path, tmp_path: Path
) -> None:
    disk = bad_disk
    before = queue_of(disk)
    plan = write_plan(tmp_path / "plan.yaml",
                      [{"key": "block.read_ahead_kb", "target": disk, "value": 1024}])  # fmt: skip
    result = iotuner("apply", str(plan), "--measure", "--target", f"/dev/{disk}", "--repeats",
                     "2", "--runtime", "1", "--ramp", "0", "--conf-root", str(conf),
                     state=state)  # fmt: skip
    line = last_line(result.stderr)
    print(line)
    assert result.returncode == 1, result.stderr
    assert line.startswith(
        f"iotuner: apply --measure: {disk}: I/O error during trial 1 (before) (fio: "
    )
    assert line.endswith("; nothing applied")
    assert queue_of(disk) == before
    assert not any(conf.rglob("*iotuner*"))
    assert_nothing_to_roll_back(state)


ENDED = ("finished", "stopped", "failed", "busy", "killed", "fault")


def ended(events: list[Event]) -> bool:
    return any(e.data.get("state") in ENDED for e in events)


@pytest.mark.lab_parallel  # the bad region is the first trial's first 8 MiB
def test_the_daemons_retune_reports_the_fault_and_applies_nothing(state: Path) -> None:
    """apply off: a re-tune that went wrong in this test must not write /etc (the re-tune's
    apply writes the real udev rules). Its trials move at most 60 MB (--io-cap): the bad
    region sits at 8 MiB, within the first trial's reach."""
    with flash_drive("eio: [8MiB, 1MiB]") as disk:
        before = queue_of(disk)
        retune = Retune(state)
        retune.start("stream-read", config(f"/dev/{disk}", apply=False), [disk])
        try:
            events = drive(retune, ended, 60, idle=lambda: 5.0)
        finally:
            retune.terminate()  # a child still running when the test failed
        (done,) = [e for e in events if e.data.get("state") in ENDED]
        print(done.message)
        assert done.data["state"] == "fault", done.message
        assert done.kind == "error" and done.data["applied"] is False
        assert done.message.startswith("re-tune for stream-read stopped by a fault of the device: ")
        assert f"tune: {disk}: I/O error during trial 1 (baseline)" in done.message
        assert queue_of(disk) == before
        assert not (state / PLAN_NAME).exists()
        status = retune.state()
        assert status is not None and status["state"] == "fault"
        assert json.dumps(status)  # what `daemon status` shows is plain data


def test_bottleneck_scaling_names_the_device_that_failed_and_its_point(state: Path) -> None:
    """Two flash drives, the second with a bad region near its start, scaled as one group
    (`bottleneck` groups modelled disks by no component yet: a modelled bus is a word in
    /dev/shm, not a device; so run_scaling, which the command runs per group, directly):
    the first point (d0 alone) reads, the second (both) meets the bad region on d1."""
    spec = parse_spec(
        "disks: [{name: d0, size: 512MiB, model: {kind: ssd}},"
        " {name: d1, size: 512MiB, model: {kind: ssd, eio: [16MiB, 1MiB]}}]",
        "faults",
        "x",
    )
    lab = lab_up(spec)
    try:
        good, bad = (d.device.removeprefix("/dev/") for d in lab.disks)
        group = Group(Component("lab", "bus", "lab"), (good, bad))
        with pytest.raises(TrialFault) as err:
            run_scaling(group, runtime_s=0.5)
    finally:
        lab_down()
    line = str(err.value.reported("bottleneck", "nothing changed, no result saved"))
    print(line)
    assert line.startswith(f"bottleneck: {bad}: I/O error during trial 2 (2 of 2 busy) (fio: ")
    assert err.value.exit_code == 1
