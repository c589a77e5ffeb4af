"""Loop devices over files in a private /dev/shm directory, for the daemon's lab tests.

A directory of one's own (not /dev/shm itself, where tests/loopdev.py and other programs put
theirs) makes a hardware class only these devices share. Every device is handed out with a
never-used device's queue, put back as found when attached (loop devices keep their queue
after a detach) and detached at the end, the directory removed, whatever the test did.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from contextlib import suppress
from pathlib import Path

from tests.loopdev import SETTINGS, make_fresh, need_root


def queue_value(name: str, attr: str) -> str:
    """A queue attribute as read; the scheduler by its active name."""
    text = Path(f"/sys/block/{name}/queue/{attr}").read_text().strip()
    if attr == "scheduler" and "[" in text:
        return text.split("[", 1)[1].split("]", 1)[0]
    return text


class Loops:
    """Attach loop devices in private directories; `close` undoes all of it."""

    def __init__(self) -> None:
        need_root()
        self.dirs: list[Path] = []
        self._found: dict[str, dict[str, str]] = {}  # device -> its queue right after attach

    def directory(self) -> Path:
        """A new private directory below /dev/shm."""
        path = Path(f"/dev/shm/iotuner-test-{uuid.uuid4().hex[:12]}")
        path.mkdir()
        self.dirs.append(path)
        return path

    def attach(self, directory: Path, size_mb: int, file: str | None = None) -> str:
        """A loop device over `directory/file` (made `size_mb` MiB if new); its kernel name."""
        backing = directory / (file or f"d{uuid.uuid4().hex[:6]}.img")
        if not backing.exists():
            with backing.open("wb") as f:
                f.truncate(size_mb << 20)
        device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                                capture_output=True, text=True).stdout.strip()  # fmt: skip
        name = device.removeprefix("/dev/")
        self._found[name] = {s: queue_value(name, s) for s in SETTINGS}
        make_fresh(name)
        return name

    def detach(self, name: str) -> None:
        """Put the device's queue back as found, then detach it."""
        found = self._found.pop(name, None)
        if found is not None:
            for setting in SETTINGS:  # the scheduler first: it resets nr_requests
                with suppress(OSError):
                    Path(f"/sys/block/{name}/queue/{setting}").write_text(found[setting] + "\n")
        subprocess.run(["losetup", "--detach", f"/dev/{name}"], check=False, capture_output=True)

    def close(self) -> None:
        """Detach every device still attached and remove the directories."""
        for name in list(self._found):
            self.detach(name)
        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)
