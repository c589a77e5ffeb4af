"""block.wbt_lat_usec on fixture trees and on a loop device made for the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import ABSENT, InvalidValue, TunableError
from tuner.tunables.domain import SpaceContext
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.wbt import WBT_MAX_USEC, WbtLatUsec

WRITER = SpaceContext(reads=False, writes=True, buffered=True)


def test_off_default_and_the_kernels_bounds(host: SysTree, tunables: Tunables) -> None:
    assert tunables.read("block.wbt_lat_usec", "loop3") == 2000
    assert tunables.validate("block.wbt_lat_usec", "loop3", 0) == 0  # off
    assert tunables.validate("block.wbt_lat_usec", "loop3", -1) == -1  # the device's default
    with pytest.raises(InvalidValue, match="below -1"):
        tunables.validate("block.wbt_lat_usec", "loop3", -2)
    with pytest.raises(InvalidValue, match=f"exceeds {WBT_MAX_USEC}"):
        tunables.validate("block.wbt_lat_usec", "loop3", WBT_MAX_USEC + 1)
    # -1 reads back as the default the kernel picks: 2 ms here, 75 ms on a hard disk.
    assert tunables.expected("block.wbt_lat_usec", "loop3", -1) == 2000
    host.file("sys/block/loop3/queue/rotational", 1)
    assert tunables.expected("block.wbt_lat_usec", "loop3", -1) == 75000
    assert WbtLatUsec().udev_assignment(0) == 'ATTR{queue/wbt_lat_usec}="0"'


def test_a_kernel_without_writeback_throttling(host: SysTree, tunables: Tunables) -> None:
    (host.root / "sys/block/loop3/queue/wbt_lat_usec").unlink()
    with pytest.raises(TunableError, match="CONFIG_BLK_WBT"):
        tunables.validate("block.wbt_lat_usec", "loop3", 0)
    assert tunables.state("block.wbt_lat_usec", "loop3") == ABSENT
    assert WbtLatUsec().dimension(tunables.sys, "loop3", WRITER) is None


def test_searched_where_buffered_writes_meet_reads_or_a_hard_disk(
    host: SysTree, tunables: Tunables
) -> None:
    sys, wbt = tunables.sys, WbtLatUsec()
    assert wbt.dimension(sys, "loop3", WRITER) is None, "a pure writer on flash: leave it"
    mixed = SpaceContext(reads=True, writes=True, buffered=True)
    dim = wbt.dimension(sys, "loop3", mixed)
    assert dim is not None and dim.choices == (0, 2000, 10000, 75000, 250000)
    assert wbt.dimension(sys, "loop3", SpaceContext(reads=True, writes=True,
                                                    buffered=False)) is None  # fmt: skip
    host.file("sys/block/loop3/queue/rotational", 1)
    host.file("sys/block/loop3/queue/wbt_lat_usec", 30000)
    disk = wbt.dimension(sys, "loop3", WRITER)
    assert disk is not None and 30000 in disk.choices, "the current value is a choice"
    assert wbt.dimension(sys, "loop3", SpaceContext(reads=True, writes=False)) is None


@pytest.mark.lab
# Serial: whether bfq turns wbt off depends on the kernel's wbt state of the loop device's
# earlier life (kept after detach: ON_MANUAL once anyone wrote wbt_lat_usec), and which number
# it gets changes beside other workers (failed 3 of 3 runs there, passes alone).
def test_off_and_back_and_bfq_turning_it_off(loop: str) -> None:
    path = Path(f"/sys/block/{loop}/queue/wbt_lat_usec")
    if not path.exists():
        pytest.skip("this kernel has no writeback throttling")
    before = int(path.read_text())
    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        (off,) = engine.apply({("block.wbt_lat_usec", loop): 0})
        assert (off.actual, path.read_text()) == (0, "0\n")
        engine.restore()
        assert int(path.read_text()) == before
        (default,) = engine.apply({("block.wbt_lat_usec", loop): -1})
        assert default.actual == default.expected, "-1 is the device's default"
        engine.restore()
        if "bfq" in Path(f"/sys/block/{loop}/queue/scheduler").read_text():
            engine.apply({("block.scheduler", loop): "bfq"})
            assert path.read_text() == "0\n", "bfq turns writeback throttling off"
            engine.restore()
    assert int(path.read_text()) == before
