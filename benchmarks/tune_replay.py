"""Replays of a recorded grid landscape: iotuner's optimiser and random search over many seeds.

Each replayed trial returns one of the recorded repeats of the grid point nearest to the point
asked, so the real shape and the real noise are kept. Both searches start as a tune does: the
current settings measured three times and told (they count as the first of the 15 trials), then
the rules' recommendations (stored with the landscape), then their own choices (a Latin
hypercube and the Gaussian process for iotuner, uniform draws for random). A third run,
iotuner without the rules' point, shows what the recommendations are worth.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.tune_row import point_from_triples
from tuner.search.optimizer import Optimizer, RandomOptimizer, SkoptOptimizer
from tuner.search.replay import Landscape, replay_objective, run_search, trials_to_reach
from tuner.search.space import Point, SearchSpace

SEEDS = 20
BUDGET = 15
TARGET = 0.95

Factory = Callable[[SearchSpace, int, list[Point]], Optimizer]
OPTIMIZERS: dict[str, Factory] = {
    "iotuner": lambda space, seed, initial: SkoptOptimizer(space, seed, initial),
    "random": lambda space, seed, initial: RandomOptimizer(space, seed, initial),
    "no-rules": lambda space, seed, initial: SkoptOptimizer(space, seed, initial[:1]),
}
BASELINE_REPEATS = 3  # TuneConfig.baseline_repeats


@dataclass(frozen=True)
class ReplayResult:
    """One optimiser on one landscape: per seed, trials to reach the target (None: never) and
    the best true fraction of the optimum it tried within the budget."""

    optimizer: str
    reached: tuple[int | None, ...]
    best_fraction: tuple[float, ...]

    @property
    def hits(self) -> int:
        """Seeds that reached the target within the budget."""
        return sum(r is not None for r in self.reached)

    @property
    def median_trials(self) -> float | None:
        """Median trials to reach the target over the seeds that did."""
        done = [r for r in self.reached if r is not None]
        return statistics.median(done) if done else None


def initial_points(landscape: Landscape) -> list[Point]:
    """The current settings and the rules' recommendations the tune started from."""
    meta = landscape.meta
    baseline = point_from_triples(meta["baseline"])
    return [baseline, *(point_from_triples(p) for p in meta.get("recommended", []))]


def replay(
    landscape: Landscape, seeds: int = SEEDS, budget: int = BUDGET, target: float = TARGET
) -> list[ReplayResult]:
    """Every optimiser over `seeds` seeds, `budget` trials each, against the recording."""
    _, optimum = landscape.optimum()
    results = []
    for name, factory in OPTIMIZERS.items():
        reached: list[int | None] = []
        best: list[float] = []
        for seed in range(seeds):
            initial = initial_points(landscape)
            optimizer = factory(landscape.space, seed, initial)
            sample = replay_objective(landscape, random.Random(seed))
            asked = run_search(optimizer, sample, budget, baseline=landscape.space.snap(initial[0]),
                               baseline_repeats=BASELINE_REPEATS)  # fmt: skip
            reached.append(trials_to_reach(asked, landscape.mean, target * optimum))
            best.append(max(landscape.mean(p) for p in asked) / optimum)
        results.append(ReplayResult(name, tuple(reached), tuple(best)))
    return results


def within_target(landscape: Landscape, target: float = TARGET) -> int:
    """How many grid points are worth at least `target` of the optimum (how easy it is)."""
    _, optimum = landscape.optimum()
    return sum(statistics.fmean(s) >= target * optimum for s in landscape.samples)
