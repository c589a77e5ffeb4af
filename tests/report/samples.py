"""Saved results like real runs' of bottleneck, sweep and tune, for the report's tests."""

from __future__ import annotations

from typing import Any


def bottleneck_doc() -> dict[str, Any]:
    """Three lab disks on a 250 MB/s bus, as `iotuner bottleneck --json` saves it."""
    devices = ["loop4", "loop5", "loop6"]
    totals = [99.5, 198.0, 251.0]
    return {
        "command": "bottleneck",
        "devices": devices,
        "groups": [
            {
                "component": {"id": "block:loop3", "kind": "bus", "name": "loop3"},
                "devices": devices,
                "solo_mbps": [99.5, 99.8, 99.6],
                "points": [
                    {
                        "busy": n,
                        "devices": devices[:n],
                        "total_mbps": total,
                        "expected_mbps": round(99.6 * n, 1),
                    }
                    for n, total in enumerate(totals, start=1)
                ],
                "plateau": {
                    "ceiling_mbps": 251.0,
                    "from_devices": 3,
                    "expected_mbps": 298.9,
                    "capped": True,
                },
                "summary": "loop4, loop5, loop6 share bus loop3: plateau 251 MB/s from 3 "
                "devices, 299 MB/s expected",
            }
        ],
    }


def sweep_doc() -> dict[str, Any]:
    """A 100 MB/s, 200 IOPS disk over 4K..4M by depth 1..8, as `iotuner sweep --json` saves it."""
    sizes = [4096 * 4**i for i in range(6)]
    depths = [1, 2, 4, 8]
    cells = [
        {"size": s, "depth": d, "mbps": round(min(100.0, 200 * d * s / 1e6), 1)}
        for d in depths
        for s in sizes
    ]
    return {
        "kind": "sweep",
        "device": "loop4",
        "sizes": sizes,
        "depths": depths,
        "cells": cells,
        "half_power": {"size": 262144, "depth": 1},
        "summary": "loop4: plateau 100 MB/s at 1M requests, depth 1; half power from 256K at "
        "depth 1",
    }


def tune_doc() -> dict[str, Any]:
    """A short tune as `iotuner tune --json` prints it: baseline, search, confirm."""
    rates = [61.0, 58.5, 70.2, 66.0, 88.4, 97.0, 95.2, 96.1]
    phases = ["baseline", "initial", "initial", "search", "search", "search", "confirm", "confirm"]
    ra = [{"key": "block.read_ahead_kb", "target": "loop4", "value": 128}]
    best = [{"key": "block.read_ahead_kb", "target": "loop4", "value": 4096}]
    return {
        "target": "/dev/loop4",
        "workload": "stream-read",
        "objective": "throughput",
        "baseline": {"settings": ra, "mbps": 61.0, "cv": 0.02},
        "best": {"settings": best, "mbps": 96.1, "cv": 0.02},
        "gain": 1.575,
        "ci": [1.52, 1.63],
        "chosen": True,
        "changes": best,
        "left_out": [{"key": "block.scheduler", "target": "loop4", "value": "kyber"}],
        "stop_reason": "budget",
        "seconds": 40.0,
        "trials": [
            {
                "number": i + 1,
                "phase": p,
                "settings": [],
                "mbps": r,
                "p99_latency_us": None,
                "seconds": 3.0,
                "flagged": None,
            }
            for i, (p, r) in enumerate(zip(phases, rates, strict=True))
        ],
    }
