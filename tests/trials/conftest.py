"""Loop devices over /dev/shm files, and file systems on them, for real trials.

Everything a test creates is recorded and undone in reverse order at teardown, also when the
test fails: mounts first, then loop devices (upper ones before those they sit on), then files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.owned import unique

SHM = Path("/dev/shm")


def _tool(name: str) -> str:
    """The tool's absolute path, found now: a test may empty PATH before teardown runs."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed")
    return path


TOOLS = ("losetup", "mkfs.ext4", "mount", "umount")


def _run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


class Loops:
    """Creates loop devices and mounts, and removes them all in `close`, newest first."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.files: list[Path] = []
        self.devices: list[str] = []
        self.mounts: list[Path] = []
        self.undo: list[list[str]] = []  # commands, in the order they must run reversed
        self.tool = {name: _tool(name) for name in TOOLS}

    def file(self, size: int, directory: Path = SHM) -> Path:
        """A file of `size` bytes (in /dev/shm), filled so reads hit real pages."""
        path = directory / f"{unique('iotuner-test-')}.img"  # no other worker's or test's
        self.files.append(path)
        with path.open("wb") as out:
            block = os.urandom(1 << 20)
            for _ in range(size >> 20):
                out.write(block)
        return path

    def loop(self, size: int = 256 << 20, *, partscan: bool = False) -> str:
        """A loop device over a new /dev/shm file."""
        return self.over(str(self.file(size)), partscan=partscan)

    def over(self, backing: str, *, partscan: bool = False) -> str:
        """A loop device over `backing` (a file or another device)."""
        flags = ["--partscan"] if partscan else []
        device = _run(self.tool["losetup"], "--find", "--show", *flags, backing)
        self.devices.append(device)
        self.undo.append([self.tool["losetup"], "-d", device])
        return device

    def mkfs_mount(self, device: str) -> Path:
        """An ext4 file system on `device`, mounted on a new directory."""
        # Lazy init would write inode tables in the background during trials.
        lazy_off = "lazy_itable_init=0,lazy_journal_init=0"
        _run(self.tool["mkfs.ext4"], "-q", "-F", "-E", lazy_off, device)
        point = self.tmp / f"mnt{len(self.mounts)}"
        point.mkdir()
        _run(self.tool["mount"], device, str(point))
        self.mounts.append(point)
        self.undo.append([self.tool["umount"], str(point)])
        return point

    def close(self) -> None:
        """Undo everything, newest first; keep going past failures, then report them."""
        errors: list[str] = []
        for command in reversed(self.undo):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                errors.append(f"{' '.join(command)}: {done.stderr.strip()}")
        for path in self.files:
            path.unlink(missing_ok=True)
        if errors:
            raise RuntimeError("; ".join(errors))


@pytest.fixture
def loops(request: pytest.FixtureRequest, tmp_path: Path) -> Loops:
    """Loop devices over /dev/shm files for one test (root only), removed at teardown by a
    finalizer, also when the test or a fixture after this one fails."""
    if os.geteuid() != 0:
        pytest.skip("needs root: creates loop devices")
    created = Loops(tmp_path)
    request.addfinalizer(created.close)
    return created


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """iotuner's state directory, private to the test (trials keep none, but never risk it)."""
    path = tmp_path / "state"
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(path))
    return path
