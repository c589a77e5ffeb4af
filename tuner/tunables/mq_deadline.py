"""mq-deadline's own parameters: block.deadline_fifo_batch and block.deadline_read_expire
(/sys/block/DEV/queue/iosched/{fifo_batch,read_expire}, there only while mq-deadline is in
force).

mq-deadline dispatches requests in sector order in batches of fifo_batch, and serves a read
waiting longer than read_expire ms first: long batches and expiry keep the head sweeping
(throughput on a hard disk), short ones bound latency at the cost of seeks. The shared
behaviour (validation against the scheduler in force, ABSENT originals, udev order) is in
tuner/tunables/iosched.py.
"""

from __future__ import annotations

from tuner.tunables.base import Tunable
from tuner.tunables.domain import Dimension
from tuner.tunables.iosched import SchedulerParameter


class FifoBatch(SchedulerParameter):
    """Requests dispatched in one sorted batch (the kernel keeps 0 to INT_MAX)."""

    key = "block.deadline_fifo_batch"
    doc = "mq-deadline: requests dispatched in one sorted batch"
    attr = "fifo_batch"
    scheduler = "mq-deadline"
    default = 16

    def span(self, target: str) -> Dimension:
        """1 to 256 on a log scale: from no batching to longer than any queue here."""
        return Dimension(self.key, target, "int", 1, 256, log=True)


class ReadExpire(SchedulerParameter):
    """How long a read may wait before it is served out of order, in milliseconds. The kernel
    keeps it in jiffies, so a value between ticks reads back rounded up to one (4 ms at
    HZ=250): the engine reports that as the kernel's adjustment."""

    key = "block.deadline_read_expire"
    doc = "mq-deadline: ms a read waits before it is served out of order"
    attr = "read_expire"
    scheduler = "mq-deadline"
    default = 500

    def span(self, target: str) -> Dimension:
        """40 ms to 5 s on a log scale, in steps of 20 ms: whole ticks at HZ 100, 250 and 1000,
        so what the search tries is what the kernel keeps."""
        return Dimension(self.key, target, "int", 40, 5000, log=True, step=20)


MQ_DEADLINE_TUNABLES: tuple[Tunable, ...] = (FifoBatch(), ReadExpire())
