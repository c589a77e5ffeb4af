"""The confirmation phase: re-measure the best candidates against the baseline, interleaved.

The search picks its best point from single noisy trials, so its figure is biased upwards (the
winner is partly the luckiest). Confirmation measures the baseline and the top candidates in
turns (B, C1, C2, B, C1, C2, ...) so slow drift (a warming disk, a busy neighbour) hits all of
them alike, then estimates each candidate's gain with a confidence interval. A candidate is
recommended only when its interval's lower bound is above 1: otherwise the current settings stay.
Among the candidates that pass, one with fewer changes wins when its mean is within
`simpler_within` of the safest: a change that buys nothing measurable is a change not made.

A measurement may come back flagged (its figures are not the device's: page cache, a data set
read through; tuner/trials/flags.py): a candidate with a flagged sample is refused whatever its
figures, and a flagged baseline sample leaves nothing to compare with, so nothing is chosen.
For IOPS, a candidate whose p99 latency rose by more than `p99_rise` is refused too.

A baseline sample may be a transient: a buffered sequential reader whose window closed with
more than AHEAD_SHARE of its bytes still read ahead of its streams (a badly tuned 64 MiB
readahead on a slow array: the device moved 5 MB/s, fio got 0.8 MB/s over 40 s and anywhere
from 0.7 to 66 MB/s in 3 s windows). Its figure is no steady state, so the gain over it is
taken against its ceiling (every byte the device read reaching the workload) and reported as
a lower bound (`Confirmation.at_least`).
A round is one trial per point, and one trial can measure an event rather than the setting: a
reno flow on a 300 ms path that takes a burst of losses (its own slow start overshooting the
bottleneck's queue, or a delay line starved of CPU on a shared machine) falls back and regrows
at one segment a round trip, minutes at a 18.75 MB window, so that round measured 1.4 Mbit/s
where the others measured 477.8 and the mean and interval followed it (issue 28). So a figure
outside its point's other figures by more than the noise (`_outside`) is measured once more
(`Recheck`): a re-measure back within them replaces it, one outside again keeps it (a setting
that collapses twice is not a better setting: its collapse counts). Flagged figures are never
re-measured (a flag refuses its candidate whatever the figure).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from scipy import stats

from tuner.search.fidelity import NOISE_FLOOR
from tuner.search.simplify import changes_from
from tuner.search.space import Point, point_key


@dataclass(frozen=True)
class Sample:
    """One confirmation measurement: the score (higher is better: MB/s, IOPS), the p99
    latency in microseconds when known, and why its figures are not the device's, or None."""

    score: float
    p99_us: float | None = None
    flag: str | None = None
    ceiling: float | None = None
    """The score had the bytes its streams held read ahead reached them, when those were
    more than AHEAD_SHARE of what it read (`transient_ceiling`); None for a steady figure."""
    trial: int | None = None  # the number of the trial that measured it, when known


Measure: TypeAlias = Callable[[Point], "float | Sample"]


@dataclass(frozen=True)
class Recheck:
    """A figure outside its point's other figures, measured once more.

    `first` is the round's figure, `again` the re-measure's, `others` the least and most of the
    point's other figures then, `counted` the one the point keeps: `again` when it came back
    within them (or was flagged: a flag refuses), else `first`. `dropped_trial` is the
    number of the trial that no longer counts (None when the measure gave none).
    """

    point: Point
    round: int
    first: float
    again: float
    others: tuple[float, float]
    counted: float
    dropped_trial: int | None = None

    def describe(self) -> str:
        """One line for people."""
        kept = ("the re-measure counts" if self.counted == self.again and self.first != self.again
                else "outside again: the first counts")  # fmt: skip
        return (
            f"round {self.round} measured {self.first:.4g} against {self.others[0]:.4g}-"
            f"{self.others[1]:.4g} in the others: measured again, {self.again:.4g}; {kept}"
        )


@dataclass(frozen=True)
class Comparison:
    """One candidate against the baseline: its mean, cv, gain and the gain's interval.

    `refused`: why it cannot be recommended whatever its interval (a flagged sample, a p99
    that rose), or None.
    """

    point: Point
    score: float
    cv: float
    gain: float
    ci_low: float
    ci_high: float
    samples: tuple[float, ...]
    refused: str | None = None
    rank_low: float = 0.0
    """The lower bound the passing candidates are ranked by (`ranking_low`)."""

    @property
    def passed(self) -> bool:
        """True when the candidate is a gain: interval above 1 and nothing refused it."""
        return self.refused is None and self.ci_low > 1.0


