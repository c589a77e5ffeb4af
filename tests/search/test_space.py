"""The search space: domains from the hardware, snapping, and repair of invalid points."""

from __future__ import annotations

import pytest

from tests.sysfs_tree import SysTree
from tuner.search.encoding import from_x, skopt_space, to_x
from tuner.search.space import (
    APP,
    HOST,
    Dimension,
    SearchSpace,
    SpaceContext,
    point_key,
    space_for,
)
from tuner.tunables.sysroot import SysRoot

LOOP: dict[str, str | int] = {
    "read_ahead_kb": 128,
    "scheduler": "[none] mq-deadline",
    "nr_requests": 128,
    "max_sectors_kb": 1280,
    "max_hw_sectors_kb": 1280,
}
GIB, MIB = 1 << 30, 1 << 20
DIRTYABLE = 10 * GIB
# The thresholds in use: 1 GiB and 2 GiB (what the ratios 10 and 20 are of DIRTYABLE).
VM: dict[str, str | int] = {"dirty_background_bytes": GIB, "dirty_bytes": 2 * GIB,
                            "dirty_background_ratio": 0, "dirty_ratio": 0}  # fmt: skip
BOTH = {"device": ["loop3"], "host": [HOST]}
CONTEXT = SpaceContext(dirtyable=DIRTYABLE)


@pytest.fixture
def sys(tree: SysTree) -> SysRoot:
    """A host with loop3 (a loop device's queue) and the dirty thresholds in bytes."""
    tree.files("sys/block/loop3/queue", LOOP)
    tree.files("proc/sys/vm", VM)
    return SysRoot(tree.root)


def dims_by_key(space: SearchSpace) -> dict[str, Dimension]:
    return {d.key: d for d in space.dimensions}


def test_space_for_a_loop_device_and_the_host(sys: SysRoot) -> None:
    space = space_for(sys, BOTH, context=CONTEXT)
    # The registry's order, the order a seeded search draws in.
    assert space.names() == [
        ("block.read_ahead_kb", "loop3"),
        ("block.nr_requests", "loop3"),
        ("block.max_sectors_kb", "loop3"),
        ("block.scheduler", "loop3"),
        ("vm.dirty_background_bytes", HOST),
        ("vm.dirty_bytes", HOST),
    ]
    dims = dims_by_key(space)
    ra = dims["block.read_ahead_kb"]
    assert (ra.target, ra.low, ra.high, ra.log, ra.step) == ("loop3", 128, 65536, True, 4)
    assert (dims["block.nr_requests"].low, dims["block.nr_requests"].high) == (4, 1024)
    assert (dims["block.max_sectors_kb"].low, dims["block.max_sectors_kb"].high) == (64, 1280)
    assert dims["block.scheduler"].choices == ("none", "mq-deadline")
    assert dims["vm.dirty_bytes"].target == HOST
    assert "bs" not in dims  # application parameters only when asked
    assert space.none_depth == {"loop3": 128}


def test_dirty_thresholds_are_bytes_on_log_scales_sized_by_memory(sys: SysRoot) -> None:
    dims = dims_by_key(space_for(sys, {"host": [HOST]}, context=CONTEXT))
    bg, dirty = dims["vm.dirty_background_bytes"], dims["vm.dirty_bytes"]
    assert bg.log and dirty.log and bg.step == dirty.step == MIB
    # Far below 1 % of memory (100 MiB here), up to the old ratio domains' 50 % and 80 %.
    assert (bg.low, bg.high) == (4 * MIB, 5 * GIB)
    assert (dirty.low, dirty.high) == (16 * MIB, 8 * GIB)
    assert bg.snap(16 * MIB + 12345) == 16 * MIB
    # Without the host's dirtyable memory there is nothing to size them by: left out.
    assert "vm.dirty_bytes" not in dims_by_key(space_for(sys, {"host": [HOST]}))


def test_the_workloads_direction_decides_readahead_and_writeback(sys: SysRoot) -> None:
    writer = space_for(sys, BOTH, context=SpaceContext(dirtyable=DIRTYABLE, reads=False))
    reader = space_for(sys, BOTH, context=SpaceContext(dirtyable=DIRTYABLE, writes=False))
    assert "block.read_ahead_kb" not in dims_by_key(writer)
    assert "vm.dirty_bytes" in dims_by_key(writer)
    assert "block.read_ahead_kb" in dims_by_key(reader)
    assert not [d for d in reader.dimensions if d.target == HOST]


def test_app_params_and_a_chosen_subset_of_keys(sys: SysRoot) -> None:
    space = space_for(sys, BOTH, keys=["block.read_ahead_kb"], app=True)
    assert [(d.key, d.target) for d in space.dimensions] == [
        ("block.read_ahead_kb", "loop3"),
        ("bs", APP),
        ("iodepth", APP),
        ("numjobs", APP),
        ("direct", APP),
    ]
    bs = dims_by_key(space)["bs"]
    assert (bs.low, bs.high, bs.pow2) == (4096, 4 << 20, True)


def test_a_device_without_a_queue_of_its_own_has_no_dimensions(sys: SysRoot) -> None:
    # A partition (sys/block has no entry for it) or a device gone since the probe.
    assert space_for(sys, {"device": ["loop3p1", "sdz"]}).dimensions == ()


