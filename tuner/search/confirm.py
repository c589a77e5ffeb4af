"""The confirmation phase: re-measure the best candidates against the baseline, interleaved.

The search picks its best point from single noisy trials, so its figure is biased upwards (the
winner is partly the luckiest). Confirmation measures the baseline and the top candidates in
turns (B, C1, C2, B, C1, C2, ...) so slow drift (a warming disk, a busy neighbour) hits all of
them alike, then estimates each candidate's gain with a confidence interval. A candidate is
recommended only when its interval's lower bound is above 1: otherwise the current settings stay.
Among the candidates that pass, one with fewer changes wins when its mean is within
`simpler_within` of the safest: a change that buys nothing measurable is a change not made.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scipy import stats

from tuner.search.simplify import changes_from
from tuner.search.space import Point, point_key


@dataclass(frozen=True)
class Comparison:
    """One candidate against the baseline: its mean, cv, gain and the gain's interval."""

    point: Point
    mbps: float
    cv: float
    gain: float
    ci_low: float
    ci_high: float
    samples: tuple[float, ...]


@dataclass(frozen=True)
class Confirmation:
    """The outcome. `chosen` False means keep the baseline: see `recommended`.

    best_* describe the candidate with the best lower bound, also when it was refused, so a
    report can say what was found and why it is not recommended. gain = best_mbps /
    baseline_mbps; [ci_low, ci_high] is its interval (Welch's t on log values, widened by
    Bonferroni for the number of candidates compared).
    """

    best_point: Point
    baseline_mbps: float
    baseline_cv: float
    best_mbps: float
    best_cv: float
    gain: float
    ci_low: float
    ci_high: float
    chosen: bool
    rounds: int
    baseline_point: Point = field(default_factory=dict)
    comparisons: tuple[Comparison, ...] = ()

    @property
    def recommended(self) -> Point:
        """The settings to recommend: the best candidate if chosen, else the baseline."""
        return self.best_point if self.chosen else self.baseline_point


def _logs(samples: Sequence[float]) -> list[float]:
    # A failed trial (0 MB/s) becomes a huge spread, and so a refusal, instead of a crash.
    return [math.log(max(s, 1e-9)) for s in samples]


def cv_of(samples: Sequence[float]) -> float:
    """Coefficient of variation (sample standard deviation over mean); 0 for fewer than two."""
    if len(samples) < 2:
        return 0.0
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / mean if mean > 0 else math.inf


def gain_interval(
    baseline: Sequence[float], candidate: Sequence[float], level: float = 0.95
) -> tuple[float, float]:
    """A `level` confidence interval for candidate/baseline: Welch's t on the log values.

    Logs turn the ratio into a difference and match how throughput noise behaves (a
    percentage, not a fixed number of MB/s). Both samples need at least two values.
    """
    if len(baseline) < 2 or len(candidate) < 2:
        raise ValueError("an interval needs at least two samples on each side")
    lb, lc = _logs(baseline), _logs(candidate)
    diff = statistics.fmean(lc) - statistics.fmean(lb)
    vb, vc = statistics.variance(lb) / len(lb), statistics.variance(lc) / len(lc)
    se = math.sqrt(vb + vc)
    if se == 0.0:
        return math.exp(diff), math.exp(diff)
    # Welch-Satterthwaite degrees of freedom.
    df = (vb + vc) ** 2 / (vb**2 / (len(lb) - 1) + vc**2 / (len(lc) - 1))
    t = float(stats.t.ppf(1 - (1 - level) / 2, df))
    return math.exp(diff - t * se), math.exp(diff + t * se)


def confirm(
    measure: Callable[[Point], float],
    baseline: Point,
    candidates: Sequence[Point],
    rounds: int = 3,
    level: float = 0.95,
    simpler_within: float = 0.0,
) -> Confirmation:
    """Measure baseline and candidates interleaved `rounds` times and pick a winner, or none.

    `measure(point)` runs one trial and returns MB/s (higher is better). A candidate passes
    when its interval's lower bound exceeds 1.0. The safest of those has the highest lower
    bound; the winner is the one changing the fewest settings among the passing candidates
    whose mean is at least (1 - `simpler_within`) of the safest's, the highest lower bound
    breaking ties. With none passing, the best lower bound is reported and nothing is chosen.
    Candidates equal to the baseline or to each other are measured once.
    """
    if rounds < 2:
        raise ValueError("confirmation needs at least two rounds to estimate the noise")
    unique: list[Point] = []
    seen = {point_key(baseline)}
    for point in candidates:
        if point_key(point) not in seen:
            seen.add(point_key(point))
            unique.append(point)
    base_samples: list[float] = []
    cand_samples: list[list[float]] = [[] for _ in unique]
    for _ in range(rounds):
        base_samples.append(measure(baseline))
        for samples, point in zip(cand_samples, unique, strict=True):
            samples.append(measure(point))
    base_mean = statistics.fmean(base_samples)
    # Bonferroni: with k candidates each interval is at 1 - (1 - level) / k, so the chance that
    # any useless candidate looks significant stays at most 1 - level.
    each = 1 - (1 - level) / max(len(unique), 1)
    comparisons = []
    for point, samples in zip(unique, cand_samples, strict=True):
        low, high = gain_interval(base_samples, samples, each)
        mean = statistics.fmean(samples)
        gain = mean / base_mean if base_mean > 0 else math.inf
        comparisons.append(Comparison(point, mean, cv_of(samples), gain, low, high, tuple(samples)))
    base_cv = cv_of(base_samples)
    if not comparisons:
        return Confirmation(
            dict(baseline), base_mean, base_cv, base_mean, base_cv, 1.0, 1.0, 1.0,
            chosen=False, rounds=rounds, baseline_point=dict(baseline),
        )  # fmt: skip
    best = _winner(comparisons, baseline, simpler_within)
    return Confirmation(
        dict(best.point), base_mean, base_cv, best.mbps, best.cv, best.gain,
        best.ci_low, best.ci_high, chosen=best.ci_low > 1.0, rounds=rounds,
        baseline_point=dict(baseline), comparisons=tuple(comparisons),
    )  # fmt: skip


def _winner(comparisons: list[Comparison], baseline: Point, simpler_within: float) -> Comparison:
    """The comparison to report: see `confirm`."""
    passed = [c for c in comparisons if c.ci_low > 1.0]
    if not passed:
        return max(comparisons, key=lambda c: c.ci_low)
    safest = max(passed, key=lambda c: c.ci_low)
    close = [c for c in passed if c.mbps >= safest.mbps * (1.0 - simpler_within)]
    return min(close, key=lambda c: (changes_from(c.point, baseline), -c.ci_low))