@dataclass(frozen=True)
class Confirmation:
    """The outcome. `chosen` False means keep the baseline: see `recommended`.

    best_* describe the candidate with the best lower bound, also when it was refused, so a
    report can say what was found and why it is not recommended. gain = best_score /
    baseline_score (over the baseline's ceilings when `at_least`); [ci_low, ci_high] is its
    interval (Welch's t on log values, widened by Bonferroni for the number of candidates
    compared).
    """

    best_point: Point
    baseline_score: float
    baseline_cv: float
    best_score: float
    best_cv: float
    gain: float
    ci_low: float
    ci_high: float
    chosen: bool
    rounds: int
    baseline_point: Point = field(default_factory=dict)
    comparisons: tuple[Comparison, ...] = ()
    note: str | None = None  # why nothing could be chosen, beyond "no gain"
    at_least: bool = False
    """A baseline sample was a transient (`Sample.ceiling`): gain and interval are taken
    against the baseline's ceilings, a lower bound of the gain at steady state."""
    rechecks: tuple[Recheck, ...] = ()

    @property
    def recommended(self) -> Point:
        """The settings to recommend: the best candidate if chosen, else the baseline."""
        return self.best_point if self.chosen else self.baseline_point


UNDECIDED_ABOVE = 0.05
"""A candidate measuring this much above the baseline whose interval still reaches below 1
is worth another round: with three rounds a noisy baseline (cv 8 %, the default readahead of
one reader on the lab's striped array) leaves Welch's t two degrees of freedom, and a steady
x1.30 gain was refused (interval 0.91-1.9). Below it (a flat landscape's 1-3 % differences)
more rounds would cost time to confirm what is not worth a change."""


AHEAD_SHARE = 0.10
"""A window that closed with more than this share of its reader's bytes still read ahead is
a transient: crediting or not crediting those bytes moves the figure by more than the 10 % a
claim is held to when re-measured (benchmarks/claims.py's WITHIN)."""


def transient_ceiling(
    score: float, fio_bytes: int, device_bytes: int, ahead_bytes: int
) -> float | None:
    """The ceiling of a buffered sequential reader's `score` when its window was a transient:
    the score with the bytes the device read beyond fio's, up to what the streams may hold read
    ahead (`ahead_bytes`, steady.in_flight_bytes), credited to it; None when those are at most
    AHEAD_SHARE of fio's bytes (a steady window) or nothing was read ahead.

    At steady state a sequential reader consumes every byte read ahead of it (more would be
    flagged as readahead beyond what fio read), so the device's rate bounds its figure.
    """
    if fio_bytes <= 0 or ahead_bytes <= 0:
        return None
    ahead = min(max(device_bytes - fio_bytes, 0), ahead_bytes)
    if ahead <= AHEAD_SHARE * fio_bytes:
        return None
    return score * (fio_bytes + ahead) / fio_bytes


OUTSIDE_P = 0.001
"""How unlikely ordinary scatter must make a figure before it is measured again: it lies
beyond its point's other figures by more than the two-sided (1 - OUTSIDE_P) quantile of
Student's t times the noise (the confirmation's pooled noise without that figure, on its
degrees of freedom; the search's baseline cv or NOISE_FLOOR when larger). A fixed three
standard deviations re-measured a figure in 26 % of simulated confirmations of 2 % noise (three
figures per point estimate the noise loosely), and a re-measure that replaces an ordinary
extreme narrows the interval on no evidence: false gains rose from 3.5 to 4.5 % (5 % noise, up
to six rounds). With t: a re-measure in 1.4 % of confirmations, false gains as without any
(3.5 %). A collapsed round (1.4 against 477.8 Mbit/s, a factor of 340) is beyond any such
margin."""


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


