"""What the schedulers' own parameters share (tuner/tunables/iosched.py), on fixture trees:
checked against the scheduler in force or pending, saved as ABSENT while it is another,
written after the scheduler in a batch and in a udev rule, searched on hard disks only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.apply.hosts import identity_host
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import switch_scheduler
from tuner.apply.render import UDEV_RULES, render
from tuner.errors import BadInput
from tuner.plan import Plan, PlanEntry
from tuner.search.space import space_for
from tuner.tunables.access import Tunables
from tuner.tunables.base import ABSENT, InvalidValue, TunableError
from tuner.tunables.domain import SpaceContext
from tuner.tunables.table import apply_rank


def disk(host: SysTree, device: str, scheduler: str = "mq-deadline") -> None:
    """`device` as a hard disk offering all four schedulers, `scheduler` in force."""
    host.file(f"sys/block/{device}/queue/rotational", 1)
    host.file(f"sys/block/{device}/queue/scheduler", "none mq-deadline kyber bfq")
    switch_scheduler(host, device, scheduler)


def test_a_parameter_of_another_scheduler_is_refused_in_one_line(tunables: Tunables) -> None:
    # sda runs mq-deadline: bfq's slice_idle is not there until bfq is set.
    with pytest.raises(InvalidValue) as refused:
        tunables.validate("block.bfq_slice_idle", "sda", 0)
    assert str(refused.value) == (
        "block.bfq_slice_idle on sda: scheduler mq-deadline has no slice_idle (a bfq "
        "parameter): set block.scheduler bfq first, or in the same batch"
    )
    # Pending in the same batch, it is accepted; the read says why there is nothing to read.
    pending = {("block.scheduler", "sda"): "bfq"}
    assert tunables.validate("block.bfq_slice_idle", "sda", 0, pending=pending) == 0
    with pytest.raises(TunableError, match="scheduler mq-deadline has no slice_idle"):
        tunables.read("block.bfq_slice_idle", "sda")
    # And the other way: mq-deadline's fifo_batch under a pending bfq.
    with pytest.raises(InvalidValue, match="scheduler bfq has no fifo_batch"):
        tunables.validate("block.deadline_fifo_batch", "sda", 8, pending=pending)


def test_absent_is_saved_and_restoring_it_writes_nothing(host: SysTree,
                                                          tunables: Tunables) -> None:  # fmt: skip
    disk(host, "sda")
    assert tunables.state("block.bfq_slice_idle", "sda") == ABSENT
    saved = tunables.save("block.bfq_slice_idle", "sda")
    assert saved.original == ABSENT
    switch_scheduler(host, "sda", "bfq")
    tunables.write("block.bfq_slice_idle", "sda", 0)
    tunables.restore("block.bfq_slice_idle", "sda", saved)  # bfq still in force: no write
    assert tunables.read("block.bfq_slice_idle", "sda") == 0
    # A planted ABSENT is never a new value.
    with pytest.raises(InvalidValue, match="expected an integer"):
        tunables.validate("block.bfq_slice_idle", "sda", ABSENT)


def test_the_kernels_silent_clamps_are_refused(tunables: Tunables) -> None:
    with pytest.raises(InvalidValue, match="below 0"):
        tunables.validate("block.deadline_fifo_batch", "sda", -1)
    with pytest.raises(InvalidValue, match="exceeds 2147483647"):
        tunables.validate("block.deadline_read_expire", "sda", 2**31)


def test_a_plan_sets_the_scheduler_before_its_parameters(tree: SysTree, tmp_path: Path) -> None:
    host = identity_host(tree)
    # Listed first in the plan, written (and assigned in the udev rule) after the scheduler:
    # udev applies a rule's assignments in order, and the file exists only once bfq is set.
    plan = Plan(1, "2026-11-26T04:00:00+00:00", "storage01", "tune", "write-once-read-many",
                (PlanEntry("block.bfq_slice_idle", "loop3", 0),
                 PlanEntry("block.scheduler", "loop3", "bfq")))  # fmt: skip
    rendered = render(plan, root=host.root, conf_root=tmp_path)
    assert [s.key for s in rendered.live] == ["block.scheduler", "block.bfq_slice_idle"]
    rules = next(f.content for f in rendered.files if f.path.endswith(UDEV_RULES)) or ""
    assert 'ATTR{queue/scheduler}="bfq", ATTR{queue/iosched/slice_idle}="0"' in rules
    assert apply_rank("block.scheduler") < apply_rank("block.bfq_slice_idle")
    # Without the scheduler, loop3 (scheduler none) has no slice_idle: refused, one line.
    alone = Plan(1, plan.created, "storage01", "tune", "write-once-read-many",
                 (PlanEntry("block.bfq_slice_idle", "loop3", 0),))  # fmt: skip
    with pytest.raises(BadInput, match=r"entries\[0\].*scheduler none has no slice_idle"):
        render(alone, root=host.root, conf_root=tmp_path)


def test_searched_on_a_hard_disk_resting_where_the_point_chooses_another(
    host: SysTree, tunables: Tunables
) -> None:
    disk(host, "sda")
    host.file("sys/block/sda/queue/iosched/fifo_batch", 32)  # an administrator's value
    space = space_for(tunables.sys, {"device": ["sda"]}, context=SpaceContext())
    names = space.names()
    for key in ("block.bfq_slice_idle", "block.bfq_low_latency",
                "block.deadline_fifo_batch", "block.deadline_read_expire"):  # fmt: skip
        assert (key, "sda") in names
    # Under mq-deadline, bfq's parameters rest at the kernel's defaults and fifo_batch at
    # the value in force, so a point that keeps mq-deadline changes nothing it did not choose.
    assert space.resting == {
        ("block.bfq_slice_idle", "sda"): 8,
        ("block.bfq_low_latency", "sda"): 1,
        ("block.deadline_fifo_batch", "sda"): 32,
        ("block.deadline_read_expire", "sda"): 500,
    }
    point = {d.name: d.choices[0] if d.kind == "categorical" else d.low
             for d in space.dimensions}  # fmt: skip
    point[("block.scheduler", "sda")] = "bfq"
    point[("block.bfq_slice_idle", "sda")] = 0
    point[("block.deadline_fifo_batch", "sda")] = 1
    repaired = space.snap(point)
    assert repaired[("block.bfq_slice_idle", "sda")] == 0
    assert repaired[("block.deadline_fifo_batch", "sda")] == 32
    written = space.host_settings(repaired)
    assert ("block.bfq_slice_idle", "sda") in written
    assert ("block.deadline_fifo_batch", "sda") not in written
    assert ("block.deadline_read_expire", "sda") not in written


def test_not_searched_on_flash_nor_for_a_scheduler_that_stays_another(
    host: SysTree, tunables: Tunables
) -> None:
    disk(host, "sda")
    host.file("sys/block/sda/queue/rotational", 0)
    flash = space_for(tunables.sys, {"device": ["sda"]}, context=SpaceContext()).names()
    assert not [key for key, _ in flash if "bfq" in key or "deadline" in key]
    host.file("sys/block/sda/queue/rotational", 1)
    wanted = ("block.bfq_slice_idle", "block.deadline_fifo_batch")  # the scheduler stays
    kept = space_for(tunables.sys, {"device": ["sda"]}, wanted).names()
    assert kept == [("block.deadline_fifo_batch", "sda")], "mq-deadline stays: bfq's cannot act"
