"""The cheap, continuous fingerprint: what /proc/diskstats alone gives of a capture's figures,
and the decision that it has moved far enough to be worth a short capture.

Each non-idle sample interval gives a CounterPrint: the mean request size, the share of bytes
read, the mean number of requests in flight and the request rate (the fingerprint's
mean_size, read_share, queue_depth.mean and iops, as far as counters can tell them; offsets,
streams, flushes and the page cache need the tracepoints). The watch keeps the prints since the
last capture. The latest `window` of them is compared with the ones before (the reference):
a figure has moved when the two means differ by more than Z times the figure's own spread
from one interval to the next over those windows (the larger side's), and never less than
the counting noise of the requests the intervals hold (a Poisson count of N has a relative
spread of 1/sqrt(N)), so a steady workload's ripple, or a neighbour's burst slowing it for a
second, is not a move, and a quiet device's few requests are not either.
Sizes, depths and rates are compared on a log scale: a doubling is the same move at 4 KiB as
at 1 MiB.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tuner.trials.activity import Activity

Z = 4.0
"""Spreads a figure's mean must move by: for normal noise a window's mean leaves 4 spreads
about once in 16,000 tests, and what a false move costs is one short capture (its fingerprint
then matches the one in force, and nothing else happens)."""
MIN_REFERENCE = 3
"""Intervals of the reference a spread can be taken from (two give one degree of freedom)."""
FEATURES = ("request size", "read share", "queue depth", "request rate")


@dataclass(frozen=True)
class CounterPrint:
    """One interval's counter fingerprint of the watched devices taken together."""

    request_kb: float
    read_share: float
    depth: float
    iops: float
    requests: float
    """Requests completed in the interval: what the counting noise is taken from."""

    def values(self) -> tuple[float, float, float, float]:
        """The figures on the scale they are compared on (sizes, depth and rate as log2)."""
        return (
            math.log2(max(self.request_kb, 0.5)),
            self.read_share,
            math.log2(1.0 + self.depth),
            math.log2(1.0 + self.iops),
        )

    def counting_noise(self) -> tuple[float, float, float, float]:
        """Each figure's spread from counting alone: N requests give a relative 1/sqrt(N)
        (1/(sqrt(N) ln 2) in log2), a share p of them sqrt(p(1-p)/N)."""
        n = max(self.requests, 1.0)
        relative = 1.0 / math.sqrt(n) / math.log(2)
        share = math.sqrt(max(self.read_share * (1 - self.read_share), 1.0 / n) / n)
        return (relative, share, relative, relative)

    def as_json(self) -> dict[str, float]:
        """For status and events, rounded."""
        return {"request_kb": round(self.request_kb, 1), "read_share": round(self.read_share, 3),
                "depth": round(self.depth, 2), "iops": round(self.iops, 1)}  # fmt: skip


def counter_print(activities: Iterable[Activity], seconds: float) -> CounterPrint | None:
    """The devices' interval as one CounterPrint (rates add up, the depth is the busiest
    device's, as workload.classify takes them); None when nothing moved."""
    items = list(activities)
    iops = sum(a.iops for a in items)
    mbps = sum(a.mbps for a in items)
    if iops <= 0 or mbps <= 0 or seconds <= 0:
        return None
    return CounterPrint(
        request_kb=mbps * 1e6 / iops / 1024,
        read_share=sum(a.read_mbps for a in items) / mbps,
        depth=max(a.queue_depth for a in items),
        iops=iops,
        requests=iops * seconds,
    )


@dataclass(frozen=True)
class Move:
    """A figure that moved: its name, the reference's and the recent mean (on the figure's
    own scale), and by how many spreads."""

    feature: str
    before: float
    after: float
    z: float

    def describe(self) -> str:
        """One phrase: "request size 4.0 -> 64.0 KiB (z 31)"."""
        unit = {"request size": " KiB", "request rate": "/s"}.get(self.feature, "")
        return f"{self.feature} {self.before:.3g} -> {self.after:.3g}{unit} (z {self.z:.0f})"


def _shown(feature: int, value: float) -> float:
    """A compared value back on its own scale."""
    if feature == 0:
        return float(2**value)
    if feature == 1:
        return value
    return float(2**value - 1)


def moves(reference: Sequence[CounterPrint], recent: Sequence[CounterPrint]) -> list[Move]:
    """The figures whose recent mean lies more than Z spreads from the reference's mean.

    The spread is one interval's, the larger of the two sides' (and never below the counting
    noise), not the standard error of a mean: a shared host's load comes in bursts longer
    than an interval, so intervals are not independent and a mean's error shrinks less than
    1/sqrt(n). Empty when the reference has fewer than MIN_REFERENCE intervals."""
    if len(reference) < MIN_REFERENCE or not recent:
        return []
    found: list[Move] = []
    for i, name in enumerate(FEATURES):
        means, spreads = [], []
        for group in (reference, recent):
            values = [p.values()[i] for p in group]
            means.append(statistics.fmean(values))
            spreads.append(statistics.stdev(values) if len(values) > 1 else 0.0)
            spreads.append(statistics.fmean(p.counting_noise()[i] for p in group))
        spread = max(spreads)
        gap = abs(means[1] - means[0])
        z = gap / spread if spread > 0 else (math.inf if gap else 0.0)
        if z > Z:
            found.append(Move(name, _shown(i, means[0]), _shown(i, means[1]), min(z, 1e6)))
    return found


class FingerprintWatch:
    """The counter prints since the last capture, and when to take the next one.

    `add(print)` takes one non-idle interval's print (None for an idle one, or one whose I/O
    was iotuner's own: neither counts) and says why a capture is due, or None: the first
    `window` intervals of work ever seen, or a move of the latest `window` intervals against
    the ones before them (at most `history` of those are kept). `captured()` is called when
    the capture starts: the latest window becomes the reference the next move is judged by.
    """

    def __init__(self, window: int, history: int) -> None:
        self.window = max(1, window)
        self.history = max(MIN_REFERENCE, history)
        self._prints: deque[CounterPrint] = deque(maxlen=self.history + self.window)
        self._ever = False
        self.last_moves: list[Move] = []

    def add(self, found: CounterPrint | None) -> str | None:
        """Take one interval's print; why a capture is due now, or None."""
        if found is None:
            return None
        self._prints.append(found)
        if len(self._prints) < self.window:
            return None
        if not self._ever:
            return f"a workload held for {self.window} interval(s)"
        prints = list(self._prints)
        self.last_moves = moves(prints[: -self.window], prints[-self.window :])
        if not self.last_moves:
            return None
        return "the counters moved: " + ", ".join(m.describe() for m in self.last_moves)

    def captured(self) -> None:
        """A capture started: judge the next move against what it captured."""
        self._ever = True
        recent = list(self._prints)[-self.window :]
        self._prints.clear()
        self._prints.extend(recent)

    def latest(self) -> CounterPrint | None:
        """The last interval's print, for status."""
        return self._prints[-1] if self._prints else None


def prints_of(samples: Mapping[str, Sequence[Activity]], seconds: float) -> list[CounterPrint]:
    """Recorded samples (device -> one Activity per interval) as prints, idle ones dropped:
    how tests and tools replay a recorded /proc/diskstats series."""
    counts = {len(v) for v in samples.values()}
    found = []
    for i in range(min(counts, default=0)):
        item = counter_print([series[i] for series in samples.values()], seconds)
        if item is not None:
            found.append(item)
    return found
