"""How long a disk trial lasts: until its figures are the workload's steady state.

A fixed 1 s ramp and 3 s window measured a transient on a slow disk with several streams:
each buffered reader keeps up to two readahead windows in flight (the window being read and
the asynchronous one behind its marker, mm/readahead.c), so six streams with 8 MiB windows on
a disk moving 80 MB/s hold 96 MiB ahead of fio, more than a 3 s window consumes at that rate.
So a trial's window is:

- at least its floor: `--runtime`, and for buffered sequential readers long enough that every
  stream consumes WINDOWS readahead windows at the rate the device sustains (`floor_s`);
- ended by fio's own steady-state test (`steadystate=bw_slope`, `ss_dur`, `ss_ramp`: fio
  stops the job once its per-second throughput over the last SS_DUR_S has a slope under
  SLOPE_PCT of its mean per second), or by the ceiling, whichever comes first;
- flagged `unsettled` when it reached the ceiling with its throughput still trending
  (`settled`): fio's last SS_DUR_S per-second samples have a slope over SLOPE_PCT and more
  than NOISE_T standard errors from flat, so the trend is not the samples' own scatter, and
  their mean is more than FIGURE_WITHIN from the window's figure (six
  streams with 4 MiB windows on the modelled disk scatter by 5-10 % from second to second, and
  fio's slope test alone then ran every trial to its ceiling and called it unsettled). Its
  figures are a transient and never win (tuner/tune/guards.py).

`window_bounds` is the seam a search uses to size its trials; `TrialResult.length` and
`.settled` say how long a trial ran and why.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuner.trials.flags import NOT_STEADY, Flag

WINDOWS = 4
"""Readahead windows each stream consumes in the window at least: the two a stream holds in
flight when the window opens are then at most half of what it is measured on."""
IN_FLIGHT_WINDOWS = 2
"""Readahead windows a sequential stream may have read ahead of its position: the current
window and the asynchronous one (mm/readahead.c: async_size up to the window's size)."""
SS_DUR_S = 4.0
"""fio's steady-state window (ss_dur): four one-second throughput samples, the fewest whose
fitted slope has a standard error to judge it by (two degrees of freedom)."""
SLOPE_PCT = 3.0
"""The steepest throughput slope, in percent of the mean per second, fio's window may have to
count as steady by fio's own test: over the 4 s window, 12 % from one end to the other, above
the scatter of a flat run of few streams (1-2 %) and below a ramp (readahead windows growing,
a cache turning over, which doubles a reader's rate within seconds)."""
NOISE_T = 3.0
"""A slope within this many of its standard errors of zero is the samples' scatter, not a
trend (t with two degrees of freedom: 3 standard errors is about a 10 % false alarm)."""
FIGURE_WITHIN = 0.05
"""A window still trending at its ceiling is steady enough when its last SS_DUR_S averaged
within this of the whole window's figure: the figure reported is then the steady part's
(a memory-backed loop device's per-second rate follows the other jobs' CPU load on a shared
VM, a trend that is not the trial's)."""
CEILING_FACTOR = 2.0
"""A trial may run this many times its floor before it is called unsettled."""
MAX_CEILING_S = 30.0
"""The longest window a trial may be given unless the caller's ceiling says otherwise."""


@dataclass(frozen=True)
class WindowBounds:
    """How long one disk trial's measured window may be: `floor_s` at least, `ceiling_s` at
    most (fio's steady-state test ends it in between), and why the floor is what it is (for
    the result and --json). Not the search's `tuner.search.fidelity.TrialLength` (the ramp
    and runtime a search asks of a trial, at its screen or decide length): the trial turns
    that request into these bounds from the target and workload's physics."""

    ramp_s: float
    floor_s: float
    ceiling_s: float
    why: str
    judged: bool = True
    """Whether fio's steady-state test ends the window (False: a quick look, run as given)."""

    def __post_init__(self) -> None:
        if not 0 < self.floor_s <= self.ceiling_s:
            raise ValueError(f"trial length {self.floor_s}-{self.ceiling_s} s")

    def describe(self) -> str:
        """One line: "3.0-8.0 s after a 1.0 s ramp (floor: --runtime 3 s)"."""
        return (
            f"{self.floor_s:.1f}-{self.ceiling_s:.1f} s after a {self.ramp_s:.1f} s ramp "
            f"(floor: {self.why})"
        )


def floor_s(streams: int, readahead: int, rate_bytes_s: float) -> float:
    """The seconds in which every one of `streams` buffered sequential readers consumes
    WINDOWS readahead windows of `readahead` bytes at the device's `rate_bytes_s`; 0 when
    the rate is unknown."""
    if rate_bytes_s <= 0 or readahead <= 0:
        return 0.0
    return WINDOWS * max(streams, 1) * readahead / rate_bytes_s


def in_flight_bytes(streams: int, readahead: int) -> int:
    """What `streams` sequential readers may hold read ahead of their positions: bytes the
    device read that the readers consume after the window (not waste)."""
    return IN_FLIGHT_WINDOWS * max(streams, 1) * max(readahead, 0)


def window_bounds(
    runtime_s: float,
    ramp_s: float,
    *,
    streams: int = 1,
    readahead: int = 0,
    rate_bytes_s: float = 0.0,
    ceiling_s: float | None = None,
) -> WindowBounds:
    """A disk trial's length for a target and workload: `runtime_s` and `ramp_s` (--runtime,
    --ramp) are floors, raised for buffered sequential readers (`streams`, each with
    `readahead` bytes of window; 0 for others) to what `rate_bytes_s` needs to consume
    WINDOWS windows each; the ceiling is CEILING_FACTOR times the floor, within
    MAX_CEILING_S, or within `ceiling_s` (what --time leaves) when given, never below the
    floor; a floor from the physics above `ceiling_s` is cut to it (the time bound is the
    user's: such a trial may then be flagged, never overrun). A runtime whose ceiling could
    not hold fio's SS_DUR_S window is a quick look: run as given, unjudged."""
    physics = floor_s(streams, readahead, rate_bytes_s)
    if physics <= runtime_s and CEILING_FACTOR * runtime_s < SS_DUR_S:
        # Asked for a window too short to hold fio's steady-state test (SS_DUR_S of samples)
        # even at its ceiling: a quick look (--runtime 1, the tests' choice), run as given.
        why = f"--runtime {runtime_s:g} s: a quick look, too short to judge steady state"
        return WindowBounds(ramp_s, runtime_s, runtime_s, why, judged=False)
    floor = max(runtime_s, physics)
    if ceiling_s is not None and floor > max(ceiling_s, runtime_s):
        floor = physics = max(ceiling_s, runtime_s)
    if physics > runtime_s:
        why = (
            f"{streams} stream(s) x {WINDOWS} readahead windows of {readahead >> 10} KB at "
            f"{rate_bytes_s / 1e6:.0f} MB/s"
        )
    else:
        why = f"--runtime {runtime_s:g} s"
    longest = CEILING_FACTOR * max(floor, SS_DUR_S)
    # The caller's ceiling (what --time leaves) bounds the trial's own, never lengthens it:
    # a trial of 3 s given 100 s still stops trending at 8 s, and is judged there.
    ceiling = min(longest, MAX_CEILING_S if ceiling_s is None else ceiling_s)
    return WindowBounds(ramp_s, floor, max(ceiling, floor, SS_DUR_S), why)


def ss_options(length: WindowBounds) -> dict[str, Any]:
    """fio options ending a trial at steady state: the runtime is the ceiling, and fio judges
    its last SS_DUR_S once the floor's worth of window, less those, has passed (a window is
    never shorter than SS_DUR_S: fewer samples have no scatter to judge a slope by)."""
    return {
        "steadystate": f"bw_slope:{SLOPE_PCT:g}%",
        "ss_dur": f"{round(SS_DUR_S * 1000)}ms",
        "ss_ramp": f"{round(max(length.floor_s - SS_DUR_S, 0.0) * 1000)}ms",
    }


def attained(doc: Mapping[str, Any]) -> bool | None:
    """Whether the trial ended at steady state: fio's test passed (its JSON
    `steadystate.attained`, on the group's job), or its last samples (`steadystate.data.bw`)
    trend by no more than their scatter (`within_noise`), or their mean (`bw_mean`, bytes/s)
    is within FIGURE_WITHIN of the job's whole-window figure; None when fio ran without one."""
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        return None
    seen = None
    for job in jobs:
        block = job.get("steadystate") if isinstance(job, Mapping) else None
        if not isinstance(block, Mapping) or "attained" not in block:
            continue
        data = block.get("data")
        data = data if isinstance(data, Mapping) else {}
        samples = data.get("bw")
        steady = (
            bool(block["attained"])
            or (isinstance(samples, list) and within_noise([float(x) for x in samples]))
            or _close(data.get("bw_mean"), _job_bw(job))
        )
        seen = steady and seen is not False
    return seen


def _job_bw(job: Mapping[str, Any]) -> float:
    """The job's bytes/s over its whole window, reads and writes."""
    total = 0.0
    for direction in ("read", "write"):
        stats = job.get(direction)
        if isinstance(stats, Mapping):
            total += float(stats.get("bw_bytes", 0) or 0)
    return total


def _close(last: object, whole: float) -> bool:
    """True when `last` (the steady-state window's mean) is within FIGURE_WITHIN of `whole`."""
    if not isinstance(last, int | float) or whole <= 0:
        return False
    return abs(float(last) - whole) <= FIGURE_WITHIN * whole


def within_noise(samples: Sequence[float]) -> bool:
    """True when the least-squares slope of per-second `samples` is within NOISE_T of its
    standard errors of flat (their scatter, not a trend); False for fewer than 3 samples or
    a zero mean."""
    n = len(samples)
    if n < 3:
        return False
    mean = statistics.fmean(samples)
    if mean <= 0:
        return False
    xs = range(n)
    x_mean = (n - 1) / 2
    sxx = sum((x - x_mean) ** 2 for x in xs)
    slope = sum((x - x_mean) * (y - mean) for x, y in zip(xs, samples, strict=True)) / sxx
    residual = sum((y - mean - slope * (x - x_mean)) ** 2 for x, y in zip(xs, samples, strict=True))
    stderr = math.sqrt(residual / (n - 2) / sxx)
    return abs(slope) <= NOISE_T * stderr


def unsettled(length: WindowBounds, measured_s: float) -> Flag:
    """The flag of a trial that reached its ceiling without settling, with the figures."""
    return Flag(
        NOT_STEADY,
        f"not at steady state: throughput still trending (over {SLOPE_PCT:g} %/s, beyond its "
        "scatter) "
        f"after {measured_s:.1f} s (floor {length.floor_s:.1f} s: {length.why}; ceiling "
        f"{length.ceiling_s:.1f} s)",
    )
