"""A sweep as a JSON document: `iotuner sweep --json` and results/sweep.json (for the report).

"cells" holds one entry per measured point (size in bytes, depth, MB/s, IOPS, p99 latency in
µs), depth-major; "by_depth" sums up each row (MB/s against request size), "by_size" each
column (MB/s against queue depth).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tuner.sweep.analysis import Analysis, Curve, analyse
from tuner.sweep.grid import size_label
from tuner.sweep.run import Sweep
from tuner.units import human_rate

SCHEMA = 1


def sweep_document(sweep: Sweep, analysis: Analysis | None = None) -> dict[str, Any]:
    """Everything measured and found, in plain JSON types (sizes in bytes, rates in MB/s)."""
    found = analysis or analyse(sweep)
    return {
        "schema": SCHEMA,
        "kind": "sweep",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": sweep.device,
        "devices": list(sweep.devices),
        "rw": sweep.rw,
        "direct": True,
        "runtime_s": sweep.runtime_s,
        "ramp_s": sweep.ramp_s,
        "seconds": round(sweep.seconds, 1),
        "sizes": list(sweep.grid.sizes),
        "depths": list(sweep.grid.depths),
        "cells": [
            {
                "size": cell.size,
                "depth": cell.depth,
                "mbps": round(cell.mbps, 2),
                "iops": round(cell.iops, 1),
                "p99_latency_us": _round(cell.p99_latency_us),
            }
            for cell in sweep.cells
        ],
        "plateau": {
            "mbps": round(found.plateau_mbps, 2),
            "size": found.plateau_size,
            "depth": found.plateau_depth,
        },
        "half_power": (
            {"size": found.half_power[0], "depth": found.half_power[1]}
            if found.half_power is not None
            else None
        ),
        "summary": summary(sweep, found),
        "by_depth": [_curve(c, "depth", "size") for c in found.by_depth],
        "by_size": [_curve(c, "size", "depth") for c in found.by_size],
    }


def summary(sweep: Sweep, found: Analysis) -> str:
    """One line: the plateau and the half-power point."""
    line = (
        f"{sweep.device}: plateau {human_rate(found.plateau_mbps)} at "
        f"{size_label(found.plateau_size)} requests, depth {found.plateau_depth}"
    )
    if found.half_power is not None:
        size, depth = found.half_power
        line += f"; half power from {size_label(size)} at depth {depth}"
    return line


def _curve(found: Curve, fixed: str, along: str) -> dict[str, Any]:
    half = dict(found.points).get(found.half_power) if found.half_power is not None else None
    return {
        fixed: found.fixed,
        "plateau_mbps": round(found.plateau_mbps, 2),
        f"plateau_{along}": found.plateau_at,
        f"half_power_{along}": found.half_power,
        "half_power_mbps": _round(half),
        f"stops_growing_{along}": found.stops_growing,
        "still_growing": found.still_growing,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
