"""What a sweep says: the plateau, the half-power point and where throughput stops growing.

Along each depth (a row: MB/s against request size) and each size (a column: MB/s against
queue depth). The half-power point is the smallest request size that reaches half of the
row's plateau (Hockney's n-1/2); throughput "stops growing" at the first point within
GROWTH of the peak. The plateau is the mean of the points within GROWTH of the peak, not the
peak alone: one lucky run (a throttle's first slice, a burst from a drive's cache) would
otherwise set the bar for every other point. A curve whose last step still grows by more than
GROWTH has not reached its plateau inside the grid: it has no stopping point, and its
half-power point is measured against the largest value seen (a lower bound of the true one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuner.sweep.run import Sweep

GROWTH = 0.10  # within 10 % of the plateau counts as on it: repeat runs vary by a few %


@dataclass(frozen=True)
class Curve:
    """One row or column of the grid, summed up.

    `fixed`: the depth of a row, or the size of a column; `points`: (size or depth, MB/s),
    ascending; `plateau_mbps`: the plateau's level; `plateau_at`: where the largest MB/s was
    measured; `half_power`: the first point reaching half of the plateau; `stops_growing`: the
    first point on the plateau, None when the curve still grows at its end.
    """

    fixed: int
    points: tuple[tuple[int, float], ...]
    plateau_mbps: float
    plateau_at: int
    half_power: int | None
    stops_growing: int | None

    @property
    def still_growing(self) -> bool:
        """True when the last step grew by more than GROWTH: the plateau lies beyond the grid."""
        return self.stops_growing is None


@dataclass(frozen=True)
class Analysis:
    """The whole grid: its rows (by depth), columns (by size), its plateau's level (the mean
    of the cells within GROWTH of the best) and where the best cell is.

    `half_power`: (size, depth) of the smallest request size reaching half of the grid's
    plateau at any depth (the shallowest such depth), None when nothing was read.
    """

    by_depth: tuple[Curve, ...]
    by_size: tuple[Curve, ...]
    plateau_mbps: float
    plateau_size: int
    plateau_depth: int
    half_power: tuple[int, int] | None

    def row(self, depth: int) -> Curve:
        """The curve at queue depth `depth`; KeyError if the grid has no such row."""
        for curve in self.by_depth:
            if curve.fixed == depth:
                return curve
        raise KeyError(depth)


def curve(fixed: int, points: Sequence[tuple[int, float]]) -> Curve:
    """Sum up one curve of (x, MB/s) points in ascending x."""
    if not points:
        raise ValueError("a curve needs at least one point")
    ordered = tuple(sorted(points))
    top_x, top = max(ordered, key=lambda point: (point[1], -point[0]))
    level = plateau([mbps for _, mbps in ordered])
    half = next((x for x, mbps in ordered if level > 0 and mbps >= level / 2), None)
    last = ordered[-1][1]
    before = ordered[-2][1] if len(ordered) > 1 else None
    # Still climbing at the grid's end; a last step up after a dip below the top is noise.
    growing = before is not None and last > (1 + GROWTH) * before and last >= (1 - GROWTH) * top
    stops = None
    if not growing and top > 0:
        stops = next(x for x, mbps in ordered if mbps >= (1 - GROWTH) * top)
    return Curve(fixed, ordered, level, top_x, half, stops)


def plateau(values: Sequence[float]) -> float:
    """The plateau's level: the mean of the values within GROWTH of the largest."""
    top = max(values, default=0.0)
    on = [value for value in values if value >= (1 - GROWTH) * top]
    return sum(on) / len(on) if on else 0.0


def analyse(sweep: Sweep) -> Analysis:
    """Rows, columns, the plateau and the half-power point of a measured sweep."""
    sizes, depths = sweep.grid.sizes, sweep.grid.depths
    rows = tuple(curve(d, [(s, sweep.mbps(s, d)) for s in sizes]) for d in depths)
    columns = tuple(curve(s, [(d, sweep.mbps(s, d)) for d in depths]) for s in sizes)
    best = max(sweep.cells, key=lambda cell: (cell.mbps, -cell.size, -cell.depth))
    level = plateau([cell.mbps for cell in sweep.cells])
    reaching = [
        (cell.size, cell.depth) for cell in sweep.cells if level > 0 and cell.mbps >= level / 2
    ]
    return Analysis(
        by_depth=rows,
        by_size=columns,
        plateau_mbps=level,
        plateau_size=best.size,
        plateau_depth=best.depth,
        half_power=min(reaching) if reaching else None,
    )
