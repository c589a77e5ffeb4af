"""A captured trace as a fio iolog (version 3), replayed on a trial target by fio itself.

    log = from_trace(Path("db.trace"), target="/dev/sdc", region_bytes=1 << 30)
    run = RunDir.make()                       # iotuner's own 0700 directory
    path = run.write(log)                     # <run>/replay.iolog
    options = replay_options(path, run, log, speed=2.0)

What the iolog keeps of the trace (`iotuner capture --trace`, tracefs text lines): the
issued requests of one device (the one that moved the most bytes), in issue order, each as
`TIME FILE read|write OFFSET LENGTH`, and a cache flush (a flush request, or a write that
carries a preflush) as `TIME FILE datasync`. Nothing else: no comm, no pid.

- **Offsets** are mapped into the trial's region: each is taken relative to the lowest offset
  the trace touched, then modulo the region (rounded down to ALIGN). Two requests that were
  N bytes apart stay N apart (the stride, so sequential runs stay sequential) unless the
  wrap falls between them; their order is the trace's. A request that would run past the
  region's end is moved back to end there.
- **Timing** is the trace's, in microseconds from the first request, and fio honours it
  (iolog v3, fio 3.31 and later); `--speed` scales it through fio's `replay_time_scale`
  (a percentage: speed 2 replays at twice the rate). fio ignores the delay of the first
  timed entry when the previous time was 0, so times start at 1 µs; it also loses the delay
  of a sync entry, so a datasync takes the time of the entry before it.
- **Device**: every entry names the trial target (its path in the file name field); fio's
  parser reads that field with `%256s`, so a target whose path holds a blank or is longer
  than MAX_PATH is refused (BadInput) rather than split.

The replay is direct I/O through libaio with an iodepth of the trace's deepest queue, so each
entry reaches the device as one request, when the trace says, with as many in flight as the
trace had. `read_iolog=` is never accepted in a user's job (tuner/trials/jobcheck.py); only
`check_replay` lets it through, for a file in a RunDir iotuner made (docs/security.md).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tuner.capture.events import SECTOR, Event, parse_line
from tuner.errors import BadInput

VERSION_LINE = "fio version 3 iolog"
ALIGN = 4096
"""Mapped offsets are rounded down to this: a direct request must be sector-aligned, and
4 KiB covers devices with 4 KiB logical blocks."""
MAX_PATH = 255
"""fio reads an iolog's file name with sscanf("%256s")."""
MAX_TRACE_BYTES = 80 << 20
"""A trace file iotuner wrote is at most 64 MiB (session.TRACE_BYTES) plus its last line."""
MAX_ENTRIES = 1 << 20
"""At most this many requests are replayed (a 64 MiB trace holds about 300,000)."""
SPEED_RANGE = (0.01, 100.0)
MAX_DEPTH = 256
LOG_NAME = "replay.iolog"


@dataclass(frozen=True)
class Entry:
    """One iolog action: at `us` microseconds, read, write or datasync `length` bytes at
    `offset` of the target (0, 0 for a datasync)."""

    us: int
    action: str
    offset: int
    length: int


@dataclass(frozen=True)
class Iolog:
    """A replay: its entries in issue order, on `target`, and what the trace showed of it."""

    target: str
    region_bytes: int
    entries: tuple[Entry, ...]
    depth: int
    """The most requests the trace had in flight at once (issue minus complete)."""
    device: tuple[int, int]

    @property
    def seconds(self) -> float:
        """How long the replay takes at speed 1 (its last entry's time)."""
        return self.entries[-1].us / 1e6 if self.entries else 0.0

    @property
    def writes(self) -> bool:
        """True when the replay writes (a write or a datasync)."""
        return any(e.action != "read" for e in self.entries)

    def text(self) -> str:
        """The iolog file: version line, the target added and opened, the actions, closed."""
        name = self.target
        first = self.entries[0].us if self.entries else 1
        last = self.entries[-1].us if self.entries else 1
        lines = [VERSION_LINE, f"{first} {name} add", f"{first} {name} open"]
        for e in self.entries:
            if e.action == "datasync":
                lines.append(f"{e.us} {name} datasync 0 0")
            else:
                lines.append(f"{e.us} {name} {e.action} {e.offset} {e.length}")
        lines.append(f"{last} {name} close")
        return "\n".join(lines) + "\n"


