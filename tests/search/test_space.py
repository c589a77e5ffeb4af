"""The search space: domains from the hardware, snapping, and repair of invalid points."""

from __future__ import annotations

import pytest

from tuner.search.encoding import from_x, skopt_space, to_x
from tuner.search.space import (
    APP,
    HOST,
    Dimension,
    SearchSpace,
    point_key,
    space_for,
)
from tuner.topology import QueueSettings, VmSettings

LOOP = QueueSettings(
    read_ahead_kb=128,
    scheduler="none",
    schedulers=("none", "mq-deadline"),
    nr_requests=128,
    max_sectors_kb=1280,
    max_hw_sectors_kb=1280,
)
VM = VmSettings(dirty_ratio=20, dirty_background_ratio=10)


def dims_by_key(space: SearchSpace) -> dict[str, Dimension]:
    return {d.key: d for d in space.dimensions}


def test_space_for_a_loop_device_and_the_host() -> None:
    space = space_for({"loop3": LOOP}, VM)
    dims = dims_by_key(space)
    ra = dims["block.read_ahead_kb"]
    assert (ra.target, ra.low, ra.high, ra.log, ra.step) == ("loop3", 128, 65536, True, 4)
    assert (dims["block.nr_requests"].low, dims["block.nr_requests"].high) == (4, 1024)
    assert (dims["block.max_sectors_kb"].low, dims["block.max_sectors_kb"].high) == (64, 1280)
    assert dims["block.scheduler"].choices == ("none", "mq-deadline")
    assert dims["vm.dirty_ratio"].target == HOST
    assert "bs" not in dims  # application parameters only when asked
    assert space.none_depth == {"loop3": 128}


def test_dirty_ratios_are_searched_on_a_log_scale() -> None:
    dims = dims_by_key(space_for({}, VM))
    assert dims["vm.dirty_ratio"].log and dims["vm.dirty_background_ratio"].log
    assert {dims["vm.dirty_ratio"].snap(v) for v in (5, 10, 20, 40, 80)} == {5, 10, 20, 40, 80}


def test_nr_requests_stays_under_the_hardware_depth_when_none_is_the_only_scheduler() -> None:
    queue = QueueSettings(scheduler="none", schedulers=("none",), nr_requests=64)
    dims = dims_by_key(space_for({"nvme0n1": queue}, keys=["block.nr_requests"]))
    assert "block.scheduler" not in dims  # one choice is nothing to search
    assert dims["block.nr_requests"].high == 64


def test_app_params_and_a_chosen_subset_of_keys() -> None:
    space = space_for({"loop3": LOOP}, keys=["block.read_ahead_kb"], app=True)
    assert [(d.key, d.target) for d in space.dimensions] == [
        ("block.read_ahead_kb", "loop3"),
        ("bs", APP),
        ("iodepth", APP),
        ("numjobs", APP),
        ("direct", APP),
    ]
    bs = dims_by_key(space)["bs"]
    assert (bs.low, bs.high, bs.pow2) == (4096, 4 << 20, True)


def test_the_domain_widens_to_hold_the_current_value() -> None:
    queue = QueueSettings(read_ahead_kb=131072, schedulers=())
    ra = dims_by_key(space_for({"sdb": queue}, keys=["block.read_ahead_kb"]))["block.read_ahead_kb"]
    assert (ra.low, ra.high) == (128, 131072)


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


def test_repair_keeps_dirty_background_below_dirty_like_the_kernel() -> None:
    space = space_for({}, VM)
    bg, dirty = ("vm.dirty_background_ratio", HOST), ("vm.dirty_ratio", HOST)
    for b in range(1, 51):
        for d in range(5, 81, 5):
            repaired = space.repair({bg: b, dirty: d})
            assert int(repaired[bg]) < int(repaired[dirty])
            if b < d:
                assert repaired == {bg: b, dirty: d}  # valid points are left alone
    # The same input always gives the same output: half of dirty_ratio.
    assert space.repair({bg: 40, dirty: 30}) == {bg: 15, dirty: 30}


def test_repair_caps_nr_requests_under_scheduler_none() -> None:
    space = space_for({"loop3": LOOP})
    point = {
        ("block.read_ahead_kb", "loop3"): 4096,
        ("block.nr_requests", "loop3"): 1024,
        ("block.max_sectors_kb", "loop3"): 512,
        ("block.scheduler", "loop3"): "none",
    }
    assert space.snap(point)[("block.nr_requests", "loop3")] == 128
    point[("block.scheduler", "loop3")] = "mq-deadline"
    assert space.snap(point)[("block.nr_requests", "loop3")] == 1024


def test_complete_fills_a_recommendation_from_the_base() -> None:
    space = space_for({"loop3": LOOP}, VM)
    base = space.snap(
        {
            ("block.read_ahead_kb", "loop3"): 128,
            ("block.nr_requests", "loop3"): 128,
            ("block.max_sectors_kb", "loop3"): 1280,
            ("block.scheduler", "loop3"): "none",
            ("vm.dirty_background_ratio", HOST): 10,
            ("vm.dirty_ratio", HOST): 20,
        }
    )
    done = space.complete({("block.read_ahead_kb", "loop3"): 4096, ("vm.x", HOST): 1}, base)
    assert done == {**base, ("block.read_ahead_kb", "loop3"): 4096}


def test_skopt_encoding_round_trips_every_value() -> None:
    space = space_for({"loop3": LOOP}, VM, app=True)
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
