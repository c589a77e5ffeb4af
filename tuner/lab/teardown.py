"""`lab_down`: undo every recorded step, newest first, whether or not it was finished.

Each undo looks at the system rather than trusting the record: a loop device is found by its
backing file (so one attached by a `losetup` whose caller was killed before it could record the
device is found too), a mount by its mountpoint. Undoing something already gone is a no-op, so
`down` can be run again after a partial failure. Directories are removed only below the lab's
two roots, and only when no mount or loop device still depends on them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tuner.errors import BadInput, IotunerError
from tuner.lab import congestion, dirty, nbd, network, system, throttle
from tuner.lab.holders import holders
from tuner.lab.queue import queue_engine, write_queue
from tuner.lab.record import LabRecord, Step, load_record, record_path
from tuner.state import state_dir

SAFE_PREFIXES = ("/dev/shm/iotuner-lab-", "/run/iotuner-lab/")
RUN_ROOT = Path("/run/iotuner-lab")
DETACH_WAIT_S = 5.0


def require_root(action: str) -> None:
    """BadInput unless running as root; checked before anything is created."""
    if os.geteuid() != 0:
        verb = "removes" if action == "down" else "creates"
        raise BadInput(
            f"`iotuner lab {action}` needs root: it {verb} loop devices, mounts and block "
            "throttling rules (run it with sudo)"
        )


@contextmanager
def lab_lock() -> Iterator[None]:
    """Hold `state_dir()/lab.lock` so two `lab up`/`lab down` never interleave."""
    path = state_dir() / "lab.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInput(f"another `iotuner lab` command holds {path}; wait for it") from None
        yield
    finally:
        os.close(fd)


def lab_down() -> list[str]:
    """Remove the recorded lab; what was removed, one line each (empty: there was no lab)."""
    require_root("down")
    with lab_lock():
        record = load_record(record_path(state_dir()))
        if record is None:
            return []
        return teardown(record)


def teardown(record: LabRecord) -> list[str]:
    """Undo `record`'s steps newest first; delete the record, or keep what failed and raise."""
    removed: list[str] = []
    failed: list[str] = []
    kept: list[Step] = []
    for step in reversed(record.steps):
        try:
            removed.extend(_UNDO[step.kind](step))
        except (IotunerError, OSError, KeyError) as err:
            failed.append(f"{step.kind} {step.target}: {err}")
            kept.insert(0, step)
    if failed:
        record.steps = kept
        record.state = "broken"
        record.save()
        raise system.LabError(
            f"lab down could not remove {len(failed)} thing(s), kept in {record.path}: "
            + "; ".join(failed)
        )
    record.remove()
    with contextlib.suppress(OSError):
        RUN_ROOT.rmdir()  # shared by concurrent labs: only when it is empty
    return [*removed, f"record {record.path}"]


def _undo_throttle(step: Step) -> list[str]:
    where = str(step.detail.get("where", "v1"))
    throttle.clear_caps(where, step.target)
    return [f"throttle {step.target} ({step.label})"]


def _undo_cgroup(step: Step) -> list[str]:
    path = Path(step.target)
    if not path.exists():
        return []
    path.rmdir()
    return [f"cgroup {path}"]


def _undo_mount(step: Step) -> list[str]:
    if not system.is_mounted(step.target):
        return []
    system.umount(step.target)
    return [f"mount {step.target} ({step.label})"]


def _undo_btrfs(step: Step) -> list[str]:
    for device in step.detail.get("devices", []):
        # Only tidies the kernel's list of btrfs devices; a failure leaves nothing behind.
        with contextlib.suppress(system.LabError):
            system.run(["btrfs", "device", "scan", "--forget", str(device)])
    return []


def _undo_loop(step: Step) -> list[str]:
    removed = []
    for device in system.loops_backed_by(step.target):
        found = step.detail.get("found") if device == step.device else None
        if found:  # put back what an earlier user left on this loop device
            with queue_engine() as engine:
                write_queue(engine, device, {str(k): str(v) for k, v in found.items()})
        system.loop_detach(device)
        # A busy device is only marked to detach when its last user closes it (a mkfs or
        # a reader orphaned by a killed `lab up`, a process exiting): a close takes
        # milliseconds, so one still open after DETACH_WAIT_S is in use, not closing.
        deadline = time.monotonic() + DETACH_WAIT_S
        while system.loop_backing(device) is not None:
            if time.monotonic() > deadline:
                who = "; ".join(holders(device)) or "nothing the kernel shows holds it"
                raise system.LabError(f"{device} is still in use ({who}); it detaches when closed")
            time.sleep(0.1)
        removed.append(f"loop {device} ({step.label})")
    return removed


def _undo_fuse(step: Step) -> list[str]:
    removed = []
    if system.is_mounted(step.target):
        try:
            system.umount(step.target)
        except system.LabError:
            # Its server gone, a FUSE mount can refuse a plain umount; the loop device over
            # it is already detached (undone before), so nothing still uses it.
            system.run(["umount", "--lazy", step.target])
        removed.append(f"fuse mount {step.target} ({step.label})")
    fuse_file = str(Path(step.target) / nbd.FUSE_FILE)
    removed += [f"nbdfuse pid {pid} ({step.label})" for pid in nbd.stop(fuse_file, "nbdfuse")]
    return removed


def _undo_server(step: Step) -> list[str]:
    pids = nbd.stop(step.target, "nbdkit")
    return [f"nbdkit pid {pid} ({step.label})" for pid in pids]


def _undo_dir(step: Step) -> list[str]:
    path = step.target
    if not path.startswith(SAFE_PREFIXES) or ".." in Path(path).parts:
        raise system.LabError(f"refusing to remove {path}: not a lab directory")
    if not os.path.lexists(path):
        return []
    if busy := system.mounts_under(path):
        raise system.LabError(f"{busy[0]} is still mounted")
    if loops := system.loops_under(path):
        raise system.LabError(f"{loops[0]} still uses a file in it")
    for program in ("nbdkit", "nbdfuse"):
        if pids := nbd.processes_using(path, program):
            raise system.LabError(f"{program} pid {pids[0]} still uses it")
    shutil.rmtree(path)
    return [f"dir {path}"]


_UNDO: dict[str, Callable[[Step], list[str]]] = {
    "throttle": _undo_throttle,
    "cgroup": _undo_cgroup,
    "mount": _undo_mount,
    "btrfs": _undo_btrfs,
    "loop": _undo_loop,
    "fuse": _undo_fuse,
    "server": _undo_server,
    "dir": _undo_dir,
    "dirty": dirty.undo,
    congestion.KIND: congestion.undo,
    **network.UNDO,
}
