"""Block queue tunables: /sys/block/<dev>/queue/{read_ahead_kb,scheduler,nr_requests,...}.

The target is a whole block device by its kernel name ("sda", "loop3"; "/dev/loop3" is taken
too). Partitions have no queue of their own: tune the disk. The limits checked here are the
kernel's (block/blk-sysfs.c, block/blk-mq.c), measured on the lab's loop devices where the
source leaves room for doubt (docs/design.md, "Things learned building such a lab").
"""

from __future__ import annotations

import os
from typing import ClassVar

from probes.block import parse_scheduler, read_queue
from probes.hostfs import digits
from tuner.topology.model import QueueSettings
from tuner.tunables.base import ABSENT, UINT_MAX, Pending, Tunable, Value
from tuner.tunables.diskseq import disk_sequence, replaced
from tuner.tunables.domain import Dimension, SpaceContext, widened
from tuner.tunables.sysroot import SysRoot

MAX_SCHED_RQ = 2048
"""The deepest queue the kernel allows with an I/O scheduler (16 x BLKDEV_DEFAULT_RQ)."""
MIN_RQ = 4
"""BLKDEV_MIN_RQ: smaller values are silently raised to it."""
LOOP_QUEUE_DEPTH = 128
"""The loop driver's tag depth (its hw_queue_depth parameter), when mq/*/nr_tags is absent."""
DEFAULT_NONE_DEPTH = 128
"""The most requests a queue is taken to accept with scheduler none when its own depth is not
known: loop devices and most SATA disks have 128 (NVMe has more; SpaceContext.none_depth)."""
SCHED_MAX_REQUESTS = 1024
"""The deepest queue a tune tries with a scheduler: the kernel allows 2048 (MAX_SCHED_RQ), but
past 1024 nothing improves."""


class BlockTunable(Tunable):
    """A queue attribute of one block device."""

    attr: ClassVar[str]

    def target_name(self, target: str) -> str:
        """A kernel device name: "/dev/loop3" -> "loop3"."""
        return target.removeprefix("/dev/")

    def queue(self, sys: SysRoot, target: str) -> str:
        """The device's queue directory, after checking the device exists."""
        dev = self.target_name(target)
        if "/" in dev or not dev or not sys.exists(f"sys/block/{dev}"):
            raise self.gone(target, f"no such block device ({sys.shown(f'sys/block/{dev}')})")
        return f"sys/block/{dev}/queue"

    def rel(self, sys: SysRoot, target: str) -> str:
        """The attribute's path below the root."""
        return f"{self.queue(sys, target)}/{self.attr}"

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write the attribute as text."""
        self.write_attr(sys, target, self.rel(sys, target), str(value))

    def diskseq(self, sys: SysRoot, target: str) -> int | None:
        """/sys/block/DEV/diskseq (None before Linux 5.15)."""
        return disk_sequence(sys, self.target_name(target))

    def replaced(self, sys: SysRoot, target: str, diskseq: int) -> str | None:
        """Why DEV is another attachment than `diskseq` now (tuner/tunables/diskseq.py)."""
        self.queue(sys, target)
        return replaced(sys, self.target_name(target), diskseq)

    def kernel_path(self, sys: SysRoot, target: str) -> str:
        """/sys/block/DEV/queue/ATTR."""
        return sys.shown(self.rel(sys, target))

    def udev_assignment(self, value: Value) -> str:
        """ATTR{queue/ATTR}="VALUE" (values are checked names and numbers: no quoting)."""
        return f'ATTR{{queue/{self.attr}}}="{value}"'

    def settings(self, sys: SysRoot, target: str) -> QueueSettings | None:
        """The device's queue as the probe reads it (probes.block.read_queue), so a dimension
        holds the value advise shows; None for a device without a queue of its own (a
        partition) or one that is gone."""
        dev = self.target_name(target)
        if "/" in dev or not dev or not sys.exists(f"sys/block/{dev}/queue"):
            return None
        return read_queue(sys.fs(), f"sys/block/{dev}/queue")


class MayBeAbsent(BlockTunable):
    """A queue file that exists only some of the time (a scheduler's parameter, wbt on a
    kernel without it): its saved original may be ABSENT, which puts nothing back."""

    def check_original(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """ABSENT (nothing to put back), or a value checked as a new one."""
        if value == ABSENT:
            self.queue(sys, target)
            return ABSENT
        return self.validate(sys, target, value, pending)

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write the value; ABSENT writes nothing (the file is not there to hold one)."""
        if value != ABSENT:
            super().write(sys, target, value)


