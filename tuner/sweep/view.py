"""A sweep for people: MB/s by queue depth (rows) and request size (columns), and its points."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tuner.sweep.analysis import Analysis, Curve
from tuner.sweep.grid import size_label
from tuner.sweep.run import Sweep
from tuner.units import human_rate


def render_sweep(sweep: Sweep, found: Analysis) -> RenderableType:
    """The grid as a table (half-power cells underlined, plateau-reaching ones bold), then
    the half-power point and where throughput stops growing, per depth and per size."""
    sizes = sweep.grid.sizes
    table = Table(
        title=f"{sweep.device}: {sweep.rw}, direct, MB/s by queue depth and request size",
        title_justify="left",
    )
    table.add_column("depth", justify="right")
    for size in sizes:
        table.add_column(size_label(size), justify="right")
    table.add_column("half-power")
    table.add_column("stops growing")
    for row in found.by_depth:
        cells = [_cell(size, mbps, row) for size, mbps in row.points]
        table.add_row(str(row.fixed), *cells, _point(row.half_power, size_label),
                      _stops(row, size_label))  # fmt: skip
    depth = [_stops(column, str) for column in found.by_size]
    table.add_section()
    table.add_row(Text("stops at depth", style="dim"), *depth, "", "")
    return Group(table, _summary(sweep, found))


def _cell(size: int, mbps: float, row: Curve) -> Text:
    style = ""
    if row.stops_growing is not None and size >= row.stops_growing:
        style += " bold"
    if size == row.half_power:
        style += " underline"
    return Text(f"{mbps:.1f}", style=style.strip())


def _point(value: int | None, label: Callable[[int], str]) -> str:
    return "-" if value is None else label(value)


def _stops(found: Curve, label: Callable[[int], str]) -> str:
    return "still growing" if found.stops_growing is None else label(found.stops_growing)


def _summary(sweep: Sweep, found: Analysis) -> Text:
    text = Text()
    text.append(
        f"plateau {human_rate(found.plateau_mbps)} at {size_label(found.plateau_size)} "
        f"requests, depth {found.plateau_depth}",
        style="bold",
    )
    if found.half_power is not None:
        size, depth = found.half_power
        text.append(
            f"\nhalf power ({human_rate(found.plateau_mbps / 2)}) from "
            f"{size_label(size)} requests at depth {depth}"
        )
    text.append(
        f"\n{sweep.grid.cells} cells of {sweep.runtime_s:g} s in {sweep.seconds:.0f} s",
        style="dim",
    )
    return text
