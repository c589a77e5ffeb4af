"""What a tune optimises: MB/s for streams, IOPS (with p99 held) for small random I/O, or p99.

The objective follows the workload unless `tune --objective` says otherwise: random requests of
64 KiB or less are judged by how many complete per second, and a candidate whose p99 latency
rose by more than P99_RISE is refused in confirmation even when its IOPS are higher (a queue
that trades tail latency for throughput is not what a database wants); everything else by MB/s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.trials.fio import fio_size, is_random
from tuner.trials.trial import TrialResult
from tuner.tune.result import TrialRecord

OBJECTIVES = ("throughput", "iops", "latency")
TRANSFER = "transfer"
"""A transfer tune's objective (not a --objective choice): Mbit/s that reached the receiver,
committed to its disk where it writes a file (tuner/tune/transfer.py). Its trials carry the
same figure as MB/s in `mbps`, so records and confirmation compare it like any throughput."""
SMALL_BLOCK = 64 << 10
"""The largest request of a "small random" workload, judged by IOPS."""
P99_RISE = 0.25
"""How far an IOPS candidate's mean p99 may exceed the baseline's in confirmation. p99 over a
3 s trial varies by 5-15 % from trial to trial on the lab; a rise of a quarter is a real one."""


@dataclass(frozen=True)
class Objective:
    """One objective: its name, the unit its score is shown in, and the p99 guard."""

    name: str
    unit: str
    p99_rise: float | None = None

    def score(self, result: TrialResult) -> float:
        """The trial's figure, higher is better: MB/s, IOPS, or completions per second of the
        p99 latency (1e6 / p99 µs)."""
        return _score(self.name, result.mbps, result.iops, result.p99_latency_us)

    def record_score(self, record: TrialRecord) -> float:
        """`score` of a recorded trial."""
        return _score(self.name, record.mbps, record.iops, record.p99_latency_us)

    def value(self, result: TrialResult) -> float:
        """What the optimiser minimises: -log of MB/s or IOPS, or log of p99 (logs make a 10 %
        gain weigh the same on a slow disk and a fast array: tuner/search/optimizer.py)."""
        if self.name == "latency":
            return math.log(max(result.p99_latency_us or math.inf, 1e-9))
        return -math.log(max(self.score(result), 1e-9))

    def shown(self, score: float) -> str:
        """A score as people read it: "101.2 MB/s", "352 IOPS", "4120 µs p99", "190.3 Mbit/s"."""
        if self.name == TRANSFER:
            return f"{score:.1f} Mbit/s"
        if self.name == "latency":
            return f"{1e6 / score:.0f} µs p99" if score > 0 else "no p99"
        if self.name == "iops":
            return f"{score:.0f} IOPS"
        return f"{score:.1f} MB/s"


def _score(name: str, mbps: float, iops: float, p99_us: float | None) -> float:
    if name == TRANSFER:
        return mbps * 8
    if name == "iops":
        return iops
    if name == "latency":
        return 1e6 / p99_us if p99_us else 0.0
    return mbps


def objective_named(name: str) -> Objective:
    """The objective called `name` (one of OBJECTIVES); ValueError otherwise."""
    if name == "throughput":
        return Objective("throughput", "MB/s")
    if name == "iops":
        return Objective("iops", "IOPS", p99_rise=P99_RISE)
    if name == "latency":
        return Objective("latency", "µs p99")
    if name == TRANSFER:
        return Objective(TRANSFER, "Mbit/s")
    raise ValueError(f"unknown objective {name!r}: use {', '.join(OBJECTIVES)}")


def objective_for(options: Mapping[str, Any]) -> str:
    """The objective a workload's fio options call for: iops for random requests of 64 KiB
    or less, throughput otherwise (a range of block sizes counts by its largest)."""
    if not is_random(options):
        return "throughput"
    sizes = str(options.get("bs", "4k")).replace("-", ",").replace(":", ",").split(",")
    try:
        largest = max(fio_size(size) for size in sizes if size.strip())
    except ValueError:
        return "throughput"
    return "iops" if largest <= SMALL_BLOCK else "throughput"
