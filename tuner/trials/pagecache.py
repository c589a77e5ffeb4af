"""The page-cache guard: a trial that reads from memory is not a disk measurement.

Three defences (DESIGN.md, "Measurements people can trust"):
1. before a trial: `sync` (dirty pages of earlier trials would be written back during this one)
   and, before a buffered trial, drop the page cache, which needs root; a trial that could not
   drop it is flagged;
2. the data set is larger than the trial can read, so no page is read twice (`data_set_bytes`,
   `wrapped`);
3. after the trial: the bytes the device moved in fio's measurement window (diskstats.py) are
   compared with fio's; when they disagree by more than TOLERANCE (beyond the readahead a
   sequential reader still holds in flight), the trial is flagged (`compare`, and
   `compare_below` for a page cache under a loop device).

Production may serve some reads from its own page cache: a trial run with a cache the size
production leaves (tuner/trials/dataset.py, memcap.py) may serve that share from memory too,
and only reads from beyond it are flagged.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import stat
from pathlib import Path

from tuner.trials.diskstats import Counters
from tuner.trials.flags import (
    CACHE_BELOW,
    CACHES_KEPT,
    DATA_SET,
    PAGE_CACHE,
    READAHEAD,
    WRITES_CACHED,
    Flag,
)
from tuner.units import human_bytes

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
VMSTAT = Path("/proc/vmstat")

# How far the device's bytes may stray from fio's before a trial is flagged. Sampling puts the
# window's edges a few tens of milliseconds off, and readahead reads up to one window past the
# last byte fio consumes; a page-cache hit or runaway readahead is far larger (a cached
# re-read moves a few percent of fio's bytes).
TOLERANCE = 0.25
# Headroom of a buffered data set over the bytes a trial could move at the rate bound.
MARGIN = 1.5


def prepare(buffered: bool, sync_path: str | None = None) -> Flag | None:
    """Sync, and drop the page cache before a buffered trial; the reason to flag, or None.

    With `sync_path` (the trial's device, or its scratch directory) only what lies there is
    synced: earlier trials' dirty pages are all there, and a host-wide sync waits for every
    other writer on the machine too (minutes on a busy host, with SIGTERM waiting behind it).
    """
    if sync_path is None:
        os.sync()
    else:
        sync_one(sync_path)
    if not buffered:
        return None
    try:
        # 3 = the page cache and the dentry/inode caches: a small-files trial reads metadata.
        DROP_CACHES.write_text("3\n")
    except OSError:
        return Flag(CACHES_KEPT, "page cache not dropped (needs root): reads may come from memory")
    return None


def drops(vmstat: Path = VMSTAT) -> int | None:
    """How many times the page cache has been dropped since boot (`drop_pagecache`), None
    where the kernel does not say."""
    try:
        for line in vmstat.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "drop_pagecache":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def sync_one(path: str) -> None:
    """Write back the dirty pages of one block device (fsync of the device) or of the file
    system holding one path (syncfs(2), which Python's os module does not offer)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if stat.S_ISBLK(os.fstat(fd).st_mode):
            os.fsync(fd)
        elif _libc().syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
    finally:
        os.close(fd)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def data_set_bytes(rate_mbps: float, runtime_s: float, ramp_s: float, readahead: int) -> int:
    """How large the data of a buffered read trial must be so that no byte is read twice.

    fio with time_based starts over at the start of its region when it reaches the end, and
    the pages of the first pass are still in memory: the second pass would measure memory.
    So the region must exceed what the trial moves at its fastest (`rate_mbps`, over the ramp
    and the runtime) plus the readahead window the kernel fetches beyond fio's position.
    """
    moved = rate_mbps * 1e6 * (runtime_s + ramp_s)
    return int(moved * MARGIN) + readahead


def wrapped(read_bytes: int, readahead: int, region: int) -> Flag | None:
    """Why a buffered read trial may have re-read cached data, or None: it read (ramp
    included) plus readahead more than its region holds."""
    if read_bytes + readahead <= region:
        return None
    return Flag(
        DATA_SET,
        f"data set {human_bytes(region)} smaller than the trial read plus readahead "
        f"({human_bytes(read_bytes + readahead)}): re-reads may come from page cache",
    )


def compare(
    fio: Counters,
    device: Counters,
    *,
    cached_share: float = 0.0,
    sequential: bool = True,
    ahead_bytes: int = 0,
    dropped: bool = False,
) -> Flag | None:
    """Why the device's bytes in fio's measurement window disagree with fio's, or None.

    Reads: at most `cached_share` of fio's may come from the trial's own cache (0: none, the
    data set is read once; 1: all, production's data set fits in its page cache); fewer
    device bytes than that, less TOLERANCE, is a page-cache hit beyond what production gets.
    A sequential reader whose device read far more than fio consumed is flagged too; a random
    reader's extra bytes are its real cost (readahead it does not use), reported as
    amplification, not a flag. `ahead_bytes` is what a sequential reader's streams may hold
    read ahead of their positions when the window closes (steady.in_flight_bytes): read in
    the window and consumed after it, not waste, so only device bytes beyond fio's plus that
    (and TOLERANCE) are flagged; a larger window that keeps more in flight is not penalised
    for it, whatever its size against a short window. `dropped`: someone dropped the page
    cache during the window (another job's drop_caches, counted in /proc/vmstat), evicting
    readahead before it was read, so the device re-read it: no readahead flag then (the
    re-reads only slowed the trial, a pessimistic figure, never a false gain). Writes only
    count when the device wrote too little (left in the page cache): writeback of what the
    ramp wrote lands in the window too.
    """
    if fio.read_bytes > 0:
        ratio = device.read_bytes / fio.read_bytes
        floor = (1 - min(max(cached_share, 0.0), 1.0)) * (1 - TOLERANCE)
        if cached_share < 1 and ratio < floor:
            allowed = f" (the trial's cache may serve {cached_share:.0%})" if cached_share else ""
            return Flag(PAGE_CACHE, f"device moved {ratio:.0%} of fio's bytes: page cache{allowed}")
        beyond = device.read_bytes - fio.read_bytes - max(ahead_bytes, 0)
        waste = beyond > TOLERANCE * fio.read_bytes and not dropped
        if sequential and ratio > 1 + TOLERANCE and waste:
            held = f", {human_bytes(ahead_bytes)} of it still ahead" if ahead_bytes else ""
            return Flag(
                READAHEAD,
                f"device moved {ratio:.0%} of fio's bytes{held}: readahead beyond what fio read",
            )
    if fio.write_bytes > 0:
        ratio = device.write_bytes / fio.write_bytes
        if ratio < 1 - TOLERANCE:
            return Flag(
                WRITES_CACHED, f"device wrote {ratio:.0%} of fio's bytes: writes left in page cache"
            )
    return None


def compare_below(top: Counters, below: Counters, loop: str, lower: str) -> Flag | None:
    """Why the device under a buffered loop device read less than the loop did, or None.

    Only too little counts: other users of the lower device can only add to its bytes.
    """
    if top.read_bytes <= 0:
        return None
    ratio = below.read_bytes / top.read_bytes
    if ratio < 1 - TOLERANCE:
        return Flag(
            CACHE_BELOW,
            f"{lower} under {loop} moved {ratio:.0%} of {loop}'s bytes: page cache below",
        )
    return None
