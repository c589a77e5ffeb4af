"""Recorded landscapes: measure a grid once (with repeats), then replay optimisers against it.

Real trials take seconds each, so comparing optimisers over many seeds on real hardware is out
of reach; a recording makes each comparison cost milliseconds while keeping the real shape and
the real noise (a replayed trial returns one of the recorded repeats, not a made-up spread).
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tuner.outfile import write_file
from tuner.search.optimizer import Optimizer, throughput_value
from tuner.search.space import Dimension, Point, SearchSpace, Value, point_key

LANDSCAPE_VERSION = 1


@dataclass(frozen=True)
class Landscape:
    """A grid of points of `space`, each with its repeated measurements (MB/s)."""

    space: SearchSpace
    points: tuple[Point, ...]
    samples: tuple[tuple[float, ...], ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.points) != len(self.samples) or not self.points:
            raise ValueError("a landscape needs points, each with its samples")
        if any(not s for s in self.samples):
            raise ValueError("every grid point needs at least one sample")

    def nearest(self, point: Point) -> int:
        """The index of the grid point closest to `point` (first one on a tie)."""
        snapped = self.space.snap(point)
        return min(
            range(len(self.points)), key=lambda i: self.space.distance(snapped, self.points[i])
        )

    def mean(self, point: Point) -> float:
        """The mean recorded MB/s at the grid point nearest to `point`: its true value."""
        return statistics.fmean(self.samples[self.nearest(point)])

    def optimum(self) -> tuple[Point, float]:
        """The grid point with the highest mean, and that mean."""
        means = [statistics.fmean(s) for s in self.samples]
        best = max(range(len(means)), key=means.__getitem__)
        return dict(self.points[best]), means[best]

    def save(self, path: Path) -> None:
        """Write the landscape as JSON (points as [key, target, value] triples)."""
        doc = {
            "version": LANDSCAPE_VERSION,
            "dimensions": [asdict(d) for d in self.space.dimensions],
            "none_depth": dict(self.space.none_depth),
            # Where a scheduler's parameters rest when another scheduler is chosen: without
            # it a replayed point keeps the value it was drawn with, and lands elsewhere.
            "resting": [[k, t, v] for (k, t), v in self.space.resting.items()],
            "grid": [
                {"point": [[k, t, v] for (k, t), v in p.items()], "samples": list(s)}
                for p, s in zip(self.points, self.samples, strict=True)
            ],
            "meta": dict(self.meta),
        }
        write_file(path, json.dumps(doc, indent=1) + "\n", mode=0o644, what="landscape")

    @classmethod
    def load(cls, path: Path) -> Landscape:
        """Read a landscape written by `save`."""
        doc = json.loads(path.read_text())
        if doc.get("version") != LANDSCAPE_VERSION:
            raise ValueError(f"{path}: unknown landscape version {doc.get('version')!r}")
        dims = tuple(
            Dimension(**{**d, "choices": tuple(d["choices"]), "kept": tuple(d.get("kept", ()))})
            for d in doc["dimensions"]
        )
        resting = {(k, t): v for k, t, v in doc.get("resting", [])}
        space = SearchSpace(dims, doc.get("none_depth", {}), resting)
        points = tuple({(k, t): v for k, t, v in row["point"]} for row in doc["grid"])
        samples = tuple(tuple(float(x) for x in row["samples"]) for row in doc["grid"])
        return cls(space, points, samples, doc.get("meta", {}))

    @classmethod
    def record(
        cls,
        space: SearchSpace,
        points: Sequence[Point],
        measure: Callable[[Point], float],
        repeats: int,
        meta: Mapping[str, Any] | None = None,
    ) -> Landscape:
        """Measure every point `repeats` times, a whole pass over the grid per repeat.

        Passes rather than back-to-back repeats, so slow drift spreads over all points instead
        of making some look better than others.
        """
        grid = [space.snap(p) for p in points]
        samples: list[list[float]] = [[] for _ in grid]
        for _ in range(repeats):
            for point, row in zip(grid, samples, strict=True):
                row.append(measure(point))
        return cls(space, tuple(grid), tuple(tuple(r) for r in samples), dict(meta or {}))


def _levels(dim: Dimension, count: int) -> list[Value]:
    """`count` values spread over a dimension (geometrically on log scales), snapped, unique."""
    if dim.kind == "categorical":
        return list(dim.choices)
    if count < 2 or dim.low == dim.high:
        return [dim.snap(dim.low)]
    values: list[Value] = []
    for i in range(count):
        value = dim.from_unit(i / (count - 1))
        if value not in values:
            values.append(value)
    return values


def grid_points(
    space: SearchSpace, levels: int | Mapping[tuple[str, str], Sequence[Value]] = 5
) -> list[Point]:
    """Every combination of per-dimension levels, repaired and de-duplicated.

    `levels` is a count per int dimension (categorical ones take every choice), or explicit
    values for some dimensions (others then get 5 levels).
    """
    per_dim: list[list[Value]] = []
    for dim in space.dimensions:
        if isinstance(levels, int):
            per_dim.append(_levels(dim, levels))
        elif dim.name in levels:
            per_dim.append([dim.snap(v) for v in levels[dim.name]])
        else:
            per_dim.append(_levels(dim, 5))
    grid: list[Point] = []
    seen: set[Any] = set()
    for combo in itertools.product(*per_dim):
        point = space.repair(dict(zip(space.names(), combo, strict=True)))
        if point_key(point) not in seen:
            seen.add(point_key(point))
            grid.append(point)
    return grid


def replay_objective(landscape: Landscape, rng: random.Random) -> Callable[[Point], float]:
    """A trial stand-in: MB/s at the nearest grid point, one of its repeats drawn at random."""

    def sample(point: Point) -> float:
        return rng.choice(landscape.samples[landscape.nearest(point)])

    return sample


def run_search(
    optimizer: Optimizer,
    sample: Callable[[Point], float],
    budget: int,
    value: Callable[[float], float] = throughput_value,
    *,
    baseline: Point | None = None,
    baseline_repeats: int = 3,
) -> list[Point]:
    """Ask, measure and tell `budget` times; the points in the order measured.

    With `baseline`, the search starts as a tune does: the baseline measured
    `baseline_repeats` times and told before the first ask. It counts as the first of the
    `budget` points (so a search of 15 trials asks 14), which is what the baseline cost a
    search that asked for it as its first point.
    """
    asked: list[Point] = []
    if baseline is not None and budget > 0:
        for _ in range(baseline_repeats):
            optimizer.tell(baseline, value(sample(baseline)))
        asked.append(baseline)
    while len(asked) < budget:
        point = optimizer.ask()
        optimizer.tell(point, value(sample(point)))
        asked.append(point)
    return asked


def trials_to_reach(
    asked: Sequence[Point], true_value: Callable[[Point], float], target: float
) -> int | None:
    """How many trials it took until a point worth at least `target` was tried (None: never).

    Judged on the true (mean) value, not the noisy sample: the question is whether the search
    found a good point, not whether one trial happened to look good.
    """
    for i, point in enumerate(asked, start=1):
        if true_value(point) >= target:
            return i
    return None
