"""The daemon tests' loop devices: a daemon watching their class never meets one mid-reset."""

from __future__ import annotations

import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from tests.daemon.loops import Loops, queue_value
from tests.daemon.plans import SIZE_MB
from tests.loopdev import SETTINGS

pytestmark = pytest.mark.lab

DIRTY = {"scheduler": "mq-deadline", "read_ahead_kb": "4092"}  # a held plan's, left behind


def _leave_dirty(directory: Path) -> tuple[str, dict[str, str]]:
    """Attach a scratch file, give the device a plan's queue, detach it as a killed test
    would: the next `losetup --find` takes the same number. Returns it and its queue before."""
    backing = directory / f"scratch-{uuid.uuid4().hex[:6]}.img"
    with backing.open("wb") as f:
        f.truncate(3 << 20)
    device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    name = device.removeprefix("/dev/")
    before = {s: queue_value(name, s) for s in SETTINGS}
    for attr, value in DIRTY.items():
        Path(f"/sys/block/{name}/queue/{attr}").write_text(value + "\n")
    subprocess.run(["losetup", "--detach", device], check=True)
    backing.unlink()
    return name, before


def test_a_device_takes_its_class_size_only_with_a_fresh_queue(loops: Loops) -> None:
    # What a daemon holding the class sees of a new device from the moment it could act.
    lab = loops.directory()
    name, before = _leave_dirty(lab)
    seen: list[dict[str, str]] = []
    stop = threading.Event()

    def watch() -> None:
        size = Path(f"/sys/block/{name}/size")
        while True:
            done = stop.is_set()  # one look more once attach returned: the device is ready
            if size.read_text().strip() == str(SIZE_MB << 11):  # 512-byte sectors
                seen.append({attr: queue_value(name, attr) for attr in DIRTY})
            if done:
                return

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        got = loops.attach(lab, SIZE_MB)
    finally:
        stop.set()
        watcher.join()
    try:
        if got != name:
            pytest.skip(f"another process took {name} first; {got} was not left dirty")
        assert seen, "the watcher saw the device at its class size"
        assert all(s == {"scheduler": "none", "read_ahead_kb": "128"} for s in seen), [
            s for s in seen if s["read_ahead_kb"] != "128"
        ][:3]
    finally:
        if got == name:  # put back the queue it had before it was left dirty
            loops.found[got] = before
        loops.detach(got)