class IntQueueTunable(BlockTunable):
    """An integer queue attribute with fixed kernel bounds."""

    low: ClassVar[int | None] = 0
    high: ClassVar[int | None] = UINT_MAX

    def read(self, sys: SysRoot, target: str) -> Value:
        """The attribute as an int."""
        return self.read_int(sys, target, self.rel(sys, target))

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """An int within the kernel's bounds for this attribute."""
        self.queue(sys, target)
        return self.in_range(target, value, self.low, self.high)


class ReadAheadKb(IntQueueTunable):
    """Readahead window in KB; the kernel keeps it in pages, so it rounds down to 4 KB."""

    key = "block.read_ahead_kb"
    scope = "device"
    value_kind = "int"
    persist = "udev"
    doc = "readahead window, KB"
    current_fact = "read_ahead_kb"
    attr = "read_ahead_kb"

    def expected(self, sys: SysRoot, target: str, value: Value) -> Value:
        """Whole 4 KB pages: 4093 reads back as 4092."""
        return int(value) // 4 * 4 if isinstance(value, int) else value

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """128 KB (the kernel's default) to 64 MB (far past where any disk stops gaining), in
        pages on a log scale, on the device reads enter when the workload reads: the page
        cache reads ahead through the top layer's window, so a member's changes nothing
        (DESIGN.md)."""
        target = self.target_name(target)
        if not (context.reads and context.enters(target)):
            return None
        queue = self.settings(sys, target)
        if queue is None:
            return None
        ra = Dimension(self.key, target, "int", 128, 65536, log=True, step=4)
        return widened(ra, queue.read_ahead_kb)


class ModeTunable(IntQueueTunable):
    """A queue attribute that picks one of three modes, 0, 1 or 2: searched as a choice (the
    modes are not a scale), the current mode among them."""

    high = 2

    def searched(self, sys: SysRoot, target: str, context: SpaceContext) -> bool:
        """True when a tune's trials could feel the mode on `target`."""
        raise NotImplementedError

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """The three modes, on a device whose queue the I/O passes, where `searched` says the
        workload can feel them."""
        target = self.target_name(target)
        queue = self.settings(sys, target) if context.queues(target) else None
        if queue is None or not self.searched(sys, target, context):
            return None
        return Dimension(self.key, target, "categorical", choices=(0, 1, 2))


class RqAffinity(ModeTunable):
    """0 complete anywhere, 1 on the submitting CPU's group, 2 on the submitting CPU itself;
    the kernel silently ignores other numbers, so they are refused here."""

    key = "block.rq_affinity"
    scope = "device"
    value_kind = "int"
    persist = "udev"
    doc = "complete on the submitting CPU"
    attr = "rq_affinity"

    def searched(self, sys: SysRoot, target: str, context: SpaceContext) -> bool:
        """Small random requests on a flash device: thousands of completions a second, where
        the CPU that runs them costs. A hard disk completes a few hundred: nothing to feel."""
        return context.small_random and rotational(sys, target) is False


class NoMerges(ModeTunable):
    """0 merge, 1 only simple one-hit merges, 2 never; larger numbers silently mean 1."""

    key = "block.nomerges"
    scope = "device"
    value_kind = "int"
    persist = "udev"
    doc = "request merging (0 = merge)"
    attr = "nomerges"

    def searched(self, sys: SysRoot, target: str, context: SpaceContext) -> bool:
        """On a hard disk, where merging decides how many commands (and seeks) the streams
        cost; and for small random requests anywhere, where merging finds nothing and only
        its attempts cost CPU (nomerges 2 is the expert's setting for them)."""
        return context.small_random or rotational(sys, target) is True


def rotational(sys: SysRoot, target: str) -> bool | None:
    """Whether the device says it is rotational (queue/rotational), None when it does not."""
    text = sys.read(f"sys/block/{target.removeprefix('/dev/')}/queue/rotational")
    return None if text is None or text.strip() not in ("0", "1") else text.strip() == "1"


