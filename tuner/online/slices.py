"""One slice's figures: what the device did while one setting was in force.

A slice is measured from the device's own counters (/proc/diskstats: bytes, requests, busy
time, time in queue) and, where tracefs is there, from its requests' issue-to-completion times
(tuner/online/latency.py). `SliceFigures` is what the judge compares; `Running` accumulates a
slice second by second, so a slice that hurts can end inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tuner.online.latency import Request, requests_by_size
from tuner.trials.diskstats import DiskCounters

MIN_P99_REQUESTS = 100
"""A 99th percentile needs a hundred requests before one of them lies above it: with fewer,
the "p99" is the slowest request, and one slow seek would end a slice."""
MIN_SHARE = 0.1
"""A size class is the workload's when it holds a tenth of the slice's requests: readahead
raised from 0 turns a reader's 4 KiB page reads into 128 KiB ones, and the few 4 KiB requests
left (metadata) wait behind them; their p99 is not the application's latency."""


def p99(values: list[float]) -> float:
    """The 99th percentile (nearest rank) of `values`; nan for none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]


@dataclass(frozen=True)
class SliceFigures:
    """What one slice measured.

    mbps: device MB/s (10^6 bytes) both directions; iops: requests completed per second;
    service_ms: busy time per request (io_ticks / requests); queue_ms: time in queue per
    request (time_in_queue / requests: issue to completion, iostat's await); p99_ms: the
    99th percentile of traced issue-to-completion times per size class (KiB -> ms, only
    classes with MIN_P99_REQUESTS); metric: the application's figure over the slice (None
    without one).
    """

    setting: str  # "baseline" or the candidate's label
    seconds: float
    mbps: float
    iops: float
    service_ms: float
    queue_ms: float
    p99_ms: dict[int, float] = field(default_factory=dict)
    metric: float | None = None
    stopped: str | None = None  # why the slice ended early, or None
    latencies: dict[int, tuple[float, ...]] = field(default_factory=dict, repr=False)
    """The traced times of each class p99_ms has (KiB -> ms): the bound counts how many of a
    candidate's lie above the baseline's p99."""

    def score(self) -> float:
        """What the judge maximises: the application's metric when there is one, else MB/s."""
        return self.metric if self.metric is not None else self.mbps

    def as_json(self) -> dict[str, object]:
        """The figures as the result document shows them, rounded."""
        return {
            "setting": self.setting,
            "seconds": round(self.seconds, 2),
            "mbps": round(self.mbps, 3),
            "iops": round(self.iops, 2),
            "service_ms": round(self.service_ms, 3),
            "queue_ms": round(self.queue_ms, 3),
            "p99_ms": {f"{kib}K": round(ms, 3) for kib, ms in self.p99_ms.items()},
            "metric": self.metric,
            "stopped": self.stopped,
        }


def p99_by_class(requests: list[Request]) -> dict[int, float]:
    """The p99 in ms of each size class (KiB) with enough requests to have one, and at least
    MIN_SHARE of them."""
    least = max(MIN_P99_REQUESTS, MIN_SHARE * len(requests))
    return {
        size // 1024 or 1: p99(times)
        for size, times in requests_by_size(requests)
        if len(times) >= least
    }


def figures(
    setting: str,
    before: DiskCounters,
    after: DiskCounters,
    seconds: float,
    requests: list[Request],
    metric: float | None = None,
    stopped: str | None = None,
) -> SliceFigures:
    """The slice between two reads of the device's counters `seconds` apart."""
    done = (after.reads - before.reads) + (after.writes - before.writes)
    moved = (after.read_bytes - before.read_bytes) + (after.write_bytes - before.write_bytes)
    busy = after.io_ticks_ms - before.io_ticks_ms
    queued = after.queue_ms - before.queue_ms
    span = max(seconds, 1e-9)
    return SliceFigures(
        setting=setting,
        seconds=seconds,
        mbps=moved / span / 1e6,
        iops=done / span,
        service_ms=busy / done if done else 0.0,
        queue_ms=queued / done if done else 0.0,
        p99_ms=p99_by_class(requests),
        metric=metric,
        stopped=stopped,
        latencies=latencies_by_class(requests),
    )


def latencies_by_class(requests: list[Request]) -> dict[int, tuple[float, ...]]:
    """The traced times of the classes p99_by_class keeps."""
    least = max(MIN_P99_REQUESTS, MIN_SHARE * len(requests))
    return {
        size // 1024 or 1: tuple(times)
        for size, times in requests_by_size(requests)
        if len(times) >= least
    }
