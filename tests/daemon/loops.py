"""Loop devices over files in a private /dev/shm directory, for the daemon's lab tests.

A directory of one's own (not /dev/shm itself, where tests/loopdev.py and other programs put
theirs) makes a hardware class only these devices share. Every device is handed out with a
never-used device's queue, put back as found when attached (loop devices keep their queue
after a detach) and detached at the end, the directory removed, whatever the test did.

A new device takes its size, and with it its class, only after its queue was reset: it is
attached over a 1 MiB file, reset, and then grown to its size (`losetup --set-capacity`, whose
change event a watching daemon acts on). Reset at its full size, a daemon holding that class
could be giving it the plan at the same moment, and since Linux 6.18 a write of nr_requests
or of the scheduler while another is under way on the same queue is refused with EBUSY
("cannot reset loop1's queue: loop1 nr_requests=128: Device or resource busy").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from contextlib import suppress
from pathlib import Path

from tests.loopdev import SETTINGS, make_fresh, need_root

HIDDEN_MB = 1  # a new device's size while its queue is reset: no test's class has it


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
        # device -> its queue right after attach, put back before it is detached
        self.found: dict[str, dict[str, str]] = {}

    def directory(self) -> Path:
        """A new private directory below /dev/shm."""
        path = Path(f"/dev/shm/iotuner-test-{uuid.uuid4().hex[:12]}")
        path.mkdir()
        self.dirs.append(path)
        return path

    def attach(
        self, directory: Path, size_mb: int, file: str | None = None, device: str | None = None
    ) -> str:
        """A loop device over `directory/file` (made `size_mb` MiB if new); its kernel name.

        A new file reaches `size_mb` only once the device's queue is fresh (see above); a file
        that exists is attached whole at once, so re-attach one only where no daemon process
        watches its class (test_hotplug.py drives the daemon's holder itself). `device`: this
        /dev/loopN rather than the first free one (spare_device)."""
        assert size_mb != HIDDEN_MB, f"{HIDDEN_MB} MiB is the size of a device being reset"
        backing = directory / (file or f"d{uuid.uuid4().hex[:6]}.img")
        new = not backing.exists()
        if new:
            with backing.open("wb") as f:
                f.truncate(HIDDEN_MB << 20)
        if device is None:
            device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                                    capture_output=True, text=True).stdout.strip()  # fmt: skip
        else:
            subprocess.run(["losetup", device, str(backing)], check=True, capture_output=True)
        name = device.removeprefix("/dev/")
        self.found[name] = {s: queue_value(name, s) for s in SETTINGS}
        make_fresh(name)
        if new:
            os.truncate(backing, size_mb << 20)
            subprocess.run(["losetup", "--set-capacity", device], check=True, capture_output=True)
        return name

    def detach(self, name: str) -> None:
        """Put the device's queue back as found, then detach it."""
        found = self.found.pop(name, None)
        if found is not None:
            for setting in SETTINGS:  # the scheduler first: it resets nr_requests
                with suppress(OSError):
                    Path(f"/sys/block/{name}/queue/{setting}").write_text(found[setting] + "\n")
        subprocess.run(["losetup", "--detach", f"/dev/{name}"], check=False, capture_output=True)

    def close(self) -> None:
        """Detach every device still attached and remove the directories."""
        for name in list(self.found):
            self.detach(name)
        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)


def spare_device(first: int = 200) -> str:
    """A /dev/loopN no one holds, from `first` up: `losetup --find` (every other test's way)
    takes the lowest free number, so this name is not reused while a test watches it."""
    for number in range(first, first + 56):
        if not Path(f"/sys/block/loop{number}/loop/backing_file").exists():
            return f"/dev/loop{number}"
    raise RuntimeError(f"no free loop device from loop{first} up")
