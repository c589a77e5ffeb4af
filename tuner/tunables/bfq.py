"""bfq's own parameters: block.bfq_slice_idle and block.bfq_low_latency
(/sys/block/DEV/queue/iosched/{slice_idle,low_latency}, there only while bfq is in force).

slice_idle is how long bfq keeps the disk for a process whose queue just emptied, waiting for
its next request: on a hard disk with several sequential readers that idling is what keeps
each stream sequential instead of seeking between them; 0 turns it off (throughput on arrays
and flash, fairness lost). low_latency raises interactive and soft real-time queues' weight.
The shared behaviour (validation against the scheduler in force, ABSENT originals, udev
order) is in tuner/tunables/iosched.py.
"""

from __future__ import annotations

from tuner.tunables.base import Tunable
from tuner.tunables.domain import Dimension
from tuner.tunables.iosched import SchedulerParameter


class SliceIdle(SchedulerParameter):
    """bfq's idle wait in milliseconds (the kernel keeps 0 to INT_MAX; slice_idle_us is the
    same value in microseconds)."""

    key = "block.bfq_slice_idle"
    doc = "bfq: ms the disk waits for a stream's next request (0 = no idling)"
    attr = "slice_idle"
    scheduler = "bfq"
    default = 8

    def span(self, target: str) -> Dimension:
        """0 (off) to 32 ms in steps of 1: past a few rotations nothing more arrives."""
        return Dimension(self.key, target, "int", 0, 32)


class LowLatency(SchedulerParameter):
    """bfq's low-latency heuristics, 0 or 1 (the kernel turns larger numbers into 1)."""

    key = "block.bfq_low_latency"
    doc = "bfq: favour interactive and soft real-time queues (1) or not (0)"
    attr = "low_latency"
    scheduler = "bfq"
    default = 1
    high = 1

    def span(self, target: str) -> Dimension:
        """Off or on."""
        return Dimension(self.key, target, "categorical", choices=(0, 1))


BFQ_TUNABLES: tuple[Tunable, ...] = (SliceIdle(), LowLatency())
