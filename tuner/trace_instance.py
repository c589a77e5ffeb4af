"""A tracefs instance of iotuner's own that records the block request events of some devices.

An instance (tracefs's instances/NAME) has its own ring buffer and event switches, so two
iotuner processes, or perf and trace-cmd beside one, never see or turn off each other's
events. The events are filtered in the kernel by device number, so only the named devices'
requests reach the buffer. `iotuner capture` (tuner/capture/tracefs.py) and the online tune's
latency sampler (tuner/online/latency.py) both make theirs here; each decides how a failure
is reported.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

BLOCK_EVENTS = ("block_rq_issue", "block_rq_complete")
REMOVE_TRIES = 50
"""An instance whose pipe was just closed can be busy for a moment: rmdir is retried this many
times, 20 ms apart."""


def kernel_dev(major: int, minor: int) -> int:
    """The kernel's own dev_t (MKDEV: major << 20 | minor), which the event filters compare."""
    return (major << 20) | minor


def create_instance(
    where: Path,
    devices: Sequence[int],
    buffer_kb: int,
    clock: str | None = None,
    page_kb: int | None = None,
) -> None:
    """Make the instance at `where` with a per-CPU ring of `buffer_kb` (its trace clock
    `clock` when given: "mono" is the reader's time.monotonic_ns(); its sub-buffer pages of
    `page_kb` where the kernel has buffer_subbuf_size_kb, 6.8+) and BLOCK_EVENTS enabled for
    the devices with these dev_t numbers only; OSError when the kernel refuses a step (the
    caller removes what was made, with `remove_instance`)."""
    where.mkdir(mode=0o700)
    (where / "buffer_size_kb").write_text(f"{buffer_kb}\n")
    if clock is not None:
        (where / "trace_clock").write_text(f"{clock}\n")
    if page_kb is not None and (where / "buffer_subbuf_size_kb").exists():
        (where / "buffer_subbuf_size_kb").write_text(f"{page_kb}\n")
    condition = " || ".join(f"dev == {d}" for d in devices)
    for event in BLOCK_EVENTS:
        (where / "events" / "block" / event / "filter").write_text(condition + "\n")
    for event in BLOCK_EVENTS:
        (where / "events" / "block" / event / "enable").write_text("1\n")


def remove_instance(where: Path) -> None:
    """Turn the instance's events off and remove it (its trace_pipe must be closed first); a
    busy instance is retried REMOVE_TRIES times. Nothing to do when it is gone; OSError when
    it cannot be removed."""
    if not where.is_dir():
        return
    for event in BLOCK_EVENTS:
        with suppress(OSError):
            (where / "events" / "block" / event / "enable").write_text("0\n")
    for attempt in range(REMOVE_TRIES):
        try:
            where.rmdir()
            return
        except OSError as err:
            if err.errno != errno.EBUSY or attempt == REMOVE_TRIES - 1:
                raise
            time.sleep(0.02)
