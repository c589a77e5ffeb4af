"""block.wbt_lat_usec on fixture trees and on a loop device made for the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.loopdev import new_loop_device
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


@pytest.fixture
def new_loop() -> Iterator[str]:
    """A loop device the kernel makes for the test: wbt in its default mode, whatever any
    earlier user of a number did (the kernel keeps the mode past a detach)."""
    with new_loop_device() as name:
        yield name


def _bfq_turns_it_off(path: Path, scheduler: Path) -> bool:
    """Whether switching to bfq turns throttling off and leaving it turns it back on: the
    kernel's default mode (a value written by hand since makes both do nothing)."""
    before = path.read_text()
    scheduler.write_text("bfq")
    under_bfq = path.read_text()
    scheduler.write_text("none")
    return under_bfq == "0\n" and path.read_text() == before != "0\n"


@pytest.mark.lab
# Serial: another worker's `losetup --find` may take the new device before it is attached
# (the test then skips, never touching theirs).
def test_putting_a_scheduler_back_leaves_wbt_in_the_kernels_default_mode(
    new_loop: str, state: Path
) -> None:
    """Found under bfq (wbt off by default: the file reads 0, the kernel's target is still
    its default), iotuner applies none and puts bfq back. The old restore wrote the saved 0
    after the scheduler, which the kernel took as wbt turned off by hand: leaving bfq then
    no longer turned it back on (the file read 0 under none). Now it reads as found and the
    kernel still follows the scheduler."""
    queue = Path(f"/sys/block/{new_loop}/queue")
    path, scheduler = queue / "wbt_lat_usec", queue / "scheduler"
    if not path.exists() or "bfq" not in scheduler.read_text():
        pytest.skip("this kernel has no writeback throttling or no bfq")
    assert _bfq_turns_it_off(path, scheduler), "a new device starts in the default mode"
    default = int(path.read_text())
    scheduler.write_text("bfq")
    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        engine.apply({("block.scheduler", new_loop): "none"})
        assert int(path.read_text()) == default, "leaving bfq turned it back on"
        engine.restore()
        assert path.read_text() == "0\n" and "[bfq]" in scheduler.read_text()
    scheduler.write_text("none")
    assert int(path.read_text()) == default, "leaving bfq turns it back on, as before"
    assert _bfq_turns_it_off(path, scheduler)


@pytest.mark.lab
# Serial: as above.
def test_off_and_back(new_loop: str, state: Path) -> None:
    """Applied values read back and the value found is put back. (After these writes the
    kernel keeps wbt in manual mode for the device's life: no write undoes that.)"""
    path = Path(f"/sys/block/{new_loop}/queue/wbt_lat_usec")
    if not path.exists():
        pytest.skip("this kernel has no writeback throttling")
    before = int(path.read_text())
    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        (off,) = engine.apply({("block.wbt_lat_usec", new_loop): 0})
        assert (off.actual, path.read_text()) == (0, "0\n")
        engine.restore()
        assert int(path.read_text()) == before
        (default,) = engine.apply({("block.wbt_lat_usec", new_loop): -1})
        assert default.actual == default.expected, "-1 is the device's default"
        engine.restore()
    assert int(path.read_text()) == before
