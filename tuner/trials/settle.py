"""When a capped random reader's page cache has settled: the ramp a trial needs before its
window is production's steady state.

A random reader whose data set production cannot cache whole (dataset.py) runs in a memory
cgroup holding production's share (memcap.py), filled by a sequential warm-up. That filled
cache is not yet the workload's own: which pages it holds, and the kernel's per-file state
(an mmap reader's readaround stops after 100 misses and resumes on hits, mm/filemap.c
`mmap_miss`), change until the workload has replaced the cache. Measured on the lab (two mmap
readers of 4 KiB over 256 MiB, 64 MiB cached, 300-IOPS disk), a window straight after the
warm-up gave readahead 256 KB x1.09 of 128 KB; at steady state it was x0.93, and a plan tuned
on the first measured x0.88 when re-measured with plain fio.

So the window starts only once the device has read, during fio's ramp, as many bytes as the
cache holds: the workload has turned its cache over once. A reader whose misses bring in only
what it asked for (device bytes at most AMPLIFICATION_SETTLED of fio's: pread without
readaround) needs none of that: the sequential fill holds the same kind of pages its own
misses would, and turning 256 MiB over at 300 IOPS of 4 KiB would take minutes.

A trial whose ramp fell short runs again with the ramp its own device rate says is needed
(within MAX_SETTLE_S); still short, it is flagged and set aside (tuner/tune/guards.py).
"""

from __future__ import annotations

from tuner.trials.flags import UNSETTLED, Flag
from tuner.units import human_bytes

MIN_SETTLE_S = 2.0
"""The shortest ramp of a capped random reader: a 128 KB readahead at 300 IOPS turns 64 MiB
over in about 1.8 s, so most trials need no second run."""
MAX_SETTLE_S = 30.0
"""The longest ramp a trial may be given to settle; beyond it, it is flagged."""
MARGIN = 1.25
"""How much longer than the estimate a second ramp is (the rate during a ramp varies)."""
AMPLIFICATION_SETTLED = 1.1
"""Device read bytes per byte fio read, in the window, at or below which misses bring in only
what was asked for (some slack for metadata)."""


def needed_ramp(
    cache_bytes: int,
    ramp_read_bytes: int,
    ramp_s: float,
    window_read_bytes: int,
    window_s: float,
    window_fio_bytes: int,
) -> float | None:
    """The ramp (seconds) under which the device reads `cache_bytes`, None when the ramp just
    run (`ramp_s`, in which it read `ramp_read_bytes`) already did, or the window's device
    reads were no more than fio's (`window_fio_bytes`): nothing unasked for to settle.

    The rate is the ramp's own when it read anything, else the window's; a trial that read
    nothing at all needs no settling (nothing to turn over)."""
    if ramp_read_bytes >= cache_bytes:
        return None
    if window_read_bytes <= AMPLIFICATION_SETTLED * window_fio_bytes:
        return None
    if ramp_read_bytes > 0 and ramp_s > 0:
        rate = ramp_read_bytes / ramp_s
    elif window_read_bytes > 0 and window_s > 0:
        rate = window_read_bytes / window_s
    else:
        return None
    return MARGIN * cache_bytes / rate


def unsettled(cache_bytes: int, ramp_read_bytes: int, ramp_s: float) -> Flag:
    """The flag of a trial whose ramp did not turn its cache over, with the figures."""
    return Flag(
        UNSETTLED,
        f"cache not settled: the device read {human_bytes(ramp_read_bytes)} in the "
        f"{ramp_s:.1f} s ramp, less than the {human_bytes(cache_bytes)} page cache, so the "
        "window measured a warm-up, not the workload's steady state",
    )
