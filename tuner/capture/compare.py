"""Two fingerprints side by side: each statistic of the original and of the reproduction, and
how far apart they are.

The four figures issue 32 holds a reproduction to (request sizes, read share, streams, queue
depth) make its fidelity: the largest of their differences. Request sizes differ by the total
variation distance of their histograms (the share of requests that would have to change
bucket); the others by their relative difference |b - a| / a (streams relative to one stream
at least: a random workload's are a fraction of one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tuner.capture.fingerprint import FIGURES, Fingerprint, size_shares
from tuner.errors import BadInput

TOLERANCE = 0.15
"""Issue 32's target: each fidelity figure within 15 %."""


@dataclass(frozen=True)
class Row:
    """One statistic: its name, both values, their difference (None where not comparable) and
    whether it counts toward the fidelity."""

    name: str
    original: float | None
    reproduction: float | None
    difference: float | None
    fidelity: bool = False


def _relative(a: float | None, b: float | None, unit: float = 0.0) -> float | None:
    """|b - a| over a, or over `unit` where a is smaller (the figure's smallest whole)."""
    if a is None or b is None:
        return None
    if a == b:
        return 0.0
    scale = max(abs(a), unit)
    return abs(b - a) / scale if scale else 1.0


def _sizes(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    sa, sb = size_shares(a), size_shares(b)
    return round(0.5 * sum(abs(sa.get(k, 0.0) - sb.get(k, 0.0)) for k in set(sa) | set(sb)), 4)


Getter = Callable[[Mapping[str, Any]], float | None]
STATISTICS: tuple[tuple[str, Getter, bool], ...] = (
    ("read share (bytes)", lambda d: d["read_share"], True),
    ("streams", lambda d: d["streams"], True),  # relative to one stream at least (UNITS)
    ("queue depth (mean)", lambda d: d["queue_depth"]["mean"], True),
    ("read size (mean, bytes)", lambda d: d["mean_size"]["read"] or None, False),
    ("write size (mean, bytes)", lambda d: d["mean_size"]["write"] or None, False),
    ("sequential share", lambda d: d["sequential_share"], False),
    ("readahead share of reads", lambda d: d["cache"]["readahead_share"], False),
    ("sync share of writes", lambda d: d["cache"]["sync_write_share"], False),
    ("writes per flush", lambda d: d["flushes"]["writes_per_sync"], False),
    ("requests/s", lambda d: d["iops"], False),
    ("MB/s", lambda d: d["mbps"], False),
    ("footprint (bytes)", lambda d: d["footprint_bytes"], False),
    ("seek (median, bytes)", lambda d: d["seek_median_bytes"], False),
    ("inter-arrival (mean, us)", lambda d: d["interarrival_us"]["mean"], False),
)

UNITS = {"streams": 1.0}
"""Figures whose difference is taken relative to at least this much: a random workload has
no stream (0.05 of one: a few requests continuing another by chance), and 0.05 against its
reproduction's 0 is 5 % of a stream, not 100 % of the figure."""


def compare(original: Fingerprint, reproduction: Fingerprint) -> list[Row]:
    """The statistics of both fingerprints' busiest devices, side by side."""
    a, b = original.busiest(), reproduction.busiest()
    if a is None:
        raise BadInput(f"{original.where}: the capture saw no read or write")
    if b is None:
        raise BadInput(f"{reproduction.where}: the reproduction's capture saw no read or write")
    rows = [Row("request sizes (histogram)", None, None, _sizes(a, b), True)]
    for name, get, counts in STATISTICS:
        x, y = get(a), get(b)
        diff = _relative(x, y, UNITS.get(name, 0.0))
        rows.append(Row(name, x, y, None if diff is None else round(diff, 4), counts))
    return rows


def fidelity(rows: list[Row]) -> float:
    """The largest difference among the fidelity figures (0 a perfect reproduction)."""
    return max((r.difference for r in rows if r.fidelity and r.difference is not None),
               default=0.0)  # fmt: skip


def application(found: Fingerprint, *, one: bool = False) -> Fingerprint:
    """`found` as its reproduction stands for it: where the reproduction is one process
    group's section (`reproduce.sections`; with `one`, the busiest group's, as a trial runs
    it), that group's figures in place of its device's. The device's mix the groups left out
    (a file system's log writing 30 s after four readers stretches the device's active span
    and dilutes its mean depth: 4.8 for the device, 7.0 for the readers); issue 32 holds a
    reproduction to the application's figures. Otherwise `found` itself."""
    from tuner.capture.reproduce import sections

    parts = sections(found)
    if one:
        parts = parts[:1]
    dev = found.busiest()
    if dev is None or len(parts) != 1 or not parts[0].comm:
        return found
    group = next(g for g in dev["by_process"] if g["comm"] == parts[0].comm)
    figures = {**dev, **{key: group[key] for key in FIGURES}, "by_process": [group]}
    return Fingerprint({**found.data, "devices": [figures]},
                       f"{found.where} (process group {parts[0].name})")  # fmt: skip
