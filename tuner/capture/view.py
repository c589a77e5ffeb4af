"""The text views of a fingerprint and of a check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from tuner.capture.compare import TOLERANCE, Row


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{value:.4g}"
    return f"{value:,.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"


def render_fingerprint(console: Console, data: Mapping[str, Any]) -> None:
    """One line per device and per process: what it asked of the device."""
    console.print(f"{data['seconds']:g} s captured, {data['events']} events, "
                  f"{data['lost']} lost, kernel {data['kernel']}", highlight=False)  # fmt: skip
    table = Table("device / process", "req/s", "MB/s", "read", "seq", "streams", "depth",
                  "readahead", "writes/flush")  # fmt: skip
    for dev in data["devices"]:
        for name, figures in [(f"{dev['device']} ({dev['class']})", dev)] + [
            (f"  {p['comm']}", p) for p in dev["by_process"]
        ]:
            table.add_row(
                name,
                _number(figures["iops"]),
                _number(figures["mbps"]),
                f"{figures['read_share']:.0%}",
                f"{figures['sequential_share']:.0%}",
                _number(figures["streams"]),
                _number(figures["queue_depth"]["mean"]),
                f"{figures['cache']['readahead_share']:.0%}",
                _number(figures["flushes"]["writes_per_sync"]),
            )
    console.print(table)


def render_compare(console: Console, rows: list[Row], fidelity: float) -> None:
    """Each statistic of the original and the reproduction, and their difference."""
    table = Table("statistic", "original", "reproduction", "difference")
    for row in rows:
        diff = "-" if row.difference is None else f"{row.difference:.1%}"
        style = "bold" if row.fidelity else None
        table.add_row(row.name, _number(row.original), _number(row.reproduction), diff,
                      style=style)  # fmt: skip
    console.print(table)
    verdict = "within" if fidelity <= TOLERANCE else "outside"
    console.print(f"fidelity: {fidelity:.1%} (the largest of the bold rows; {verdict} the "
                  f"{TOLERANCE:.0%} target)", highlight=False)  # fmt: skip
