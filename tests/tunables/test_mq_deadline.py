"""mq-deadline's fifo_batch and read_expire, on fixture trees and on a loop device."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.mq_deadline import FifoBatch, ReadExpire


def test_read_write_and_udev(host: SysTree, tunables: Tunables) -> None:
    # sda runs mq-deadline in the fixture host, with the kernel's defaults.
    assert tunables.read("block.deadline_fifo_batch", "sda") == 16
    assert tunables.read("block.deadline_read_expire", "sda") == 500
    tunables.write("block.deadline_fifo_batch", "sda", 64)
    assert (host.root / "sys/block/sda/queue/iosched/fifo_batch").read_text() == "64\n"
    assert ReadExpire().udev_assignment(250) == 'ATTR{queue/iosched/read_expire}="250"'


def test_dimensions_only_on_a_hard_disk(host: SysTree, tunables: Tunables) -> None:
    sys, context = tunables.sys, SpaceContext()
    assert FifoBatch().dimension(sys, "sda", context) is None, "sda is not rotational here"
    host.file("sys/block/sda/queue/rotational", 1)
    assert FifoBatch().dimension(sys, "sda", context) == Dimension(
        "block.deadline_fifo_batch", "sda", "int", 1, 256, log=True
    )
    assert ReadExpire().dimension(sys, "sda", context) == Dimension(
        "block.deadline_read_expire", "sda", "int", 40, 5000, log=True, step=20
    )
    # A device whose queue the I/O does not pass (an md member's partition's disk elsewhere).
    assert FifoBatch().dimension(sys, "sda", SpaceContext(queued=frozenset())) is None


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device (tests/owned.py), no figure, nothing host-wide
def test_set_after_the_scheduler_and_rounded_to_a_tick(loop: str) -> None:
    iosched = Path(f"/sys/block/{loop}/queue/iosched")
    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        applied = engine.apply({("block.deadline_read_expire", loop): 250,
                                ("block.deadline_fifo_batch", loop): 4,
                                ("block.scheduler", loop): "mq-deadline"})  # fmt: skip
        by_key = {a.key: a for a in applied}
        assert (iosched / "fifo_batch").read_text() == "4\n"
        # Kept in jiffies: 250 ms reads back as the next whole tick (252 at HZ=250).
        assert 250 <= int(by_key["block.deadline_read_expire"].actual) < 260
        engine.restore()
    assert Tunables().read("block.scheduler", loop) == "none"
    assert not (iosched / "fifo_batch").exists()
