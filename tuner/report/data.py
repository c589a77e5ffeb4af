"""What the report draws, read from the saved results of `bottleneck`, `sweep` and `tune`.

The readers are lenient on purpose: a result saved by an older or newer iotuner still draws
what it can, and anything they cannot read becomes None (the section then says how to make it).
They are bounded too, since a saved result is a file like any other: only finite numbers
within MAX_NUMBER count, a list gives at most MAX_ITEMS items, a text at most MAX_TEXT
characters, and a sweep grid wider than MAX_AXIS sizes or depths is not drawn.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_COUNT_KEYS = ("busy", "n", "count", "ndevices", "devices")
_RATE_KEYS = ("mbps", "total_mbps", "sum_mbps", "bw_mbps", "measured_mbps")
_SIZE_KEYS = ("size", "size_bytes", "bs", "bs_bytes", "block_size")
_DEPTH_KEYS = ("depth", "iodepth", "queue_depth", "qd")
MAX_NUMBER = 1e18
"""Above any rate, size or depth a result holds; int() and float() of it cannot fail."""
MAX_ITEMS = 10_000
"""Groups, points, cells or trials read from one list: more than any run makes."""
MAX_AXIS = 64
"""Sizes or depths in one sweep grid (a sweep takes about a dozen of each)."""
MAX_TEXT = 200


@dataclass(frozen=True)
class ScalingCurve:
    """One device group's scaling trial: MB/s with 1..N of its devices busy."""

    title: str
    component: str
    devices: tuple[str, ...]
    points: tuple[tuple[int, float], ...]  # (devices busy, MB/s summed)
    expected: tuple[tuple[int, float], ...]  # (devices busy, sum of their rates alone)
    plateau_mbps: float | None
    expected_mbps: float | None
    plateau_from: int | None
    verdict: str | None


@dataclass(frozen=True)
class SweepGrid:
    """A size by depth sweep of one device: `mbps[d][s]` for depths[d] and sizes[s]."""

    device: str
    sizes: tuple[int, ...]
    depths: tuple[int, ...]
    mbps: tuple[tuple[float | None, ...], ...]
    half_power_size: int | None
    half_power_depth: int | None
    summary: str | None


@dataclass(frozen=True)
class TuneRun:
    """A tune's trials in order, and its baseline and best (settings and MB/s)."""

    target: str
    workload: str
    objective: str
    trials: tuple[tuple[int, str, float], ...]  # (number, phase, MB/s)
    baseline_mbps: float
    best_mbps: float
    baseline_settings: dict[str, Any]
    best_settings: dict[str, Any]
    gain: float | None
    ci: tuple[float, float] | None
    chosen: bool
    stop_reason: str
    left_out: dict[str, Any] = field(default_factory=dict)  # the search's, not recommended


def scaling_curves(doc: dict[str, Any] | None) -> list[ScalingCurve]:
    """The groups of a saved `iotuner bottleneck --json` document that have a curve."""
    if doc is None:
        return []
    curves: list[ScalingCurve] = []
    for group in _dicts(doc.get("groups")):
        points = _scaling_points(group, _RATE_KEYS)
        if not points:
            continue
        devices = tuple(str(d) for d in group.get("devices") or () if isinstance(d, str))
        component = _text(group, "component", "shared", "bus", "cap", "name") or "shared path"
        kind = _dict(group.get("component")).get("kind")
        where = f"{kind} {component}" if isinstance(kind, str) and kind else component
        plateau = _dict(group.get("plateau")) or group
        curves.append(
            ScalingCurve(
                title=f"{', '.join(devices) or 'devices'} on {where}",
                component=component,
                devices=devices,
                points=points,
                expected=_scaling_points(group, ("expected_mbps",)),
                # An uncapped group scaled all the way: its top is no plateau.
                plateau_mbps=None
                if plateau.get("capped") is False
                else _number(plateau, "plateau_mbps", "ceiling_mbps", "mbps"),
                expected_mbps=_number(plateau, "expected_mbps", "sum_mbps"),
                plateau_from=_int(plateau, "plateau_from", "from_devices", "plateau_devices"),
                verdict=_text(group, "summary", "verdict", "message", "finding"),
            )
        )
    return curves


def sweep_grids(doc: dict[str, Any] | None) -> list[SweepGrid]:
    """The grids of a saved `iotuner sweep --json` document (one device, or a list of them)."""
    if doc is None:
        return []
    docs = list(_dicts(doc.get("sweeps"))) or [doc]
    grids = [grid for one in docs if (grid := _sweep_grid(one)) is not None]
    return grids


