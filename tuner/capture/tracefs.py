"""A tracefs instance of the capture's own, and a bounded read of its ring buffers.

Each capture makes /sys/kernel/tracing/instances/iotuner-<pid>: its own ring buffer and event
switches, so two captures, or perf and trace-cmd beside one, never see or turn off each other's
events. The block request events are filtered in the kernel by device number (only the named
devices' requests reach the buffer at all), and the instance is removed on leaving, also on an
error, Ctrl-C or SIGTERM (turned into KeyboardInterrupt while the capture runs).

The events are read as the kernel stores them, each CPU's ring-buffer pages
(per_cpu/cpuN/trace_pipe_raw, decoded by tuner/capture/ringbuf.py): about 0.3 us of Python an
event, where formatting and parsing trace_pipe's text cost 8. The instance's clock is `mono`,
the reader's own time.monotonic_ns(), so the CPUs' records can be merged in time order: each
poll takes the time, then reads every CPU's pages; a record stamped before that time (less
GRACE_NS for a record reserved but not yet committed) can no longer be followed by an earlier
one, and is handed on; the later ones wait for the next poll.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from types import FrameType

from tuner.capture.events import Completion, Issue
from tuner.capture.ringbuf import Decoder, parse_event_format, parse_page_format
from tuner.errors import BadInput, IotunerError
from tuner.trace_instance import BLOCK_EVENTS as EVENTS
from tuner.trace_instance import create_instance, remove_instance

TRACEFS = Path("/sys/kernel/tracing")
BUFFER_KB = 4096
"""Per-CPU ring buffer: at 72 bytes an issue and 56 a completion, 30,000 requests queue per
CPU while the reader catches up; what a full buffer drops is counted as lost, never hidden."""
PAGE_KB = 64
"""Sub-buffer pages of 64 KiB where the kernel allows them (buffer_subbuf_size_kb): a read
returns one page, so a busy disk's records take a sixteenth of the reads and decoder calls
4 KiB pages would."""
READ_BYTES = PAGE_KB << 10
POLL_S = 0.5
"""How often the buffers are read: each read hands the statistics a batch, whose fixed cost
the longer polls spread; a 4 MiB buffer holds several seconds of the busiest disk."""
CLOCK = "mono"
GRACE_NS = 10_000_000
"""How long before a poll a record may have been reserved and not yet committed (the kernel
does it with preemption off: microseconds); later records wait for the next poll."""


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
                create_instance(where, devices, BUFFER_KB, clock=CLOCK, page_kb=PAGE_KB)
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


def decoder(where: Path) -> Decoder:
    """The page decoder for the instance at `where`, from the kernel's own format files."""
    events = where / "events"
    names = ("header_page", "block/block_rq_issue/format", "block/block_rq_complete/format")
    try:
        texts = [(events / name).read_text() for name in names]
    except OSError as err:
        raise IotunerError(
            f"{events}: cannot read the ring buffer's format: {err.strerror}"
        ) from None
    return Decoder(parse_page_format(texts[0], f"{events}/header_page"),
                   parse_event_format(texts[1], "block_rq_issue/format"),
                   parse_event_format(texts[2], "block_rq_complete/format"))  # fmt: skip


def _cpus(where: Path) -> list[Path]:
    found = [p for p in (where / "per_cpu").iterdir() if re.fullmatch(r"cpu\d{1,5}", p.name)]
    return sorted(found, key=lambda p: int(p.name[3:]))


def lost(where: Path) -> int:
    """Records the instance's buffers lost: overwritten before they were read (overrun) or
    dropped, summed over its CPUs."""
    total = 0
    for cpu in _cpus(where):
        try:
            text = (cpu / "stats").read_text()
        except OSError:
            continue
        for name in ("overrun", "dropped events"):
            found = re.search(rf"^{name}: (\d+)$", text, re.M)
            total += int(found[1]) if found else 0
    return total


def read_pages(
    where: Path,
    seconds: float,
    batch: Callable[[list[Issue], list[Completion]], None],
    stop: Callable[[], bool] | None = None,
) -> None:
    """Hand the instance's block request issues and completions to `batch`, each in time
    order, one batch a poll, for `seconds` (or until `stop()` says so), then what the
    buffers hold; memory: the records of one poll."""
    decode = decoder(where).decode
    fds = [os.open(cpu / "trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
           for cpu in _cpus(where)]  # fmt: skip
    when = itemgetter(0)
    try:
        issues: list[Issue] = []
        completions: list[Completion] = []
        # the CPUs whose records each list holds: one CPU's are in order, several need a merge
        i_cpus: set[int] = set()
        c_cpus: set[int] = set()
        deadline = time.monotonic() + seconds
        while True:
            last = time.monotonic() >= deadline or (stop is not None and stop())
            mark = time.monotonic_ns() - GRACE_NS
            for cpu, fd in enumerate(fds):
                while True:
                    try:
                        page = os.read(fd, READ_BYTES)
                    except BlockingIOError:
                        break
                    if not page:
                        break
                    found, ended = decode(page)
                    if found:
                        issues += found
                        i_cpus.add(cpu)
                    if ended:
                        completions += ended
                        c_cpus.add(cpu)
            if len(i_cpus) > 1:  # each CPU's run is in order: a merge
                issues.sort(key=when)
            if len(c_cpus) > 1:
                completions.sort(key=when)
            i_cut = len(issues) if last else bisect_left(issues, mark, key=when)
            c_cut = len(completions) if last else bisect_left(completions, mark, key=when)
            if i_cut or c_cut:
                batch(issues[:i_cut], completions[:c_cut])
                del issues[:i_cut], completions[:c_cut]
                i_cpus = i_cpus if issues else set()
                c_cpus = c_cpus if completions else set()
            if last:
                return
            time.sleep(max(0.0, min(POLL_S, deadline - time.monotonic())))
    finally:
        for fd in fds:
            os.close(fd)
