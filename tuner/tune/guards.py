"""What a tune makes of a flagged trial: never a winner, and per kind what the search is told.

A flagged trial's figures are not the device's (tuner/trials/flags.py). It can never be the
recommendation nor confirm one (tuner/search/confirm.py refuses a candidate with a flagged
sample); what the optimiser is told depends on why:

- the figures are memory's, or an artefact of readahead racing ahead (page cache, a cache
  below a loop device, caches not dropped, writes left in memory, readahead beyond what a
  sequential reader consumed and the windows it still holds in flight): told the worst
  honest value measured so far, so the model learns the region is no better than that and
  searches elsewhere, instead of chasing the largest figures of the tune (which is how a
  x432 "gain" from a cached mmap reader won);
- the point could not be measured as set up (a data set read through too early, a page cache
  that had not settled within the longest ramp, a window whose throughput was still changing
  at the trial's ceiling or a transfer whose goodput still rose across its measured seconds
  (a transient's figure), fio killed for memory in the trial's cgroup):
  told nothing; the optimiser never asks the same point again.

One flag only informs: a trial the I/O cap (`--io-cap`) ended early reports fio's bytes over
fio's own time, the device's figure over a shorter window; it is kept as measured.

A baseline that is flagged cannot be measured honestly, and then nothing can be compared with
it: the tune stops (`Unmeasurable`, exit 1) with what would let it measure.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.errors import IotunerError
from tuner.trials.flags import (
    CACHE_BELOW,
    CACHES_KEPT,
    CUT_SHORT,
    DATA_SET,
    NOT_STEADY,
    OUT_OF_MEMORY,
    PAGE_CACHE,
    READAHEAD,
    TIMED_PROBE,
    UNSETTLED,
    WRITES_CACHED,
    Flag,
)

PENALISE = "penalised"
"""Told the worst honest value measured so far."""
SKIP = "not told"
"""Told nothing: the point cannot be measured as set up."""
KEEP = "kept"
"""Told as measured: the flag informs, the figure is still the device's."""

POLICY = {
    PAGE_CACHE: PENALISE,
    CACHE_BELOW: PENALISE,
    CACHES_KEPT: PENALISE,
    WRITES_CACHED: PENALISE,
    READAHEAD: PENALISE,
    DATA_SET: SKIP,
    UNSETTLED: SKIP,
    NOT_STEADY: SKIP,
    OUT_OF_MEMORY: SKIP,
    CUT_SHORT: KEEP,
    TIMED_PROBE: KEEP,
}

HINTS = {
    PAGE_CACHE: "give the data set production has (--data-set) and the page cache it leaves "
    "(--cache-memory), so the trial caches what production caches",
    CACHE_BELOW: "attach the loop device with direct I/O (losetup --direct-io=on)",
    CACHES_KEPT: "run tune as root, so caches can be dropped before each trial",
    WRITES_CACHED: "end the job with end_fsync=1 or write with direct=1",
    READAHEAD: "run longer trials (--runtime), or start from a smaller read_ahead_kb",
    DATA_SET: "use a larger data set (a larger file or size=) or a shorter --runtime",
    CUT_SHORT: "raise --io-cap or shorten --runtime",
    UNSETTLED: "raise --ramp until the workload has read its page cache's size before each "
    "window, or give a larger --cache-memory share",
    NOT_STEADY: "give trials more time (--time; a transfer: --ramp past its slow start, which the "
    "path's probe names), or check what else uses the device or the path",
    TIMED_PROBE: "nothing: confirmation measures the control over whole periods of its probe, "
    "or give a --runtime that spans them",
    OUT_OF_MEMORY: "give the page cache production really leaves (--cache-memory): the trial's "
    "memory cgroup holds that share of the data set plus fio's own memory, and no more",
}


class Unmeasurable(IotunerError):
    """The baseline's figures are not the device's: nothing can be tuned against them."""


def disqualifying(flags: Sequence[Flag]) -> tuple[Flag, ...]:
    """The flags that make a trial's figures not the device's (all but KEEP's)."""
    return tuple(flag for flag in flags if POLICY[flag.kind] != KEEP)


def policy(flags: Sequence[Flag]) -> str | None:
    """What the search is told of a trial with these flags: None (its value: honest),
    PENALISE or SKIP; SKIP wins when both apply (the figure means nothing at all)."""
    kinds = {POLICY[flag.kind] for flag in disqualifying(flags)}
    if not kinds:
        return None
    return SKIP if SKIP in kinds else PENALISE


def penalty(honest: Sequence[float]) -> float:
    """The value told for a penalised trial: the worst honest one so far (values are
    minimised, so the largest)."""
    if not honest:
        raise ValueError("no honest value to penalise against")
    return max(honest)


def check_baseline(flags: Sequence[Flag], number: int) -> None:
    """Unmeasurable naming the flag and the remedy when a baseline trial is flagged."""
    found = disqualifying(flags)
    if not found:
        return
    first = found[0]
    raise Unmeasurable(
        f"the baseline cannot be measured honestly (trial {number}: {first.message}); "
        f"nothing is recommended. To measure it: {HINTS[first.kind]}"
    )
