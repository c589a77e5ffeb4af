"""The recorded samples the online tests read (tests/fixtures/online/)."""

from __future__ import annotations

from pathlib import Path

from tuner.trials.diskstats import DiskCounters, read_counters

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "online"
TRACE = FIXTURES / "trace-loop-randread-8k.txt"
"""One second of block_rq_issue/complete lines from the lab's modelled hdd (loop2) under fio
random 8 KiB reads at depth 8, as the sampler's tracefs instance gave them (kernel 6.18)."""


def recorded_counters() -> tuple[DiskCounters, DiskCounters]:
    """loop2's /proc/diskstats line read twice, 5 s apart, under the same workload."""
    first, second = (
        read_counters(["loop2"], FIXTURES / f"diskstats-randread-8k-{i}")["loop2"] for i in (0, 1)
    )
    return first, second
