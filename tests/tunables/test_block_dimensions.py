"""What a tune may try for each block queue key, read from the device's own files."""

from __future__ import annotations

from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.sysroot import SysRoot
from tuner.tunables.table import IMPLEMENTATIONS

ANY = SpaceContext()


def dim(sys: SysRoot, key: str, target: str, context: SpaceContext = ANY) -> Dimension | None:
    return IMPLEMENTATIONS[key].dimension(sys, target, context)


def test_each_key_on_a_loop_device(tunables: Tunables) -> None:
    sys = tunables.sys
    ra = dim(sys, "block.read_ahead_kb", "loop3")
    assert ra == Dimension("block.read_ahead_kb", "loop3", "int", 128, 65536, log=True, step=4)
    # loop3 offers four schedulers: nr_requests may go as deep as a scheduler allows.
    assert dim(sys, "block.nr_requests", "loop3") == Dimension(
        "block.nr_requests", "loop3", "int", 4, 1024, log=True
    )
    assert dim(sys, "block.max_sectors_kb", "/dev/loop3") == Dimension(
        "block.max_sectors_kb", "loop3", "int", 64, 1280, log=True, step=4
    )
    sched = dim(sys, "block.scheduler", "loop3")
    assert sched is not None and sched.choices == ("none", "mq-deadline", "kyber", "bfq")
    # Keys no tune searches say so.
    assert dim(sys, "block.rq_affinity", "loop3") is None


def test_nr_requests_stays_under_the_none_depth_when_the_scheduler_stays_none(
    host: SysTree, tunables: Tunables
) -> None:
    host.file("sys/block/loop3/queue/scheduler", "[none]").file(
        "sys/block/loop3/queue/nr_requests", 64
    )
    sys = tunables.sys
    assert dim(sys, "block.scheduler", "loop3") is None  # one choice is nothing to search
    nr = dim(sys, "block.nr_requests", "loop3")
    assert nr is not None and nr.high == 64  # under none the queue holds the hardware depth
    # A depth the caller knows better (an NVMe's tags), and a scheduler the tune keeps fixed.
    known = SpaceContext(none_depth={"loop3": 1023})
    assert (dim(sys, "block.nr_requests", "loop3", known) or nr).high == 1023
    host.file("sys/block/loop3/queue/scheduler", "[none] mq-deadline")
    fixed = SpaceContext(keys=frozenset({"block.nr_requests"}))
    assert (dim(sys, "block.nr_requests", "loop3", fixed) or nr).high == 64
    assert (dim(sys, "block.nr_requests", "loop3") or nr).high == 1024


def test_the_domain_widens_to_hold_the_current_value(host: SysTree, tunables: Tunables) -> None:
    host.file("sys/block/loop3/queue/read_ahead_kb", 131072)
    host.file("sys/block/loop3/queue/nr_requests", 2)
    ra = dim(tunables.sys, "block.read_ahead_kb", "loop3")
    assert ra is not None and (ra.low, ra.high) == (128, 131072)
    nr = dim(tunables.sys, "block.nr_requests", "loop3")
    assert nr is not None and (nr.low, nr.high) == (2, 1024)
    # Readahead off (0) has no place on a log scale: the baseline snaps up to 128.
    host.file("sys/block/loop3/queue/read_ahead_kb", 0)
    ra = dim(tunables.sys, "block.read_ahead_kb", "loop3")
    assert ra is not None and (ra.low, ra.snap(0)) == (128, 128)


def test_max_sectors_needs_hardware_room_to_choose(host: SysTree, tunables: Tunables) -> None:
    ms = dim(tunables.sys, "block.max_sectors_kb", "sda")
    assert ms is not None and ms.high == 512
    host.file("sys/block/sda/queue/max_hw_sectors_kb", 64)
    assert dim(tunables.sys, "block.max_sectors_kb", "sda") is None


def test_the_stack_says_where_each_key_acts(tunables: Tunables) -> None:
    # Reads enter at loop3 (say a dm volume over sda): readahead there, the queue keys on sda.
    stack = SpaceContext(entries=frozenset({"loop3"}), queued=frozenset({"sda"}))
    sys = tunables.sys
    assert dim(sys, "block.read_ahead_kb", "loop3", stack) is not None
    assert dim(sys, "block.read_ahead_kb", "sda", stack) is None
    for key in ("block.nr_requests", "block.max_sectors_kb", "block.scheduler"):
        assert dim(sys, key, "loop3", stack) is None
        assert dim(sys, key, "sda", stack) is not None
    # A writer's trials cannot feel readahead: no dimension for it.
    assert dim(sys, "block.read_ahead_kb", "loop3", SpaceContext(reads=False)) is None


def test_a_device_without_a_queue_has_no_dimension(tunables: Tunables) -> None:
    for key in ("block.read_ahead_kb", "block.nr_requests", "block.max_sectors_kb",
                "block.scheduler"):  # fmt: skip
        assert dim(tunables.sys, key, "sdz") is None
        assert dim(tunables.sys, key, "../loop3") is None


def test_merging_and_completion_cpu_where_the_workload_feels_them(
    host: SysTree, tunables: Tunables
) -> None:
    sys = tunables.sys
    modes = Dimension("block.nomerges", "loop3", "categorical", choices=(0, 1, 2))
    # A stream on flash (the throttled lab's rows): neither is searched.
    assert dim(sys, "block.nomerges", "loop3") is None
    assert dim(sys, "block.rq_affinity", "loop3") is None
    # Small random requests on flash: thousands of completions a second, merges never found.
    random = SpaceContext(small_random=True)
    host.file("sys/block/loop3/queue/rotational", 0)
    assert dim(sys, "block.nomerges", "loop3", random) == modes
    affinity = dim(sys, "block.rq_affinity", "loop3", random)
    assert affinity is not None and affinity.choices == (0, 1, 2)
    # A hard disk: merging decides how many seeks a stream costs; completions are few.
    host.file("sys/block/loop3/queue/rotational", 1)
    assert dim(sys, "block.nomerges", "loop3") == modes
    assert dim(sys, "block.rq_affinity", "loop3", random) is None
