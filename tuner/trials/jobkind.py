"""A user's fio job judged by what it does: the built-in profiles it resembles.

A `--fio-job FILE` is a Workload named `fio-job:FILE`, and the rules name the built-in
profiles (rules/workloads.yaml) they concern: without this judgement no rule concerns a
user's job, so its tune starts from no rule's point and its result explains nothing. The
families are the ones the profiles stand for, read from the options fio acts on:

- sequential reads through the page cache: one reader is `stream-read`, several are
  `concurrent-streams` (each switch between streams on one disk is a seek, so the readahead
  window decides what a seek brings);
- sequential reads that bypass the cache (direct): `write-once-read-many`, whose readers move
  data by DMA and never re-read it;
- random reads, buffered or direct, any engine (a memory-mapped reader faults pages at random
  offsets): `random-read`, whose rules keep readahead small;
- sequential writes through the page cache, not synced on every write: `stream-write`
  (dirty writeback is in the path);
- random writes that reach the disk as they are issued (direct, O_SYNC or an fsync after each
  one): `random-write`;
- many small files per job, each read in a few requests: `small-files` (lookups dominate).

A mixed job (rw, readwrite, randrw) is judged on each direction it has. Anything else (a
job partly random and partly sequential, direct sequential writes, buffered random writes
left to writeback, trims) resembles no profile and is judged as none: a profile's rule on a
job it does not describe is worse than no rule. Pure: options in, judgement out.

    judge({"rw": "read", "numjobs": "12", "bs": "64k"})
    # Judgement(profiles=("concurrent-streams",), why="12 buffered sequential readers")
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probes.hostfs import digits
from tuner.trials.fio import file_count, fio_size, is_buffered, largest_size, numjobs, reads
from tuner.trials.fio import writes as job_writes
from tuner.units import human_bytes

SMALL_FILE_BYTES = 1024 * 1024
"""A file at most this large is read in a few requests of any block size and one or two of
the kernel's readahead windows, so opening and looking it up costs as much as reading it."""


_MIXED = ("rw", "readwrite", "randrw")


@dataclass(frozen=True)
class Judgement:
    """The built-in profiles a job resembles (none: empty) and, in words, why."""

    profiles: tuple[str, ...]
    why: str

    def line(self) -> str:
        """ "judged as concurrent-streams: 12 buffered sequential readers", or as none."""
        if not self.profiles:
            return f"judged as no built-in profile: {self.why}"
        return f"judged as {' and '.join(self.profiles)}: {self.why}"


def judge(options: Mapping[str, Any]) -> Judgement:
    """The profiles the job with fio's canonical `options` resembles (module docstring)."""
    rw = str(options.get("rw") or "read").split(":")[0]
    jobs = numjobs(options)
    buffered = is_buffered(options)
    if rw in ("trim", "randtrim", "trimwrite", "randtrimwrite"):
        return Judgement((), f"rw={rw} trims, which no profile does")
    share = _random_share(options, rw)
    if share is None:
        return Judgement((), "partly random, partly sequential offsets (percentage_random)")
    found: list[tuple[str, str]] = []
    if reads(options) and _direction_share(options, rw, reading=True) > 0:
        found.append(_reader(options, jobs, buffered, share == 100))
    if job_writes(options) and _direction_share(options, rw, reading=False) > 0:
        found.append(_writer(options, jobs, buffered, share == 100))
    profiles = tuple(dict.fromkeys(name for name, _ in found if name))
    why = " and ".join(text for _, text in found)
    if rw in _MIXED:
        why += f" ({_direction_share(options, rw, reading=True)} % of requests read)"
    return Judgement(profiles, why)


def _reader(options: Mapping[str, Any], jobs: int, buffered: bool, random: bool) -> tuple[str, str]:
    """The read side: (profile or "", what the readers are)."""
    who = _count(jobs, "reader")
    how = "buffered" if buffered else "direct"
    small = _small_files(options)
    if small is not None:
        return "small-files", f"{who} of {file_count(options)} files of {human_bytes(small)}"
    if random:
        engine = " memory-mapped" if str(options.get("ioengine")) == "mmap" else ""
        return "random-read", f"{_count(jobs, f'{how}{engine} random reader')}"
    if buffered:
        name = "concurrent-streams" if jobs > 1 else "stream-read"
        return name, _count(jobs, "buffered sequential reader")
    depth = _depth(options)
    return "write-once-read-many", _count(jobs, "direct sequential reader") + depth


def _writer(options: Mapping[str, Any], jobs: int, buffered: bool, random: bool) -> tuple[str, str]:
    """The write side: (profile or "", what the writers are)."""
    synced = _synced_each_write(options)
    if random:
        what = _count(jobs, "direct random writer" if not buffered else "random writer")
        if not buffered or synced:
            return "random-write", what + (", synced on every write" if synced else "")
        return "", what + " left to writeback (no profile writes at random through the cache)"
    if buffered and not synced:
        return "stream-write", _count(jobs, "buffered sequential writer")
    what = "synced on every write" if synced else "direct"
    return "", _count(jobs, f"sequential writer ({what})") + ", which no profile stands for"


def _random_share(options: Mapping[str, Any], rw: str) -> int | None:
    """100 for random offsets, 0 for sequential, None for a share in between."""
    if rw.startswith("rand"):
        return 100
    text = str(options.get("percentage_random") or "0").split(",")[0].strip()
    share = int(text) if digits(text) else 0
    return share if share in (0, 100) else None


def _direction_share(options: Mapping[str, Any], rw: str, *, reading: bool) -> int:
    """The percentage of a job's I/O in one direction: rwmixread of a mixed job (fio's
    default 50), 100 or 0 for a one-way job."""
    if rw not in _MIXED:
        return 100
    if options.get("rwmixread") not in (None, ""):
        read = int(str(options["rwmixread"]))
    elif options.get("rwmixwrite") not in (None, ""):
        read = 100 - int(str(options["rwmixwrite"]))
    else:
        read = 50
    return read if reading else 100 - read


def _synced_each_write(options: Mapping[str, Any]) -> bool:
    """True when every write reaches stable storage before the next: O_SYNC/O_DSYNC, or an
    fsync/fdatasync after each one (a longer cadence lets dirty data build up between)."""
    if str(options.get("sync") or "0") not in ("0", "none"):
        return True
    return any(str(options.get(key) or "0") == "1" for key in ("fsync", "fdatasync"))


def _small_files(options: Mapping[str, Any]) -> int | None:
    """The largest file size of a job that spreads over several small files, else None."""
    if file_count(options) < 2 or options.get("filesize") in (None, ""):
        return None
    try:
        size = largest_size(options["filesize"])
    except ValueError:
        return None
    return size if size <= SMALL_FILE_BYTES else None


def _depth(options: Mapping[str, Any]) -> str:
    """ ", 4 requests of 1 MiB in flight each", or "" when the job keeps one in flight."""
    depth = str(options.get("iodepth") or "1")
    if not digits(depth) or int(depth) <= 1:
        return ""
    try:
        size = f" of {human_bytes(fio_size(str(options.get('bs') or '4k').split(',')[0]))}"
    except ValueError:
        size = ""
    return f", {depth} requests{size} in flight each"


def _count(number: int, noun: str) -> str:
    """ "1 buffered sequential reader", "12 buffered sequential readers"."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
