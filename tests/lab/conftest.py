"""Lab tests: a private state directory per test, a safety-net teardown, leftover checks, and
one lab for the tests of a module that measure the same devices."""

from __future__ import annotations

import mmap
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

from tuner.lab import Lab, LabSpec, lab_down, lab_up, system, throttle
from tuner.lab.modelled import SOURCES
from tuner.lab.nbd import processes_using
from tuner.lab.record import LabRecord, Step, load_record


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Lab tests need root: skip them, with the reason, anywhere else."""
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (loop devices, mounts, block throttling)")
    for item in items:
        if item.get_closest_marker("lab") is not None:
            item.add_marker(skip)


@pytest.fixture
def state(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """IOTUNER_STATE_DIR set to a fresh directory of the test's own (its tmp_path: per test and
    xdist worker); whatever lab a failed test left there is torn down by a finalizer."""
    path = tmp_path / "state"

    def down() -> None:
        # The test may have pointed IOTUNER_STATE_DIR elsewhere, and monkeypatch's own undo
        # may already have run: name this directory again for lab_down.
        if (path / "lab.json").exists():
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("IOTUNER_STATE_DIR", str(path))
                lab_down()

    request.addfinalizer(down)
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(path))
    return path


@contextmanager
def module_lab(
    tmp_path_factory: pytest.TempPathFactory, spec: LabSpec
) -> Iterator[tuple[Lab, Path]]:
    """`spec`'s lab and the state directory recording it, for a module's tests that measure or
    use the same devices and leave them as they found them: brought up once, in a state
    directory of its own (each test keeps its own `state`), torn down after the module's last
    test. For module fixtures."""
    where = tmp_path_factory.mktemp("lab-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IOTUNER_STATE_DIR", str(where))
        lab = lab_up(spec)
        try:
            yield lab, where
        finally:
            patch.setenv("IOTUNER_STATE_DIR", str(where))  # a test's own `state` is gone
            lab_down()


def snapshot(state: Path) -> LabRecord:
    """The lab's record as it is now (take it before `down`, to check afterwards)."""
    record = load_record(state / "lab.json")
    assert record is not None, "no lab recorded"
    return record


def assert_nothing_left(record: LabRecord) -> None:
    """Nothing `record` describes is still on the system, and the record itself is gone."""
    assert not record.path.exists()
    shm = f"/dev/shm/iotuner-lab-{record.lab_id}"
    run = f"/run/iotuner-lab/{record.lab_id}"
    for directory in (shm, run):
        assert not os.path.lexists(directory), directory
        assert system.loops_under(directory) == [], directory
        assert system.mounts_under(directory) == [], directory
    for step in record.steps:
        if step.kind == "loop":
            assert system.loops_backed_by(step.target) == [], step
        if step.kind == "throttle" and _free(step.target):
            # Read only while the number is free before and after: once `down` freed it,
            # another worker's lab may take it and set caps of its own.
            where = str(step.detail.get("where", "v1"))
            caps = throttle.read_caps(where, step.target)
            if _free(step.target):
                assert not any(caps.as_dict().values()), step


def _free(majmin: str) -> bool:
    """Whether the loop device numbered `majmin` has no file attached (a bus's or stripe's
    device that is no loop device counts as free: only a lab's loop devices are reused)."""
    return not Path(f"/sys/dev/block/{majmin}/loop/backing_file").exists()


def assert_no_server_left(record: LabRecord) -> None:
    """Beyond assert_nothing_left: no nbdkit or nbdfuse of this lab, no FUSE mount."""
    assert_nothing_left(record)
    for root in (f"/dev/shm/iotuner-lab-{record.lab_id}", f"/run/iotuner-lab/{record.lab_id}"):
        for program in ("nbdkit", "nbdfuse"):
            assert processes_using(root, program) == [], (program, root)
        assert not any(p.startswith(root) for _, p in system.mounts())


def plugin_text(kind: str) -> str:
    """A modelled disk's plugin source with the headers it includes (all beside it)."""
    source = SOURCES[kind]
    return source.read_text() + "".join(h.read_text() for h in sorted(source.parent.glob("*.h")))


def direct_round_trip(device: str, offset: int, written: bytes) -> bytes:
    """`written` written to `device` at `offset` with O_DIRECT, then read back over a cleared
    buffer: what came back."""
    size = len(written)
    buf = mmap.mmap(-1, size)  # page-aligned for O_DIRECT
    buf.write(written)
    fd = os.open(device, os.O_RDWR | os.O_DIRECT)
    try:
        assert os.pwrite(fd, buf, offset) == size
        buf.seek(0)
        buf.write(bytes(size))
        assert os.preadv(fd, [buf], offset) == size
    finally:
        os.close(fd)
    return bytes(buf)


def recorded_steps(state: Path) -> list[Step]:
    """The steps of the lab's record as it is now; none before there is one."""
    record = load_record(state / "lab.json")  # replaced atomically: never seen half-written
    return record.steps if record is not None else []


def kill_9_up_when(
    state: Path, spec: str, reached: Callable[[Step], bool], started: str, what: str
) -> LabRecord:
    """`iotuner lab up spec` in a session of its own, killed with SIGKILL (the command and
    whatever it runs; the servers it starts run in sessions of their own) once a step of its
    record is `reached` (`started` and `what` name that in the failure messages); the record
    it left."""
    up = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "lab", "up", spec],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    try:
        while not any(reached(s) for s in recorded_steps(state)):
            assert up.poll() is None, f"lab up ended before {started}"
            assert time.monotonic() < deadline, f"no {what} after 60 s"
            time.sleep(0.01)
    finally:
        os.killpg(up.pid, signal.SIGKILL)
        up.wait()
    return snapshot(state)


def cpus_of(pid: int) -> set[int]:
    """Every CPU any thread of `pid` may run on."""
    return {cpu for t in psutil.Process(pid).threads() for cpu in os.sched_getaffinity(t.id)}
