"""bfq's slice_idle and low_latency, on fixture trees and on a loop device made for the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import switch_scheduler
from tuner.tunables.access import Tunables
from tuner.tunables.base import ABSENT, InvalidValue
from tuner.tunables.bfq import LowLatency, SliceIdle
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal


def bfq_disk(host: SysTree) -> None:
    host.file("sys/block/sda/queue/rotational", 1)
    host.file("sys/block/sda/queue/scheduler", "none mq-deadline bfq")
    switch_scheduler(host, "sda", "bfq")


def test_read_write_and_the_kernels_bounds(host: SysTree, tunables: Tunables) -> None:
    bfq_disk(host)
    assert tunables.read("block.bfq_slice_idle", "sda") == 8
    tunables.write("block.bfq_slice_idle", "sda", 0)
    assert (host.root / "sys/block/sda/queue/iosched/slice_idle").read_text() == "0\n"
    assert tunables.path("block.bfq_low_latency", "sda") == (
        "/sys/block/sda/queue/iosched/low_latency"
    )
    with pytest.raises(InvalidValue, match="exceeds 1"):  # the kernel would make 2 a 1
        tunables.validate("block.bfq_low_latency", "sda", 2)
    assert SliceIdle().udev_assignment(0) == 'ATTR{queue/iosched/slice_idle}="0"'


def test_dimensions_on_a_hard_disk(host: SysTree, tunables: Tunables) -> None:
    bfq_disk(host)
    sys = tunables.sys
    assert SliceIdle().dimension(sys, "sda", SpaceContext()) == Dimension(
        "block.bfq_slice_idle", "sda", "int", 0, 32
    )
    assert LowLatency().dimension(sys, "sda", SpaceContext()) == Dimension(
        "block.bfq_low_latency", "sda", "categorical", choices=(0, 1)
    )
    host.file("sys/block/sda/queue/iosched/slice_idle", 100)  # an administrator's 100 ms
    dim = SliceIdle().dimension(sys, "sda", SpaceContext())
    assert dim is not None and dim.high == 100, "the current value stays a point"


def iosched(name: str, attr: str) -> Path:
    return Path(f"/sys/block/{name}/queue/iosched/{attr}")


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_set_with_bfq_in_one_batch_and_gone_with_it(loop: str) -> None:
    if "bfq" not in Path(f"/sys/block/{loop}/queue/scheduler").read_text():
        pytest.skip("this kernel has no bfq")
    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        applied = engine.apply({("block.bfq_slice_idle", loop): 0,
                                ("block.bfq_low_latency", loop): 0,
                                ("block.scheduler", loop): "bfq"})  # fmt: skip
        assert applied[0].key == "block.scheduler"
        assert iosched(loop, "slice_idle").read_text() == "0\n"
        assert iosched(loop, "low_latency").read_text() == "0\n"
        assert {a.key: a.original for a in applied}["block.bfq_slice_idle"] == ABSENT
        engine.restore()
    assert not iosched(loop, "slice_idle").exists(), "the scheduler found is back"


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_an_administrators_slice_idle_comes_back_with_bfq(loop: str) -> None:
    if "bfq" not in Path(f"/sys/block/{loop}/queue/scheduler").read_text():
        pytest.skip("this kernel has no bfq")
    tunables = Tunables()
    tunables.write("block.scheduler", loop, "bfq")
    tunables.write("block.bfq_slice_idle", loop, 3)
    with TunableEngine() as engine:
        engine.apply({("block.scheduler", loop): "mq-deadline",
                      ("block.deadline_fifo_batch", loop): 4})  # fmt: skip
        assert iosched(loop, "fifo_batch").read_text() == "4\n"
        engine.restore()
    assert tunables.read("block.scheduler", loop) == "bfq"
    assert iosched(loop, "slice_idle").read_text() == "3\n", "saved with the scheduler"