class Scheduler(BlockTunable):
    """The I/O scheduler, one of those the device lists. Changing it resets nr_requests to the
    new scheduler's default and replaces the scheduler's parameters, so those are saved and
    restored with it."""

    key = "block.scheduler"
    scope = "device"
    value_kind = "choice"
    persist = "udev"
    doc = "I/O scheduler"
    current_fact = "scheduler"
    read_kind = "scheduler"
    attr = "scheduler"
    # A new scheduler resets nr_requests, brings its own parameters with their defaults (the
    # old one's go), and bfq turns writeback throttling off (leaving it turns it back on):
    # all are saved with the scheduler and put back after it.
    coupled = (
        "block.nr_requests",
        "block.wbt_lat_usec",
        "block.bfq_slice_idle",
        "block.bfq_low_latency",
        "block.deadline_fifo_batch",
        "block.deadline_read_expire",
    )

    def choices(self, sys: SysRoot, target: str) -> tuple[str | None, tuple[str, ...]]:
        """(active, available) from "[none] mq-deadline kyber"."""
        return parse_scheduler(self.read_attr(sys, target, self.rel(sys, target)))

    def read(self, sys: SysRoot, target: str) -> Value:
        """The active scheduler's name."""
        active, names = self.choices(sys, target)
        if active is None:
            raise self.fail(target, f"no active scheduler marked in {' '.join(names)!r}")
        return active

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """A scheduler the device offers."""
        name = self.as_name(target, value)
        _, names = self.choices(sys, target)
        if name not in names:
            raise self.invalid(
                target, f"{name!r} is not available (choose from {', '.join(names)})"
            )
        return name

    def check_original(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """A scheduler's name, on a device that exists: it was available when it was saved,
        and the kernel refuses it if it no longer is."""
        self.queue(sys, target)
        return self.as_name(target, value)

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Switch the scheduler; leaving none, first give the hardware queue its whole tag
        depth back (full_tag_depth)."""
        if value != "none" and self.read(sys, target) == "none":
            full_tag_depth(sys, target)
        super().write(sys, target, value)

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """The schedulers the device offers, on a device whose queue the I/O passes; None
        when it offers one (nothing to choose)."""
        target = self.target_name(target)
        queue = self.settings(sys, target) if context.queues(target) else None
        if queue is None or len(queue.schedulers) < 2:
            return None
        return Dimension(self.key, target, "categorical", choices=tuple(queue.schedulers))


class NrRequests(IntQueueTunable):
    """Requests the queue holds per hardware queue. Without a scheduler the kernel accepts at
    most the driver's tag depth (128 on loop devices); with one, at most 2048."""

    key = "block.nr_requests"
    scope = "device"
    value_kind = "int"
    persist = "udev"
    doc = "request queue depth"
    current_fact = "nr_requests"
    attr = "nr_requests"

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """At least 4, and at most what the scheduler in force (or being set) allows."""
        self.queue(sys, target)
        number = self.in_range(target, value, MIN_RQ, UINT_MAX)
        scheduler = pending.get((Scheduler.key, self.target_name(target)))
        if scheduler is None:
            scheduler = Scheduler().read(sys, target)
        if scheduler == "none":
            depth = self.tag_depth(sys, target)
            if depth is not None and number > depth:
                raise self.invalid(
                    target,
                    f"{number} exceeds {depth}, the most the kernel accepts with scheduler none",
                )
        elif number > MAX_SCHED_RQ:
            raise self.invalid(
                target,
                f"{number} exceeds {MAX_SCHED_RQ}, the most the kernel accepts with "
                f"scheduler {scheduler}",
            )
        return number

    def tag_depth(self, sys: SysRoot, target: str) -> int | None:
        """The smallest tag depth of the device's hardware queues, None when unknown."""
        dev = self.target_name(target)
        depths = []
        for hctx in sys.listdir(f"sys/block/{dev}/mq"):
            text = sys.read(f"sys/block/{dev}/mq/{hctx}/nr_tags")
            if text is not None and digits(text):
                depths.append(int(text))
        if depths:
            return min(depths)
        return LOOP_QUEUE_DEPTH if dev.startswith("loop") else None

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """4 to SCHED_MAX_REQUESTS on a log scale, on a device whose queue the I/O passes; up
        to the none depth only when none is the scheduler and stays so (the kernel refuses
        more; a point that moves to none is capped by the space's repair)."""
        target = self.target_name(target)
        queue = self.settings(sys, target) if context.queues(target) else None
        if queue is None:
            return None
        moves = context.searches(Scheduler.key) and len(queue.schedulers) > 1
        if not moves and queue.scheduler == "none":
            high = context.none_depth.get(target, _depth_under_none(queue))
        else:
            high = SCHED_MAX_REQUESTS
        nr = Dimension(self.key, target, "int", 4, high, log=True)
        return widened(nr, queue.nr_requests)


def full_tag_depth(sys: SysRoot, target: str) -> None:
    """Give a device under scheduler none its hardware queue's whole tag depth back.

    With scheduler none, nr_requests is the tag depth of the hardware queue itself: writing 8
    leaves the device 8 tags. The kernel (6.18 here) keeps those 8 through later scheduler
    changes, while nr_requests reads the new scheduler's own depth and, under none again, the
    whole depth: nothing in sysfs shows it (mq/*/nr_tags reads the allocated 128). So a trial
    that tried none with a shallow queue left every later trial, and the host after the tune,
    with 8 commands at the device: on the lab's modelled disk fio at depth 32 had 8 in flight
    after the engine had restored mq-deadline and nr_requests 256 (/sys/block/DEV/inflight).
    Writing the whole depth under none regrows it; the kernel ignores a write of the value
    nr_requests already reads, so one below it goes first.
    """
    tunable = NrRequests()
    depth = tunable.tag_depth(sys, target)
    if depth is None or depth <= MIN_RQ:
        return
    rel = tunable.rel(sys, target)
    if tunable.read_int(sys, target, rel) == depth:
        tunable.write_attr(sys, target, rel, str(depth - 1))
    tunable.write_attr(sys, target, rel, str(depth))


def none_depth(sys: SysRoot, target: str) -> int:
    """The most requests `target` is taken to accept with scheduler none (a search's repair
    caps nr_requests there: tuner/search/space.py)."""
    queue = NrRequests().settings(sys, target)
    return DEFAULT_NONE_DEPTH if queue is None else _depth_under_none(queue)


def _depth_under_none(queue: QueueSettings) -> int:
    """Under scheduler none the queue already holds the hardware depth, the best estimate;
    DEFAULT_NONE_DEPTH otherwise."""
    if queue.scheduler == "none" and queue.nr_requests:
        return queue.nr_requests
    return DEFAULT_NONE_DEPTH


class MaxSectorsKb(IntQueueTunable):
    """The largest request the block layer sends, in KB: at most max_hw_sectors_kb (the kernel
    would silently clamp), at least a page and a logical block (it refuses less).

    On a rotational device, kernel 6.17 and later, writing it raises read_ahead_kb to twice the
    new value (measured on a loop device marked rotational: 128 -> 1024 on writing 512), so
    read_ahead_kb is saved and restored with it."""

    key = "block.max_sectors_kb"
    scope = "device"
    value_kind = "int"
    persist = "udev"
    doc = "largest request sent, KB"
    current_fact = "max_sectors_kb"
    attr = "max_sectors_kb"
    coupled = ("block.read_ahead_kb",)

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """Within [max(page, logical block), max_hw_sectors_kb]."""
        queue = self.queue(sys, target)
        number = self.as_int(target, value)
        hw = self.read_int(sys, target, f"{queue}/max_hw_sectors_kb")
        if number > hw:
            raise self.invalid(target, f"{number} exceeds max_hw_sectors_kb {hw}")
        block = self.read_int(sys, target, f"{queue}/logical_block_size")
        page = os.sysconf("SC_PAGE_SIZE")
        least, what = max((-(-block // 1024), "logical block size"), (page // 1024, "page size"))
        if number < least:
            raise self.invalid(target, f"{number} is below {least} KB, the {what}")
        return number

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """64 KB to max_hw_sectors_kb in pages on a log scale, on a device whose queue the I/O
        passes; None where the hardware takes no more than 64 KB (nothing to choose)."""
        target = self.target_name(target)
        queue = self.settings(sys, target) if context.queues(target) else None
        if queue is None or not queue.max_hw_sectors_kb or queue.max_hw_sectors_kb <= 64:
            return None
        ms = Dimension(self.key, target, "int", 64, queue.max_hw_sectors_kb, log=True, step=4)
        return widened(ms, queue.max_sectors_kb)


WRITE_CACHE_MODES = ("write back", "write through")


class WriteCache(BlockTunable):
    """The volatile write cache, "write back" or "write through". A device without one reads
    "write through" whatever is written: the engine reports that as a silent adjustment."""

    key = "block.write_cache"
    scope = "device"
    value_kind = "choice"
    persist = "udev"
    doc = "volatile write cache"
    current_fact = "write_cache"
    read_kind = "name"
    attr = "write_cache"

    def read(self, sys: SysRoot, target: str) -> Value:
        """The mode: "write back" or "write through"."""
        return self.read_attr(sys, target, self.rel(sys, target))

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """One of the two modes ("write-back", "writeback" and case are forgiven)."""
        self.queue(sys, target)
        name = self.as_name(target, value).lower().replace("-", " ").replace("_", " ")
        name = {"writeback": "write back", "writethrough": "write through"}.get(name, name)
        if name not in WRITE_CACHE_MODES:
            raise self.invalid(target, f"{value!r} is not 'write back' or 'write through'")
        return name


BLOCK_TUNABLES: tuple[Tunable, ...] = (
    ReadAheadKb(), NrRequests(), MaxSectorsKb(), Scheduler(), RqAffinity(), NoMerges(),
    WriteCache(),
)  # fmt: skip
"""In the order a tune's space lists their dimensions (tuner/search/space.py follows the
registry): the optimiser's seeded draws go dimension by dimension, so moving one moves where a
seeded search looks."""