def tune_run(doc: dict[str, Any] | None) -> TuneRun | None:
    """The saved `iotuner tune --json` document, or None when it has no trials."""
    if doc is None:
        return None
    trials = tuple(
        (number, _short(t.get("phase", "")), mbps)
        for t in _dicts(doc.get("trials"))
        if (number := _int(t, "number")) is not None and (mbps := _number(t, "mbps")) is not None
    )
    if not trials:
        return None
    baseline, best = _dict(doc.get("baseline")), _dict(doc.get("best"))
    ci = doc.get("ci")
    pair = ci if isinstance(ci, list) and len(ci) == 2 else [None, None]
    low, high = (
        _number({"low": pair[0], "high": pair[1]}, "low"),
        _number({"high": pair[1]}, "high"),
    )
    return TuneRun(
        target=_short(doc.get("target", "?")),
        workload=_short(doc.get("workload", "?")),
        objective=_short(doc.get("objective", "throughput")),
        trials=trials,
        baseline_mbps=float(_number(baseline, "mbps") or 0.0),
        best_mbps=float(_number(best, "mbps") or 0.0),
        baseline_settings=_settings(baseline.get("settings")),
        best_settings=_settings(best.get("settings")),
        gain=_number(doc, "gain"),
        ci=(low, high) if low is not None and high is not None else None,
        chosen=bool(doc.get("chosen")),
        stop_reason=_short(doc.get("stop_reason", "")),
        left_out=_settings(doc.get("left_out")),
    )


def best_so_far(values: Iterable[float]) -> list[float]:
    """The running maximum: what the search had found by each trial."""
    out: list[float] = []
    for value in values:
        out.append(max(value, out[-1]) if out else value)
    return out


# -- helpers -----------------------------------------------------------------------------------


def _dicts(value: Any) -> Iterable[dict[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value[:MAX_ITEMS] if isinstance(item, dict))


def _short(value: Any) -> str:
    """`value` as text of at most MAX_TEXT characters."""
    text = value if isinstance(value, str) else str(value)[: MAX_TEXT + 1]
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(doc: dict[str, Any], *keys: str) -> float | None:
    """The first of `keys` holding a number: finite, within MAX_NUMBER (NaN fails both)."""
    for key in keys:
        value = doc.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if -MAX_NUMBER <= value <= MAX_NUMBER:
            return float(value)
    return None


def _int(doc: dict[str, Any], *keys: str) -> int | None:
    value = _number(doc, *keys)
    return None if value is None else int(value)


def _text(doc: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = doc.get(key)
        if isinstance(value, str) and value:
            return _short(value)
        if isinstance(value, dict):  # a component given as an object: use its name
            name = value.get("name") or value.get("device")
            if isinstance(name, str):
                return _short(name)
    return None


def _count(point: dict[str, Any]) -> int | None:
    for key in _COUNT_KEYS:
        value = point.get(key)
        if isinstance(value, list):  # the devices busy, by name
            return len(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _scaling_points(group: dict[str, Any], rates: tuple[str, ...]) -> tuple[tuple[int, float], ...]:
    for key in ("points", "curve", "scaling", "steps", "trials"):
        points = [
            (count, rate)
            for p in _dicts(group.get(key))
            if (count := _count(p)) is not None and (rate := _number(p, *rates)) is not None
        ]
        if points:
            return tuple(sorted(points))
    return ()


def _sweep_grid(doc: dict[str, Any]) -> SweepGrid | None:
    cells: dict[tuple[int, int], float] = {}
    for key in ("points", "cells", "grid", "results", "trials"):
        for p in _dicts(doc.get(key)):
            size, depth = _int(p, *_SIZE_KEYS), _int(p, *_DEPTH_KEYS)
            rate = _number(p, *_RATE_KEYS)
            if size is not None and depth is not None and rate is not None and min(size, depth) > 0:
                cells[(size, depth)] = rate
        if cells:
            break
    if not cells:
        return None
    sizes = tuple(sorted({s for s, _ in cells}))
    depths = tuple(sorted({d for _, d in cells}))
    if len(sizes) > MAX_AXIS or len(depths) > MAX_AXIS:
        return None  # not a sweep iotuner made; a 300 x 300 grid cannot be drawn
    half = doc.get("half_power")
    half_doc = half if isinstance(half, dict) else doc
    half_size = _int(half_doc, *_SIZE_KEYS, "half_power_size", "half_power_bytes")
    if half_size is None and isinstance(half, (int, float)):
        half_size = int(half)
    return SweepGrid(
        device=_text(doc, "device", "target") or "?",
        sizes=sizes,
        depths=depths,
        mbps=tuple(tuple(cells.get((s, d)) for s in sizes) for d in depths),
        half_power_size=half_size,
        half_power_depth=_int(half_doc, *_DEPTH_KEYS),
        summary=_text(doc, "summary", "message", "verdict"),
    )


def _settings(value: Any) -> dict[str, Any]:
    """[{key, target, value}] -> {'key (target)': value}."""
    out: dict[str, Any] = {}
    for item in _dicts(value):
        key, target = item.get("key"), item.get("target")
        out[_short(f"{key} ({target})" if target else key)] = item.get("value")
    return out
