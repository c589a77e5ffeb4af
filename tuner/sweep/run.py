"""Measuring a sweep: one read-only, direct, time-based fio run per cell of the grid."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from probes.host_root import live_host
from probes.hostfs import HostFS
from tuner.errors import BadInput
from tuner.sweep.grid import Grid, size_label
from tuner.trials.faults import TrialFault
from tuner.trials.fio import job_text, parse_result, run_fio, trial_options, writes
from tuner.trials.targets import TrialTarget
from tuner.units import human_bytes

PATTERNS = ("read", "randread")  # a sweep only ever reads


@dataclass(frozen=True)
class Cell:
    """One measured point: `size` bytes per request, `depth` requests in flight."""

    size: int
    depth: int
    mbps: float
    iops: float
    p99_latency_us: float | None


@dataclass(frozen=True)
class Sweep:
    """A measured grid: `cells` in depth-major order (every size at depth 1, then depth 2...)."""

    device: str
    devices: tuple[str, ...]
    rw: str
    grid: Grid
    runtime_s: float
    ramp_s: float
    cells: tuple[Cell, ...]
    seconds: float

    def mbps(self, size: int, depth: int) -> float:
        """MB/s measured at one cell; KeyError when the grid has no such cell."""
        for cell in self.cells:
            if cell.size == size and cell.depth == depth:
                return cell.mbps
        raise KeyError((size, depth))


def fio_options(size: int, depth: int, rw: str = "read") -> dict[str, object]:
    """The fio options of one cell: direct reads through libaio, never a write."""
    if rw not in PATTERNS:
        raise BadInput(f"--rw {rw}: a sweep reads only ({' or '.join(PATTERNS)})")
    options = trial_options(
        {"rw": rw, "direct": 1, "ioengine": "libaio", "bs": size, "iodepth": depth}, None
    )
    assert not writes(options)  # the device may hold data: a sweep must never write
    return options


def measure_cell(
    target: TrialTarget, size: int, depth: int, *, rw: str, runtime_s: float, ramp_s: float
) -> Cell:
    """Read `target` for `runtime_s` (after `ramp_s`) at one request size and queue depth."""
    text = job_text(
        fio_options(size, depth, rw),
        runtime_s=runtime_s,
        ramp_s=ramp_s,
        filename=target.path,
        region_bytes=target.size_bytes,
        title=f"sweep {rw} bs={size_label(size)} iodepth={depth}",
    )
    # A deep queue of large requests on a slow disk takes a while to drain after the runtime.
    timeout = 3 * (runtime_s + ramp_s) + 60
    fio = parse_result(run_fio(text, timeout_s=timeout, what=target.path, devices=target.devices))
    return Cell(size, depth, fio.mbps, fio.iops, fio.p99_latency_us)


def run_sweep(
    target: TrialTarget,
    grid: Grid,
    *,
    rw: str = "read",
    runtime_s: float = 1.0,
    ramp_s: float = 0.25,
    on_cell: Callable[[Cell], None] | None = None,
) -> Sweep:
    """Measure every cell of `grid` on `target` (a device: TrialTarget.device, read-only)."""
    if target.writable or target.is_scratch:
        raise BadInput(f"{target.path}: a sweep reads a device; it is never given write access")
    largest = max(grid.sizes)
    if target.size_bytes < 2 * largest:
        raise BadInput(
            f"{target.path}: {human_bytes(target.size_bytes)} is too small for "
            f"{human_bytes(largest)} requests"
        )
    block = logical_block_bytes(target.devices[0], live_host()) if target.devices else None
    odd = [size for size in grid.sizes if block and size % block]
    if block and odd:
        raise BadInput(
            f"{target.path}: direct reads need whole {block}-byte logical blocks, "
            f"not {', '.join(size_label(size) for size in odd)}"
        )
    started = time.monotonic()
    cells: list[Cell] = []
    for depth in grid.depths:
        for size in grid.sizes:
            try:
                cell = measure_cell(target, size, depth, rw=rw, runtime_s=runtime_s,
                                    ramp_s=ramp_s)  # fmt: skip
            except TrialFault as fault:
                where = f"{rw} bs={size_label(size)} iodepth={depth}"
                raise fault.at(len(cells) + 1, where) from None
            cells.append(cell)
            if on_cell is not None:
                on_cell(cell)
    return Sweep(
        device=target.path,
        devices=target.devices,
        rw=rw,
        grid=grid,
        runtime_s=runtime_s,
        ramp_s=ramp_s,
        cells=tuple(cells),
        seconds=time.monotonic() - started,
    )


def logical_block_bytes(name: str, fs: HostFS) -> int | None:
    """The device's logical block size: a partition has its disk's (`queue/` is the disk's)."""
    real = fs.realpath(f"sys/class/block/{name}")
    for where in (real, real.rsplit("/", 1)[0]) if real else ():
        size = fs.read_int(f"{where}/queue/logical_block_size")
        if size:
            return size
    return None
