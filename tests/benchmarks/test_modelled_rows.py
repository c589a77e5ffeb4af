"""The modelled rows of the tune benchmark: each names a built-in lab and a workload of the
rule base whose fio options the job allow-list accepts, and its grid holds still every
dimension it does not name."""

from __future__ import annotations

import pytest

from benchmarks.modelled_rows import ALL, FORTY, HOST_VALUE, MAX, ROWS, ModelledRow, row_named
from tuner.lab.spec import builtin_spec_names
from tuner.rules.installed import load_rule_base
from tuner.search.replay import grid_points
from tuner.search.space import HOST, SearchSpace
from tuner.trials.jobcheck import check_job
from tuner.tunables.domain import Dimension


def test_every_row_runs_a_known_lab_and_an_allowed_job() -> None:
    base = load_rule_base()
    assert len({row.name for row in ROWS}) == len(ROWS)
    for row in ROWS:
        assert row.lab in builtin_spec_names()
        workload = row.workload(base)
        text = "[job]\n" + "".join(f"{key}={value}\n" for key, value in workload.fio.items())
        check_job(text, row.name)  # BadInput when an option is not allowed


def test_the_issue_rows_are_there() -> None:
    labs = {row.lab for row in ROWS}
    assert {"hdd", "ssd", "raid5", "raid0-one-bus"} <= labs
    random = row_named("hdd-random-32").workload(load_rule_base()).fio
    assert (random["rw"], random["bs"], random["iodepth"], random["direct"]) == (
        "randread", "4k", 32, 1,
    )  # fmt: skip
    with pytest.raises(ValueError, match="hdd-streams"):
        row_named("nope")


def test_the_mmap_rows_read_through_production_s_cache_share() -> None:
    # A quarter of what their trials read, so TuneD's 4 MB readaround evicts what they hit.
    for name, disk in (("ssd-mmap-random", 4 << 30), ("hdd-mmap-random", 256 << 20)):
        row = row_named(name)
        size = disk if row.disk_mib is None else row.disk_mib << 20
        assert size == disk
        cache = row.cache(size)
        assert cache is not None and cache.share == 0.25 and not cache.fits
        assert row.workload(load_rule_base()).fio["ioengine"] == "mmap"
    assert row_named("raid0-wide-stream").cache(6 << 30) is None


def test_levels_hold_unnamed_dimensions_at_the_baseline() -> None:
    space = SearchSpace((
        Dimension("block.read_ahead_kb", "sda", "int", 128, 65536, log=True, step=4),
        Dimension("block.max_sectors_kb", "sda", "int", 64, 1280, log=True, step=4),
        Dimension("block.scheduler", "sda", "categorical", choices=("none", "mq-deadline")),
        Dimension("block.nr_requests", "sda", "int", 4, 2048, log=True),
        Dimension("vm.dirty_bytes", HOST, "int", 16 << 20, 1 << 30),
    ))  # fmt: skip
    baseline = {
        ("block.read_ahead_kb", "sda"): 128, ("block.max_sectors_kb", "sda"): 1280,
        ("block.scheduler", "sda"): "mq-deadline", ("block.nr_requests", "sda"): 256,
        ("vm.dirty_bytes", HOST): 1 << 29,
    }  # fmt: skip
    row = ModelledRow("r", "hdd", "stream-read", {}, {
        "block.read_ahead_kb": (128, 4096), "block.max_sectors_kb": (256, MAX),
        "block.scheduler": ALL,
    }, "why")  # fmt: skip
    levels = row.levels(space, baseline)
    assert levels[("block.read_ahead_kb", "sda")] == [128, 4096]
    assert levels[("block.max_sectors_kb", "sda")] == [1280, 256]
    assert levels[("block.scheduler", "sda")] == ["mq-deadline", "none"]
    assert levels[("block.nr_requests", "sda")] == [256]
    assert levels[("vm.dirty_bytes", HOST)] == [1 << 29]
    assert len(grid_points(space, levels)) == 8


def test_named_levels_of_the_dirty_limit() -> None:
    dim = Dimension("vm.dirty_bytes", HOST, "int", 16 << 20, 8 << 30)
    space = SearchSpace((dim,))
    row = ModelledRow("w", "hdd", "stream-write", {}, {"vm.dirty_bytes": (HOST_VALUE, FORTY)}, "")
    levels = row.levels(space, {dim.name: 2 << 30})
    assert levels[dim.name] == [2 << 30, 4 << 30]  # the host's, and half the top (40 %)