def ranking_low(
    baseline: Sequence[float], candidate: Sequence[float], level: float = 0.95
) -> float:
    """The lower bound of candidate/baseline that passing candidates are ranked by: Welch's
    standard error with the conservative degrees of freedom, the smaller sample's less one.

    Welch-Satterthwaite's degrees of freedom grow with the candidate's own variance, so its
    lower bound is not monotone in it: on wan-long a candidate whose rounds were 478.2, 478.1
    and 477.1 Mbit/s got two degrees of freedom (the 2.4-2.6 Mbit/s baseline's) and a lower
    bound of x154, one with a stalled round (477.4, 446.9, 477.8) four and x160, so the
    stalled one ranked safer and, being simpler, was recommended: 449 Mbit/s re-measured where
    the steady one gave 478. With fixed degrees of freedom more scatter always ranks lower.
    Whether a candidate passes is still `gain_interval`'s."""
    if len(baseline) < 2 or len(candidate) < 2:
        raise ValueError("a bound needs at least two samples on each side")
    lb, lc = _logs(baseline), _logs(candidate)
    diff = statistics.fmean(lc) - statistics.fmean(lb)
    se = math.sqrt(statistics.variance(lb) / len(lb) + statistics.variance(lc) / len(lc))
    t = float(stats.t.ppf(1 - (1 - level) / 2, min(len(lb), len(lc)) - 1))
    return math.exp(diff - t * se)


def confirm(
    measure: Measure,
    baseline: Point,
    candidates: Sequence[Point],
    rounds: int = 3,
    level: float = 0.95,
    simpler_within: float = 0.0,
    p99_rise: float | None = None,
    max_rounds: int | None = None,
    undecided_above: float = UNDECIDED_ABOVE,
    extra_until: float | None = None,
    noise: float = NOISE_FLOOR,
) -> Confirmation:
    """Measure baseline and candidates interleaved `rounds` times and pick a winner, or none.

    `measure(point)` runs one trial and returns its score (higher is better: MB/s, IOPS) or a
    Sample with its p99 and flag. A candidate passes when its interval's lower bound exceeds
    1.0, none of its samples is flagged and, with `p99_rise`, its mean p99 is at most
    (1 + p99_rise) times the baseline's. The safest of those has the highest lower bound; the
    winner is the one changing the fewest settings among the passing candidates whose mean is
    at least (1 - `simpler_within`) of the safest's, the highest lower bound breaking ties
    (the safest and the ties by `ranking_low`, monotone in a candidate's scatter).
    With none passing, the best lower bound is reported and nothing is chosen; a flagged
    baseline sample chooses nothing either. Candidates equal to the baseline or to each other
    are measured once.

    Up to `max_rounds` (default: `rounds`), one more round is measured while the answer is
    undecided: nothing passed, yet a candidate nothing refused measures at least
    (1 + `undecided_above`) times the baseline (`_undecided`). With `extra_until` (a
    time.monotonic() deadline), such a round starts only if, as long as the last one took, it
    would end by then: a tune promised to end in time (the main job's three minutes) stops
    with the rounds it has.

    After the first `rounds` and after every further round, each figure outside its point's
    others by more than ordinary scatter allows (`outside_margin`: `noise`, the search's, or
    the confirmation's own when larger) is measured once more (the module's docstring;
    `Confirmation.rechecks`), under the same deadline as a further round.
    """
    if rounds < 2:
        raise ValueError("confirmation needs at least two rounds to estimate the noise")
    unique: list[Point] = []
    seen = {point_key(baseline)}
    for point in candidates:
        if point_key(point) not in seen:
            seen.add(point_key(point))
            unique.append(point)
    base_samples: list[Sample] = []
    cand_samples: list[list[Sample]] = [[] for _ in unique]
    took = 0.0
    for _ in range(rounds):
        took = _round(measure, baseline, unique, base_samples, cand_samples)
    trial_s = took / (1 + len(unique))
    points = [dict(baseline), *unique]
    every = [base_samples, *cand_samples]
    noise = max(noise, NOISE_FLOOR)
    rechecks: list[Recheck] = []
    checked: set[tuple[int, int]] = set()
    rechecks += _recheck(measure, points, every, checked, noise, trial_s, extra_until)
    outcome = _outcome(baseline, unique, base_samples, cand_samples, level, simpler_within,
                       p99_rise)  # fmt: skip
    while outcome.rounds < (max_rounds or rounds) and _undecided(outcome, undecided_above):
        if extra_until is not None and time.monotonic() + took > extra_until:
            break
        took = _round(measure, baseline, unique, base_samples, cand_samples)
        trial_s = took / (1 + len(unique))
        rechecks += _recheck(measure, points, every, checked, noise, trial_s, extra_until)
        outcome = _outcome(baseline, unique, base_samples, cand_samples, level, simpler_within,
                           p99_rise)  # fmt: skip
    return replace(outcome, rechecks=tuple(rechecks))


