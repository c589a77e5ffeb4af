"""The plateau, the half-power point and where throughput stops growing, on known curves."""

from __future__ import annotations

import pytest

from tuner.sweep.analysis import analyse, curve, plateau
from tuner.sweep.grid import Grid
from tuner.sweep.run import Cell, Sweep

SIZES = (4096, 16384, 65536, 262144, 1 << 20, 4 << 20)


def capped(iops: float, mbps: float, size: int) -> float:
    """What a disk capped at `iops` and `mbps` reads at `size` bytes a request."""
    return min(iops * size / 1e6, mbps)


def test_single_disk_curve_half_power_at_256k() -> None:
    # The lab's single disk: 200 IOPS, 100 MB/s. 200 x 256 KiB = 52 MB/s is the first >= 50.
    row = curve(1, [(s, capped(200, 100, s)) for s in SIZES])
    assert row.plateau_mbps == pytest.approx(100)
    assert row.half_power == 262144
    assert row.stops_growing == 1 << 20 and not row.still_growing


def test_one_lucky_run_does_not_raise_the_bar() -> None:
    # Measured on the lab: the 1 MiB cell read 106 MB/s; the plateau is the mean of 106 and 100.
    row = curve(1, [(4096, 0.8), (65536, 13.0), (262144, 52.2), (1 << 20, 105.8), (4 << 20, 99.8)])
    assert row.plateau_mbps == pytest.approx(102.8)
    assert row.plateau_at == 1 << 20
    assert row.half_power == 262144


def test_a_curve_still_growing_at_the_end_has_no_stopping_point() -> None:
    row = curve(4, [(s, capped(1000, 100_000, s)) for s in SIZES])  # IOPS-bound up to 4 MiB
    assert row.still_growing and row.stops_growing is None
    assert row.half_power == 4 << 20  # against the largest seen: a lower bound
    # A last step up after a dip well below the top is noise, not growth.
    assert not curve(1, [(1, 100.0), (2, 50.0), (4, 60.0)]).still_growing


def test_plateau_of_nothing() -> None:
    assert plateau([]) == 0.0
    row = curve(1, [(4096, 0.0), (8192, 0.0)])
    assert row.half_power is None and row.stops_growing is None


def test_grid_rows_columns_and_best_half_power() -> None:
    # Depth helps small requests here (a drive with 100 us latency and parallel channels).
    depths = (1, 4, 8, 16)
    cells = tuple(
        Cell(s, d, capped(10_000 * min(d, 8), 2000, s), 0.0, None) for d in depths for s in SIZES
    )
    sweep = Sweep("/dev/x", ("x",), "read", Grid(SIZES, depths), 1.0, 0.25, cells, 1.0)
    found = analyse(sweep)
    assert found.plateau_mbps == pytest.approx(2000)
    assert (found.plateau_size, found.plateau_depth) == (65536, 4)  # the cheapest best cell
    assert found.row(1).half_power == 262144  # 10,000 IOPS x 256 KiB = 2.6 GB/s, capped
    assert found.row(16).half_power == 16384  # 80,000 IOPS x 16 KiB = 1.3 GB/s >= 1 GB/s
    assert found.half_power == (16384, 8)
    column = found.by_size[0]  # 4 KiB: grows with depth up to 8 channels' worth, then stops
    assert column.fixed == 4096 and column.stops_growing == 8 and not column.still_growing
