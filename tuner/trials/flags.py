"""Why a trial's figures may not be the device's: a flag's kind and its message.

Each guard of the trial engine (tuner/trials/pagecache.py, trial.py) raises a flag of one kind;
the kind decides what a search makes of the trial (tuner/tune/guards.py) and the message tells
people what was seen, with the figures that made it fire.
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE_CACHE = "page-cache"
"""The device moved less of fio's reads than the trial's cache may serve: memory's speed."""
CACHE_BELOW = "cache-below"
"""A loop device's backing file was read from the page cache below it."""
CACHES_KEPT = "caches-kept"
"""The page cache could not be dropped before a buffered trial (not root)."""
WRITES_CACHED = "writes-cached"
"""The device wrote less than fio: the writes stayed in memory."""
READAHEAD = "readahead"
"""A sequential reader's device read far beyond what fio consumed in the window."""
DATA_SET = "data-set"
"""The data set was read through (or wrapped) too early to measure."""
CUT_SHORT = "cut-short"
"""The I/O cap ended the trial in less than half its runtime."""
UNSETTLED = "cache-unsettled"
"""A capped random reader's ramp did not turn its page cache over: a warm-up's figures."""
NOT_STEADY = "unsettled"
"""A trial whose figures are a transient's: a disk trial reached its ceiling with its throughput
still changing (tuner/trials/steady.py), or a transfer's goodput still rose across its measured
part, slow start or the window's growth not over (tuner/trials/transfer_length.py)."""
RISING = NOT_STEADY
"""The transfer's name for it: one kind, so one rule in the guards and one hint."""
TIMED_PROBE = "timed-probe"
"""A screening transfer too short to hold its congestion control's timed probe (BBR's
PROBE_RTT) as a long transfer does: scored below its figure by the probe's expected cost
(tuner/trials/transfer_length.py, screen_discount); informs, the trial still counts."""
OUT_OF_MEMORY = "out-of-memory"
"""The kernel killed fio for memory in the trial's cgroup: production's cache share plus fio's
own memory left no room for what this point reads at once (readahead, buffers)."""

KINDS = (
    PAGE_CACHE,
    CACHE_BELOW,
    CACHES_KEPT,
    WRITES_CACHED,
    READAHEAD,
    DATA_SET,
    CUT_SHORT,
    UNSETTLED,
    NOT_STEADY,
    OUT_OF_MEMORY,
    TIMED_PROBE,
)


@dataclass(frozen=True)
class Flag:
    """One reason a trial's figures may not be the device's."""

    kind: str
    message: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown flag kind {self.kind!r}")


def joined(flags: tuple[Flag, ...]) -> str | None:
    """The flags' messages in one line ("a; b"), None when there are none."""
    return "; ".join(flag.message for flag in flags) or None