def test_snap_rounds_to_the_step_and_powers_of_two_and_clamps() -> None:
    ra = Dimension("block.read_ahead_kb", "sdb", "int", 128, 65536, log=True, step=4)
    assert ra.snap(1030) == 1032
    assert ra.snap(10) == 128
    assert ra.snap(10**9) == 65536
    bs = Dimension("bs", APP, "int", 4096, 4 << 20, log=True, pow2=True)
    assert bs.snap(100_000) == 131072
    assert bs.snap(1) == 4096
    with pytest.raises(ValueError, match="bfq"):
        Dimension("block.scheduler", "sdb", "categorical", choices=("none",)).snap("bfq")


def test_repair_keeps_dirty_background_below_dirty_like_the_kernel(sys: SysRoot) -> None:
    space = space_for(sys, {"host": [HOST]}, context=CONTEXT)
    bg, dirty = ("vm.dirty_background_bytes", HOST), ("vm.dirty_bytes", HOST)
    for b in (4, 16, 63, 64, 65, 1000, 5000):
        for d in (16, 64, 100, 1024, 8192):
            repaired = space.repair({bg: b * MIB, dirty: d * MIB})
            assert int(repaired[bg]) < int(repaired[dirty])
            if b < d:
                assert repaired == {bg: b * MIB, dirty: d * MIB}  # valid points are left alone
    # The same input always gives the same output: half of dirty_bytes, in whole MiB.
    assert space.repair({bg: 5000 * MIB, dirty: 101 * MIB}) == {bg: 50 * MIB, dirty: 101 * MIB}


def test_repair_caps_nr_requests_under_scheduler_none(sys: SysRoot) -> None:
    space = space_for(sys, BOTH)
    point = {
        ("block.read_ahead_kb", "loop3"): 4096,
        ("block.nr_requests", "loop3"): 1024,
        ("block.max_sectors_kb", "loop3"): 512,
        ("block.scheduler", "loop3"): "none",
    }
    assert space.snap(point)[("block.nr_requests", "loop3")] == 128
    point[("block.scheduler", "loop3")] = "mq-deadline"
    assert space.snap(point)[("block.nr_requests", "loop3")] == 1024


def test_complete_fills_a_recommendation_from_the_base(sys: SysRoot) -> None:
    space = space_for(sys, BOTH, context=CONTEXT)
    base = space.snap(
        {
            ("block.read_ahead_kb", "loop3"): 128,
            ("block.nr_requests", "loop3"): 128,
            ("block.max_sectors_kb", "loop3"): 1280,
            ("block.scheduler", "loop3"): "none",
            ("vm.dirty_background_bytes", HOST): GIB,
            ("vm.dirty_bytes", HOST): 2 * GIB,
        }
    )
    done = space.complete({("block.read_ahead_kb", "loop3"): 4096, ("vm.x", HOST): 1}, base)
    assert done == {**base, ("block.read_ahead_kb", "loop3"): 4096}


def test_skopt_encoding_round_trips_every_value(sys: SysRoot) -> None:
    space = space_for(sys, BOTH, context=CONTEXT, app=True)
    sk = skopt_space(space)
    for x in sk.rvs(n_samples=200, random_state=1):
        point = from_x(space, x)
        assert all(d.snap(point[d.name]) == point[d.name] for d in space.dimensions)
        assert to_x(space, point) == list(x)
        assert all(type(v) in (int, str) for v in point.values())
    assert point_key(point) == point_key(dict(reversed(list(point.items()))))


def test_unit_scale_round_trips_and_measures_distance() -> None:
    ra = Dimension("block.read_ahead_kb", "sdb", "int", 128, 65536, log=True, step=4)
    assert ra.unit(128) == 0.0 and ra.unit(65536) == 1.0
    assert ra.unit(4096) == pytest.approx(5 / 9)  # log scale: 5 of 9 octaves
    sched = Dimension("block.scheduler", "sdb", "categorical", choices=("none", "bfq", "kyber"))
    for value in (128, 1024, 65536):
        assert ra.from_unit(ra.unit(value)) == value
    for choice in sched.choices:
        assert sched.from_unit(sched.unit(choice)) == choice
    assert (sched.distance("none", "bfq"), sched.distance("bfq", "bfq")) == (1.0, 0.0)


def test_a_scheduler_parameter_rests_where_the_point_chooses_another_scheduler() -> None:
    sched = Dimension("block.scheduler", "sdb", "categorical", choices=("mq-deadline", "bfq"))
    idle = Dimension("block.bfq_slice_idle", "sdb", "int", 0, 32)
    batch = Dimension("block.deadline_fifo_batch", "sdb", "int", 1, 256, log=True)
    bs = Dimension("bs", APP, "int", 4096, 1 << 20, log=True, pow2=True)
    resting = {idle.name: 8, batch.name: 16}
    space = SearchSpace((sched, idle, batch, bs), resting=resting)
    bfq = space.snap({sched.name: "bfq", idle.name: 0, batch.name: 200, bs.name: 65536})
    assert (bfq[idle.name], bfq[batch.name]) == (0, 16)
    deadline = space.snap({sched.name: "mq-deadline", idle.name: 0, batch.name: 64,
                           bs.name: 65536})  # fmt: skip
    assert (deadline[idle.name], deadline[batch.name]) == (8, 64)
    # What a trial writes: neither the other scheduler's parameter nor the application's.
    assert space.host_settings(deadline) == {sched.name: "mq-deadline", batch.name: 64}
    # Two points that differ only in a parameter their scheduler lacks are one point.
    other = space.snap({sched.name: "mq-deadline", idle.name: 31, batch.name: 64,
                        bs.name: 65536})  # fmt: skip
    assert point_key(other) == point_key(deadline)