def read_events(path: Path) -> Iterator[Event]:
    """The block request events of a trace file `iotuner capture --trace` wrote (tracefs
    text, one event a line); lines that are not one are skipped, as a capture skips them.
    BadInput when `path` is not a regular file of at most MAX_TRACE_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as err:
        raise BadInput(f"--replay-trace {path}: cannot read it ({err.strerror or err})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise BadInput(f"--replay-trace {path}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > MAX_TRACE_BYTES:
            raise BadInput(f"--replay-trace {path}: larger than {MAX_TRACE_BYTES >> 20} MiB: "
                           "not a trace iotuner wrote")  # fmt: skip
        for raw in f:
            event = parse_line(raw.decode("ascii", "replace").rstrip("\n"))
            if event is not None:
                yield event


def _busiest(events: Iterable[Event]) -> tuple[list[Event], tuple[int, int]]:
    by_device: dict[tuple[int, int], list[Event]] = {}
    moved: dict[tuple[int, int], int] = {}
    for event in events:
        key = (event.major, event.minor)
        by_device.setdefault(key, []).append(event)
        if event.issue and event.flags.op in "RW":
            moved[key] = moved.get(key, 0) + event.size
    if not moved:
        raise BadInput("--replay-trace: the trace holds no read or write request")
    key = max(moved, key=lambda k: moved[k])
    return by_device[key], key


def target_name(target: str) -> str:
    """`target` as an iolog's file name field holds it; BadInput when fio would misread it."""
    if not target.startswith("/") or len(target) > MAX_PATH:
        raise BadInput(f"{target[:60]!r}: a replay target is an absolute path of at most "
                       f"{MAX_PATH} characters")  # fmt: skip
    if not target.isprintable() or any(c.isspace() for c in target):
        raise BadInput(f"{target[:60]!r}: fio reads an iolog's file name up to a blank; "
                       "iotuner cannot replay onto a path holding one")  # fmt: skip
    return target


def from_events(events: Iterable[Event], target: str, region_bytes: int) -> Iolog:
    """The iolog of the busiest device's requests in `events`, mapped onto the first
    `region_bytes` of `target` (module docstring: offsets, order, timing)."""
    name = target_name(target)
    region = region_bytes // ALIGN * ALIGN
    if region < ALIGN:
        raise BadInput(f"a replay region of {region_bytes} bytes is smaller than {ALIGN}")
    chosen, device = _busiest(events)
    issued = [e for e in chosen if e.issue and (e.flags.op in "RWF")]
    requests = [e for e in issued if e.flags.op in "RW" and e.size > 0]
    if not requests:
        raise BadInput("--replay-trace: the trace holds no read or write request")
    if len(issued) > MAX_ENTRIES:
        issued = issued[:MAX_ENTRIES]
    base = min(e.sector for e in requests) * SECTOR
    start = issued[0].ts
    entries: list[Entry] = []
    for e in issued:
        us = 1 + max(0, round((e.ts - start) * 1e6))
        if e.flags.op == "F" or e.flags.preflush:
            # A flush, or a write that carries one (fsync/fdatasync on the way): the
            # datasync goes first, as the preflush reaches the device before the data. It
            # takes the previous entry's time: fio 3.33 loses the delay of a sync entry (a
            # replay whose syncs carried theirs ran 1.0 s short of an 8.0 s trace, one
            # without syncs 0.1-0.5 s over: docs/capture.md), so the delay goes to the
            # request after it.
            entries.append(Entry(entries[-1].us if entries else us, "datasync", 0, 0))
        if e.flags.op not in "RW" or e.size <= 0:
            continue
        length = min(e.size, region)
        offset = (e.sector * SECTOR - base) % region // ALIGN * ALIGN
        if offset + length > region:
            offset = (region - length) // ALIGN * ALIGN
        entries.append(Entry(us, "read" if e.flags.is_read else "write", offset, length))
    return Iolog(target=name, region_bytes=region, entries=tuple(entries),
                 depth=_depth(chosen), device=device)  # fmt: skip


