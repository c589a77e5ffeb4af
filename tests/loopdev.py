"""A real loop device over a /dev/shm file for tests that need the kernel's own answers.

Loop devices keep their queue settings after they are detached: a reused number comes with
whatever its last user left (a test that crashed, another program). So the device is handed
out with the queue a never-used loop device has, the way the lab takes its devices, and put
back as found before it is detached, the file removed, whatever the test did.
"""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tuner.lab.queue import defaults, write_queue
from tuner.tunables.engine import TunableEngine

# In the order they are put back: rotational and max_sectors_kb move read_ahead_kb (6.17+).
SETTINGS = ("rotational", "scheduler", "nr_requests", "max_sectors_kb", "rq_affinity",
            "nomerges", "write_cache", "read_ahead_kb")  # fmt: skip


def need_root() -> None:
    """Skip unless running as root with losetup."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create loop devices")
    if subprocess.run(["losetup", "--version"], capture_output=True).returncode != 0:
        pytest.skip("needs losetup")


def _queue(name: str) -> Path:
    return Path(f"/sys/block/{name}/queue")


@contextmanager
def loop_device(size_mb: int = 64) -> Iterator[str]:
    """A fresh loop device's kernel name ("loop5"); detached and its file removed after."""
    need_root()
    backing = Path(f"/dev/shm/iotuner-test-{uuid.uuid4().hex[:12]}.img")
    with backing.open("wb") as f:
        f.truncate(size_mb << 20)
    try:
        device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                                capture_output=True, text=True).stdout.strip()  # fmt: skip
        name = device.removeprefix("/dev/")
        found = {s: (_queue(name) / s).read_text().strip() for s in SETTINGS}
        try:
            make_fresh(name)
            yield name
        finally:
            # A test may detach it: the name is then anyone's, and what another process
            # attached under it is left alone.
            mine = backing_file(name) == str(backing)
            if mine or backing_file(name) is None:
                _put_back(name, found)
            if mine:
                subprocess.run(["losetup", "--detach", device], check=False)
    finally:
        backing.unlink(missing_ok=True)


def backing_file(name: str) -> str | None:
    """The file loop device `name` is attached to, None while it is free."""
    try:
        text = Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    except OSError:
        return None
    return text.removesuffix(" (deleted)")


@contextmanager
def attached_as(name: str, size_mb: int = 16) -> Iterator[Path]:
    """A new file attached to the free loop device `name` (`losetup /dev/NAME FILE`), as the
    next user who takes a freed name would; skips the test when another process took the
    name first (theirs then, never touched). Detached, if still this file's, and removed."""
    backing = Path(f"/dev/shm/iotuner-test-{uuid.uuid4().hex[:12]}.img")
    with backing.open("wb") as f:
        f.truncate(size_mb << 20)
    try:
        taken = subprocess.run(["losetup", f"/dev/{name}", str(backing)], capture_output=True,
                               text=True)  # fmt: skip
        if taken.returncode != 0:
            pytest.skip(f"{name} was taken by another process first: {taken.stderr.strip()}")
        try:
            yield backing
        finally:
            if backing_file(name) == str(backing):
                subprocess.run(["losetup", "--detach", f"/dev/{name}"], check=False)
    finally:
        backing.unlink(missing_ok=True)


LOOP_CTL_ADD = 0x4C80
LOOP_CTL_REMOVE = 0x4C81


@contextmanager
def new_loop_device(size_mb: int = 64) -> Iterator[str]:
    """A loop device the kernel makes for this test (LOOP_CTL_ADD, a number no device has), so
    it has no history: state the kernel keeps past a detach (wbt's mode) is a new device's.
    Detached and removed (LOOP_CTL_REMOVE) after; its file removed."""
    need_root()
    ctl = os.open("/dev/loop-control", os.O_RDWR)
    try:
        number = max((int(p.name[4:]) for p in Path("/sys/block").glob("loop[0-9]*")), default=-1)
        while True:  # another process may add the same number between our look and our add
            number += 1
            try:
                fcntl.ioctl(ctl, LOOP_CTL_ADD, number)
                break
            except OSError as err:
                if err.errno != errno.EEXIST:
                    raise
        name = f"loop{number}"
        try:
            # A `losetup --find` elsewhere may take the new free device first: then it is
            # theirs (attached_as skips), and never removed here.
            with attached_as(name, size_mb):
                yield name
        finally:
            with suppress(OSError):  # EBUSY: another process attached it
                fcntl.ioctl(ctl, LOOP_CTL_REMOVE, number)
    finally:
        os.close(ctl)


def make_fresh(name: str) -> None:
    """Give a reused loop device the queue a never-used one has."""
    # Unjournaled: a test's loop device is put back by loop_device() itself, as found.
    with TunableEngine() as engine:
        refused = write_queue(engine, name, defaults(engine.tunables.sys, name))
    if refused:
        raise RuntimeError(f"cannot reset {name}'s queue: {'; '.join(refused)}")


def _put_back(name: str, found: dict[str, str]) -> None:
    """The scheduler first (it resets nr_requests), then the rest; best effort each."""
    for setting in SETTINGS:
        value = found[setting]
        if setting == "scheduler":
            value = value.split("[", 1)[1].split("]", 1)[0] if "[" in value else value
        with suppress(OSError):
            (_queue(name) / setting).write_text(value + "\n")
