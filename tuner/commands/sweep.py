"""`iotuner sweep DEVICE`: MB/s over request sizes by queue depths, and the half-power point."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from tuner.console import output_console
from tuner.errors import BadInput
from tuner.results import save_result
from tuner.sweep.analysis import analyse
from tuner.sweep.grid import Grid, parse_depths, parse_sizes, size_label
from tuner.sweep.result import sweep_document
from tuner.sweep.run import PATTERNS, Cell, run_sweep
from tuner.sweep.view import render_sweep
from tuner.trials.faults import TrialFault
from tuner.trials.targets import TrialTarget


def sweep(
    device: Annotated[str, typer.Argument(help="A block device: /dev/sdb, or its name sdb.")],
    sizes: Annotated[
        str | None,
        typer.Option(help="Request sizes, comma-separated: 4k,64k,1m. Default 4k to 4m by x4."),
    ] = None,
    depths: Annotated[
        str | None,
        typer.Option(help="Queue depths, comma-separated: 1,4,16. Default 1 to 32 by x2."),
    ] = None,
    runtime: Annotated[
        float, typer.Option(help="Seconds measured per cell.", min=0.2, max=600)
    ] = 1.0,
    rw: Annotated[str, typer.Option(help="read (sequential) or randread.")] = "read",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Measure direct-read throughput over a grid of request sizes and queue depths.

    Read-only: every cell is one short fio run of O_DIRECT reads, never a write. Shows the
    plateau, the half-power point (the smallest request size reaching half of it) and where
    throughput stops growing, per queue depth and per request size; the JSON document is also
    saved as results/sweep.json in the state directory for `iotuner report`.
    Exit codes: 0 done, 1 a measurement failed (an I/O error, the device gone: one line
    naming the device and the cell), 2 bad input.
    """
    if rw not in PATTERNS:
        raise BadInput(f"--rw {rw}: a sweep reads only ({' or '.join(PATTERNS)})")
    grid = Grid(parse_sizes(sizes), parse_depths(depths))
    path = _device_path(device)
    target = TrialTarget.device(path)
    if not os.access(path, os.R_OK):
        raise BadInput(f"{path}: not readable by this user (run as root or in group disk)")
    console = output_console(stderr=True)
    ramp = min(0.25, runtime / 4)
    console.print(
        f"{path}: {len(grid.sizes)} sizes x {len(grid.depths)} depths, {runtime:g} s a cell "
        f"(about {grid.cells * (runtime + ramp + 0.5):.0f} s), direct reads only",
        style="dim",
        highlight=False,
        markup=False,
    )
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} cells"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    task = progress.add_task("sweeping", total=grid.cells)

    def measured(cell: Cell) -> None:
        progress.update(
            task,
            advance=1,
            description=f"{size_label(cell.size)} x {cell.depth}: {cell.mbps:.1f} MB/s",
        )

    try:
        with progress:
            done = run_sweep(target, grid, rw=rw, runtime_s=runtime, ramp_s=ramp,
                             on_cell=measured)  # fmt: skip
    except TrialFault as fault:
        # A sweep only reads: nothing to restore; a grid with a hole in it is no result.
        raise fault.reported("sweep", "nothing changed, no result saved") from None
    found = analyse(done)
    doc = sweep_document(done, found)
    save_result("sweep", doc, devices=list(target.devices))
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        output_console().print(render_sweep(done, found))


def _device_path(device: str) -> str:
    """'sdb' -> '/dev/sdb' when that exists; paths as given."""
    if "/" not in device and Path("/dev", device).exists():
        return f"/dev/{device}"
    return device