def from_trace(path: Path, target: str, region_bytes: int) -> Iolog:
    """The iolog of the trace file `path` (`iotuner capture --trace`) on `target`."""
    return from_events(read_events(path), target, region_bytes)


def _depth(events: Iterable[Event]) -> int:
    """The most requests in flight at once: issue minus complete, matched by sector and op as
    stats.DeviceStats matches them (a completion of a request issued before the trace
    began is not counted)."""
    inflight: set[tuple[int, str]] = set()
    deepest = 1
    for e in events:
        if e.flags.op not in "RW" or e.size <= 0:
            continue
        key = (e.sector, e.flags.op)
        if e.issue:
            inflight.add(key)
            deepest = max(deepest, len(inflight))
        else:
            inflight.discard(key)
    return min(deepest, MAX_DEPTH)


@dataclass(frozen=True)
class RunDir:
    """iotuner's own directory for one replay: made by mkdtemp (mode 0700, owned by the
    effective user), the only place a `read_iolog=` may name."""

    path: Path

    @classmethod
    def make(cls, parent: Path | None = None) -> RunDir:
        """A new private directory under `parent` (the system's temporary directory)."""
        return cls(Path(tempfile.mkdtemp(prefix="iotuner-replay-", dir=parent)))

    def write(self, log: Iolog) -> Path:
        """Write `log` as LOG_NAME here (created anew, never through a link); its path."""
        path = self.path / LOG_NAME
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)  # fmt: skip
        with os.fdopen(fd, "w") as f:
            f.write(log.text())
        return path

    def remove(self) -> None:
        """Remove the iolog and the directory (what is left of them)."""
        (self.path / LOG_NAME).unlink(missing_ok=True)
        self.path.rmdir()


def replay_options(path: Path, run: RunDir, log: Iolog, speed: float = 1.0) -> dict[str, str]:
    """The fio options replaying the iolog at `path` (in `run`), `speed` times as fast as
    captured; checked by check_replay before they are returned."""
    low, high = SPEED_RANGE
    if not low <= speed <= high:
        raise BadInput(f"--speed {speed:g}: expected {low:g} to {high:g}")
    options = {
        "read_iolog": str(path),
        "replay_time_scale": str(max(1, round(speed * 100))),
        "ioengine": "libaio",
        "direct": "1",
        "iodepth": str(log.depth),
    }
    check_replay(options, run)
    return options


REPLAY_OPTIONS = frozenset({"read_iolog", "replay_time_scale", "ioengine", "direct", "iodepth"})


def check_replay(options: Mapping[str, str], run: RunDir) -> None:
    """Refuse (BadInput) replay options other than iotuner's own: only REPLAY_OPTIONS, and a
    `read_iolog=` naming a regular file, not a link, directly inside `run`, a directory
    owned by this user that no one else may write or read."""
    extra = sorted(set(options) - REPLAY_OPTIONS)
    if extra:
        raise BadInput(f"a replay job sets {extra[0]}: only {', '.join(sorted(REPLAY_OPTIONS))}")
    text = options.get("read_iolog", "")
    if not text or ":" in text or any(c.isspace() for c in text) or not text.isprintable():
        raise BadInput(f"read_iolog={text[:60]!r}: not one plain file name")
    path = Path(text)
    if not path.is_absolute() or path.parent != run.path:
        raise BadInput(f"read_iolog={text[:60]}: only a file in iotuner's own run directory "
                       f"({run.path}) may be replayed")  # fmt: skip
    try:
        folder, info = os.lstat(run.path), os.lstat(path)
    except OSError as err:
        raise BadInput(f"read_iolog={text[:60]}: {err.strerror}") from None
    uid = os.geteuid()
    if not stat.S_ISDIR(folder.st_mode) or folder.st_uid != uid or folder.st_mode & 0o077:
        raise BadInput(f"{run.path}: not a private directory of this user: no replay from it")
    if not stat.S_ISREG(info.st_mode) or info.st_uid != uid or info.st_nlink != 1:
        raise BadInput(f"read_iolog={text[:60]}: not a regular file iotuner wrote")
