"""The report's plots, drawn with matplotlib (Agg: no display) and inlined as base64 PNG."""

from __future__ import annotations

import base64
import io
import math

import matplotlib

matplotlib.use("Agg")  # before pyplot: a report is drawn on servers without a display

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tuner.report.data import ScalingCurve, SweepGrid, TuneRun, best_so_far

_DPI = 100


def png_data_uri(figure: Figure) -> str:
    """The figure as a data: URI of a PNG, and the figure closed (pyplot keeps them otherwise)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def scaling_figure(curve: ScalingCurve) -> Figure:
    """MB/s against devices busy, with the sum the devices could deliver and the plateau."""
    figure, ax = plt.subplots(figsize=(6.4, 3.8))
    counts = [n for n, _ in curve.points]
    rates = [mbps for _, mbps in curve.points]
    ax.plot(counts, rates, "o-", color="#2563eb", label="measured (sum of devices)")
    single = next((mbps for n, mbps in curve.points if n == 1), None)
    if curve.expected:  # each device's own rate, summed: what a path without a cap gives
        ax.plot(*_unzip(curve.expected), "--", color="#9ca3af", label="sum of rates alone")
    elif single is not None:
        ax.plot(
            counts,
            [single * n for n in counts],
            "--",
            color="#9ca3af",
            label="linear (n x one device)",
        )
    if curve.plateau_mbps is not None:
        ax.axhline(
            curve.plateau_mbps,
            color="#dc2626",
            linestyle=":",
            label=f"plateau {curve.plateau_mbps:.0f} MB/s",
        )
    if curve.expected_mbps is not None:
        ax.axhline(
            curve.expected_mbps,
            color="#16a34a",
            linestyle="-.",
            linewidth=1,
            label=f"expected {curve.expected_mbps:.0f} MB/s",
        )
    ax.set_xticks(counts)
    ax.set_xlabel("devices busy at once")
    ax.set_ylabel("MB/s")
    ax.set_ylim(bottom=0)
    ax.set_title(curve.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return figure


def sweep_figure(grid: SweepGrid) -> Figure:
    """A heatmap of MB/s by request size (columns) and queue depth (rows), cells labelled."""
    width = max(6.0, 0.8 * len(grid.sizes) + 2)
    height = max(3.0, 0.45 * len(grid.depths) + 1.6)
    figure, ax = plt.subplots(figsize=(width, height))
    values = [[math.nan if v is None else v for v in row] for row in grid.mbps]
    image = ax.imshow(values, cmap="viridis", aspect="auto", origin="lower")
    figure.colorbar(image, ax=ax, label="MB/s")
    ax.set_xticks(range(len(grid.sizes)), [size_label(s) for s in grid.sizes])
    ax.set_yticks(range(len(grid.depths)), [str(d) for d in grid.depths])
    ax.set_xlabel("request size")
    ax.set_ylabel("queue depth")
    top = max((v for row in values for v in row if not math.isnan(v)), default=1.0)
    for d, row in enumerate(values):
        for s, value in enumerate(row):
            if not math.isnan(value):
                colour = "black" if value > 0.6 * top else "white"
                ax.text(s, d, f"{value:.0f}", ha="center", va="center", fontsize=7, color=colour)
    if grid.half_power_size in grid.sizes:
        column = grid.sizes.index(grid.half_power_size or 0)
        ax.axvline(column, color="#f97316", linewidth=2, linestyle="--", label="half power")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0, -0.18), frameon=False)
    ax.set_title(f"{grid.device}: MB/s by request size and queue depth", fontsize=10)
    return figure


def convergence_figure(run: TuneRun) -> Figure:
    """Each trial's MB/s and the best found so far, against trial number, with the baseline."""
    figure, ax = plt.subplots(figsize=(6.4, 3.8))
    numbers = [n for n, _, _ in run.trials]
    rates = [mbps for _, _, mbps in run.trials]
    colours = {
        "baseline": "#6b7280",
        "initial": "#a855f7",
        "search": "#2563eb",
        "confirm": "#16a34a",
    }
    for phase, colour in colours.items():
        xs = [n for n, p, _ in run.trials if p == phase]
        ys = [mbps for _, p, mbps in run.trials if p == phase]
        if xs:
            ax.scatter(xs, ys, s=18, color=colour, label=phase, zorder=3)
    others = [(n, mbps) for n, p, mbps in run.trials if p not in colours]
    if others:
        xs, ys = [n for n, _ in others], [mbps for _, mbps in others]
        ax.scatter(xs, ys, s=18, color="#111827", label="other", zorder=3)
    ax.step(numbers, best_so_far(rates), where="post", color="#dc2626", label="best so far")
    if run.baseline_mbps:
        ax.axhline(run.baseline_mbps, color="#6b7280", linestyle=":", label="baseline (confirmed)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no tick at trial 2.5
    ax.set_xlabel("trial number")
    ax.set_ylabel("MB/s")
    ax.set_ylim(bottom=0)
    ax.set_title(f"tune {run.workload} on {run.target}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return figure


def _unzip(points: tuple[tuple[int, float], ...]) -> tuple[list[int], list[float]]:
    return [n for n, _ in points], [value for _, value in points]


def size_label(size: int) -> str:
    """4096 -> '4K', 1048576 -> '1M': the way fio writes block sizes."""
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)
