"""block.wbt_lat_usec: writeback throttling's latency target (/sys/block/DEV/queue/wbt_lat_usec).

Writeback throttling (block/blk-wbt.c) watches read and sync-write completion latency and,
while it exceeds this target, cuts how many buffered (background) writeback requests may be
in flight; O_DIRECT writes are never throttled. The file holds microseconds: 0 means off
(bfq turns it off while it is the scheduler, and the file then reads 0), and writing -1 sets
the default for what the device is now (75 ms if it is rotational, 2 ms if not), which is not
always the target it started with: a new loop device starts at 2 ms, and -1 gave 75 ms once it
was attached to a file on a rotational disk. Kernels built without CONFIG_BLK_WBT have no such
file.

The kernel keeps a mode beside the target (block/blk-wbt.c enable_state): a device starts in
the default mode, in which bfq turns throttling off and leaving bfq turns it back on. Any
write that changes the stored target puts it in manual mode for the life of the device (past
a loop device's detach), in which no scheduler changes it; no write puts it back, -1 included
(it sets the default target, manually). So a write of what the file already reads is not made:
under bfq the file reads 0 while the stored target is still the default, and a restore that
wrote that 0 back turned throttling off for good (leaving bfq no longer brought it back).

The search tries it off and at a few targets from a flash drive's default to well past a
disk's, as choices (0 has no place on a log scale, and the targets differ by orders of
magnitude); never -1, which names a value the plan would not show.
"""

from __future__ import annotations

from tuner.tunables.base import ABSENT, Pending, Tunable, TunableError, Value
from tuner.tunables.block import IntQueueTunable, MayBeAbsent, rotational
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.sysroot import SysRoot

WBT_MAX_USEC = (2**63 - 1) // 1000
"""The kernel multiplies the microseconds by 1000 into a signed 64-bit count: more overflows."""
DISK_DEFAULT_USEC = 75_000
FLASH_DEFAULT_USEC = 2_000
"""wbt_default_latency_nsec: what -1 restores on a rotational device and on any other."""
SEARCH_CHOICES = (0, 2_000, 10_000, 75_000, 250_000)
"""Off, a flash drive's default, between, a disk's default, past it."""


class WbtLatUsec(MayBeAbsent, IntQueueTunable):
    """The latency target in microseconds; 0 off, -1 the device's default."""

    key = "block.wbt_lat_usec"
    scope = "device"
    value_kind = "int"
    persist = "udev"
    doc = "writeback throttling latency target, us (0 = off, -1 = the device's default)"
    attr = "wbt_lat_usec"
    low = -1
    high = WBT_MAX_USEC

    def read(self, sys: SysRoot, target: str) -> Value:
        """The target in microseconds (0 while off); TunableError naming the kernel's missing
        writeback throttling when the file is not there."""
        rel = self.rel(sys, target)
        if sys.read(rel) is None:
            raise self.fail(target, f"{sys.shown(rel)} is missing (a kernel without "
                                    "CONFIG_BLK_WBT has no writeback throttling)")  # fmt: skip
        return self.read_int(sys, target, rel)

    def state(self, sys: SysRoot, target: str) -> Value:
        """ABSENT on a kernel without writeback throttling (saved with a scheduler change)."""
        try:
            return self.read(sys, target)
        except TunableError:
            self.queue(sys, target)  # a device that is gone is still an error
            return ABSENT

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """-1, 0 or a target up to WBT_MAX_USEC, on a device that has the file."""
        number = super().validate(sys, target, value, pending)
        self.read(sys, target)
        return number

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write the target unless the file already reads it (see the module's docstring: a
        write the kernel takes leaves the device in manual mode)."""
        if value == ABSENT or self.read(sys, target) == value:
            return
        super().write(sys, target, value)

    def expected(self, sys: SysRoot, target: str, value: Value) -> Value:
        """-1 reads back as the device's default."""
        if value != -1:
            return value
        return DISK_DEFAULT_USEC if rotational(sys, target) else FLASH_DEFAULT_USEC

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """SEARCH_CHOICES and the current value, on a device whose queue the I/O passes,
        when the workload writes through the page cache (the only writes it throttles) and
        either reads too (what it protects) or runs on a hard disk (where the throttled
        depth decides how long the head sweeps)."""
        target = self.target_name(target)
        queue = self.settings(sys, target) if context.queues(target) else None
        if queue is None or not (context.writes and context.buffered):
            return None
        if not (context.reads or rotational(sys, target) is True):
            return None
        try:
            current = self.read(sys, target)
        except TunableError:
            return None
        if not isinstance(current, int):
            return None
        choices = tuple(sorted({*SEARCH_CHOICES, current}))
        return Dimension(self.key, target, "categorical", choices=choices)


WBT_TUNABLES: tuple[Tunable, ...] = (WbtLatUsec(),)