def pooled_noise(every: Sequence[Sequence[Sample]], leave: tuple[int, int]) -> tuple[float, int]:
    """The confirmation's own noise without one figure, and its degrees of freedom: the pooled
    standard deviation of the log figures about their points' means, every point's unflagged
    figures but `leave` (point index, round). Left out, a collapsed figure cannot widen the
    margin it is judged by; pooled over every point, the estimate is steadier than any one
    point's three figures. (0.0, 0) with no degree of freedom."""
    squares, freedom = 0.0, 0
    for index, samples in enumerate(every):
        logs = [math.log(max(s.score, 1e-9)) for at, s in enumerate(samples)
                if s.flag is None and (index, at) != leave]  # fmt: skip
        if len(logs) >= 2:
            mean = statistics.fmean(logs)
            squares += sum((x - mean) ** 2 for x in logs)
            freedom += len(logs) - 1
    return (math.sqrt(squares / freedom), freedom) if freedom else (0.0, 0)


def outside_margin(noise: float, pooled: tuple[float, int]) -> float:
    """How far beyond its others (on log values) a figure must lie to be measured again:
    Student's t at OUTSIDE_P on the pooled noise's degrees of freedom times the larger of
    that noise and `noise` (a normal quantile without degrees of freedom)."""
    spread, freedom = pooled
    quantile = (
        stats.t.ppf(1 - OUTSIDE_P / 2, freedom) if freedom else stats.norm.ppf(1 - OUTSIDE_P / 2)
    )
    return float(quantile) * max(noise, spread)


def outside(score: float, others: Sequence[float], margin: float) -> bool:
    """Whether `score` lies beyond the least or the most of `others` by more than `margin`
    (a share, on log values: as far below as above); False with fewer than two others."""
    if len(others) < 2:
        return False
    low, high = math.log(max(min(others), 1e-9)), math.log(max(max(others), 1e-9))
    value = math.log(max(score, 1e-9))
    return value < low - margin or value > high + margin


def _recheck(
    measure: Measure,
    points: Sequence[Point],
    every: Sequence[list[Sample]],
    checked: set[tuple[int, int]],
    noise: float,
    trial_s: float,
    until: float | None,
) -> list[Recheck]:
    """Each figure not yet judged that lies outside its point's others by more than
    `outside_margin` (`outside`), measured once more; the samples are updated in place (the
    module's docstring). A re-measure starts only when, as long as a trial took
    (`trial_s`), it ends by `until`. Each figure is judged once."""
    done = []
    for index, (point, samples) in enumerate(zip(points, every, strict=True)):
        for at, sample in enumerate(samples):
            if (index, at) in checked:
                continue
            others = [s.score for j, s in enumerate(samples) if j != at and s.flag is None]
            margin = outside_margin(noise, pooled_noise(every, (index, at)))
            # A transient baseline's figure is already replaced by its ceiling and the claim
            # made a lower bound: another window of the same transient would add nothing.
            transient = sample.ceiling is not None
            if sample.flag is not None or transient or not outside(sample.score, others, margin):
                checked.add((index, at))
                continue
            if until is not None and time.monotonic() + trial_s > until:
                continue  # judged again after a further round, if one runs
            checked.add((index, at))
            again = _sample(measure(point))
            back = again.flag is not None or not outside(again.score, others, margin)
            counted, dropped = (again, sample) if back else (sample, again)
            samples[at] = counted
            done.append(Recheck(dict(point), at + 1, sample.score, again.score,
                                (min(others), max(others)), counted.score,
                                dropped.trial))  # fmt: skip
    return done


def _round(
    measure: Measure,
    baseline: Point,
    candidates: Sequence[Point],
    base_samples: list[Sample],
    cand_samples: list[list[Sample]],
) -> float:
    """One round: the baseline, then every candidate, each measured once; its seconds."""
    started = time.monotonic()
    base_samples.append(_sample(measure(baseline)))
    for samples, point in zip(cand_samples, candidates, strict=True):
        samples.append(_sample(measure(point)))
    return time.monotonic() - started


