"""Lab tests: a private state directory per test, a safety-net teardown, leftover checks."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tuner.lab import lab_down, system, throttle
from tuner.lab.modelled import SOURCES
from tuner.lab.nbd import processes_using
from tuner.lab.record import LabRecord, load_record


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Lab tests need root: skip them, with the reason, anywhere else."""
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (loop devices, mounts, block throttling)")
    for item in items:
        if item.get_closest_marker("lab") is not None:
            item.add_marker(skip)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """IOTUNER_STATE_DIR set to a fresh directory; whatever a failed test left is torn down."""
    path = tmp_path / "state"
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(path))
    yield path
    if (path / "lab.json").exists():
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
        if step.kind == "throttle":
            where = str(step.detail.get("where", "v1"))
            assert not any(throttle.read_caps(where, step.target).as_dict().values()), step


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
