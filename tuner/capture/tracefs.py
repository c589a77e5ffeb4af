"""A tracefs instance of the capture's own, and a bounded read of its trace_pipe.

Each capture makes /sys/kernel/tracing/instances/iotuner-<pid>: its own ring buffer and event
switches, so two captures, or perf and trace-cmd beside one, never see or turn off each other's
events. The block request events are filtered in the kernel by device number (only the named
devices' requests reach the buffer at all), and the instance is removed on leaving, also on an
error, Ctrl-C or SIGTERM (turned into KeyboardInterrupt while the capture runs).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from tuner.errors import BadInput, IotunerError
from tuner.trace_instance import BLOCK_EVENTS as EVENTS
from tuner.trace_instance import create_instance, remove_instance

TRACEFS = Path("/sys/kernel/tracing")
BUFFER_KB = 4096
"""Per-CPU ring buffer: at 200 bytes a trace_pipe line, 20,000 events queue per CPU while
the reader catches up; what a full buffer drops is counted as lost, never hidden."""
READ_BYTES = 1 << 16
POLL_S = 0.2


def ensure_mounted(root: Path = TRACEFS) -> Path:
    """tracefs at `root`, mounting it when it is not (root only); IotunerError when it cannot
    be, or when the kernel has no block request events."""
    if not (root / "instances").is_dir():
        if os.geteuid() != 0:
            raise BadInput("capture needs root (it reads the kernel's block tracepoints)")
        done = subprocess.run(["mount", "-t", "tracefs", "nodev", str(root)],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if done.returncode != 0 or not (root / "instances").is_dir():
            why = done.stderr.strip().splitlines()[-1:] or ["no instances directory"]
            raise IotunerError(f"cannot mount tracefs at {root}: {why[0][:120]}")
    if not all((root / "events" / "block" / e).is_dir() for e in EVENTS):
        raise IotunerError(f"{root}: this kernel has no block_rq_issue/block_rq_complete events")
    return root


class _Stop(KeyboardInterrupt):
    """SIGTERM during a capture: unwinds like Ctrl-C, so the instance is removed."""


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Stop()

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave the process's handling alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextmanager
def instance(devices: list[int], root: Path = TRACEFS) -> Iterator[Path]:
    """A tracefs instance recording EVENTS of the devices with these dev_t numbers only."""
    if not devices:
        raise BadInput("capture: name at least one device")
    where = ensure_mounted(root) / "instances" / f"iotuner-{os.getpid()}"
    _remove(where)  # a killed capture of an earlier process with our pid
    with _sigterm_unwinds():
        try:
            try:
                create_instance(where, devices, BUFFER_KB)
            except OSError as err:
                raise IotunerError(
                    f"cannot make the tracefs instance {where}: {err.strerror}"
                ) from None
            yield where
        finally:
            _remove(where)


def _remove(where: Path) -> None:
    """Remove the instance (tuner/trace_instance.py), one line when it cannot be."""
    try:
        remove_instance(where)
    except OSError as err:
        raise IotunerError(f"cannot remove the tracefs instance {where}: {err.strerror}; "
                           "remove it with rmdir") from None  # fmt: skip


def read_pipe(
    where: Path, seconds: float, line: Callable[[str], None], stop: Callable[[], bool] | None = None
) -> None:
    """Hand each trace_pipe line of the instance at `where` to `line` for `seconds` (or until
    `stop()` says so), then drain what the buffer holds; memory: one read of READ_BYTES."""
    fd = os.open(where / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        rest = b""
        deadline = time.monotonic() + seconds
        draining = False
        while True:
            now = time.monotonic()
            if not draining and (now >= deadline or (stop is not None and stop())):
                draining = True
            ready, _, _ = select.select(
                [fd], [], [], 0 if draining else min(POLL_S, deadline - now)
            )
            if not ready:
                if draining:
                    break
                continue
            try:
                data = os.read(fd, READ_BYTES)
            except BlockingIOError:
                if draining:
                    break
                continue
            if not data:
                if draining:
                    break
                time.sleep(POLL_S / 4)  # trace_pipe is empty-but-open: wait, never spin
                continue
            *whole, rest = (rest + data).split(b"\n")
            for raw in whole:
                line(raw.decode("ascii", "replace"))
            if len(rest) > READ_BYTES:
                rest = b""  # no event line is this long: drop it, counted by the caller
    finally:
        os.close(fd)