def _undecided(outcome: Confirmation, above: float) -> bool:
    """True when nothing passed but a candidate nothing refused measures more than `above`
    over the baseline: more rounds may decide it."""
    if outcome.chosen or outcome.note is not None:
        return False
    return any(c.refused is None and c.gain >= 1 + above and c.ci_low <= 1.0
               for c in outcome.comparisons)  # fmt: skip


def _outcome(
    baseline: Point,
    unique: Sequence[Point],
    base_samples: list[Sample],
    cand_samples: list[list[Sample]],
    level: float,
    simpler_within: float,
    p99_rise: float | None,
) -> Confirmation:
    """The confirmation the samples so far give."""
    rounds = len(base_samples)
    base_scores = [s.score for s in base_samples]
    # A transient baseline's figure would flatter every gain over it: its ceiling is the bar.
    at_least = any(s.ceiling is not None for s in base_samples)
    bars = [s.ceiling if s.ceiling is not None else s.score for s in base_samples]
    bar_mean = statistics.fmean(bars)
    base_mean = statistics.fmean(base_scores)
    base_p99 = _mean_p99(base_samples)
    # Bonferroni: with k candidates each interval is at 1 - (1 - level) / k, so the chance that
    # any useless candidate looks significant stays at most 1 - level.
    each = 1 - (1 - level) / max(len(unique), 1)
    comparisons = []
    for point, samples in zip(unique, cand_samples, strict=True):
        scores = [s.score for s in samples]
        low, high = gain_interval(bars, scores, each)
        mean = statistics.fmean(scores)
        gain = mean / bar_mean if bar_mean > 0 else math.inf
        refused = _refusal(samples, base_p99, p99_rise)
        comparisons.append(Comparison(point, mean, cv_of(scores), gain, low, high,
                                      tuple(scores), refused,
                                      ranking_low(bars, scores, each)))  # fmt: skip
    base_cv = cv_of(base_scores)
    flagged = next((s.flag for s in base_samples if s.flag), None)
    note = (
        f"a baseline measurement was flagged ({flagged}): nothing to compare with"
        if flagged
        else None
    )
    if not comparisons:
        return Confirmation(
            dict(baseline), base_mean, base_cv, base_mean, base_cv, 1.0, 1.0, 1.0,
            chosen=False, rounds=rounds, baseline_point=dict(baseline), note=note,
            at_least=at_least,
        )  # fmt: skip
    best = _winner(comparisons, baseline, simpler_within)
    return Confirmation(
        dict(best.point), base_mean, base_cv, best.score, best.cv, best.gain,
        best.ci_low, best.ci_high, chosen=best.passed and note is None, rounds=rounds,
        baseline_point=dict(baseline), comparisons=tuple(comparisons), note=note,
        at_least=at_least,
    )  # fmt: skip


def _sample(measured: float | Sample) -> Sample:
    return measured if isinstance(measured, Sample) else Sample(float(measured))


def _mean_p99(samples: Sequence[Sample]) -> float | None:
    known = [s.p99_us for s in samples if s.p99_us is not None]
    return statistics.fmean(known) if known else None


def _refusal(samples: Sequence[Sample], base_p99: float | None, rise: float | None) -> str | None:
    """Why a candidate cannot pass whatever its interval: a flagged sample, or a p99 latency
    that rose by more than `rise` over the baseline's."""
    flagged = next((s.flag for s in samples if s.flag), None)
    if flagged:
        return f"a confirmation trial was flagged: {flagged}"
    p99 = _mean_p99(samples)
    if rise is not None and base_p99 and p99 is not None and p99 > base_p99 * (1 + rise):
        return f"p99 latency rose from {base_p99:.0f} to {p99:.0f} µs"
    return None


def _winner(comparisons: list[Comparison], baseline: Point, simpler_within: float) -> Comparison:
    """The comparison to report: see `confirm`."""
    passed = [c for c in comparisons if c.passed]
    if not passed:
        eligible = [c for c in comparisons if c.refused is None] or comparisons
        return max(eligible, key=lambda c: c.ci_low)
    safest = max(passed, key=lambda c: c.rank_low)
    close = [c for c in passed if c.score >= safest.score * (1.0 - simpler_within)]
    return min(close, key=lambda c: (changes_from(c.point, baseline), -c.rank_low))
