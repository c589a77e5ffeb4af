"""The slice judge: a candidate's slices against the baseline slices on either side of them.

Slices alternate (baseline, candidate, baseline, candidate, baseline), so each candidate slice
has a baseline just before and just after it; its ratio is its score over the geometric mean
of those two, which cancels a workload that drifts slowly (a database warming its cache, a
backup moving to smaller files). The gain is the geometric mean of the ratios and its interval
Student's t over their logs, paired: the workload's own swings between slices, which are much
larger than a setting's effect on a busy host, fall out of each pair.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuner.online.slices import SliceFigures

TAIL_Z = 3.0
"""How many standard deviations above the 1 % a p99 allows the share of a candidate's requests
above the bound must lie before the slice is stopped: a p99 from a few hundred requests is the
third or fourth slowest, and one stall of the host (its CPUs shared) moves it by half; counted
against the binomial spread, a neutral candidate is stopped about once in a thousand checks."""
T_975 = (
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851,
    2.364624252, 2.306004135, 2.262157163, 2.228138852, 2.200985160, 2.178812830,
    2.160368656, 2.144786688, 2.131449546, 2.119905299, 2.109815578, 2.100922040,
    2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610, 2.063898562,
    2.059538553, 2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456,
)  # fmt: skip
"""Student's t at 0.975 (a 95 % two-sided interval) for 1 to 30 degrees of freedom, scipy's
own figures: the online tune starts on a live host, and importing scipy.stats cost 0.9 s of
CPU there (measured: the first 10 s window of a CPU-bound application fell to x0.813 while the
tune started). Other levels and more freedom load scipy when first asked."""
SIMILAR_REQUESTS = 1.25
"""Without traced latencies, time in queue per request is compared only between slices whose
mean request sizes are within this factor: a larger request takes longer on any device, which
is no harm to the application that asked for fewer of them."""


@dataclass(frozen=True)
class Verdict:
    """What the paired slices say about a candidate: `better` when the interval's low end is
    above 1, `worse` when its high end is below 1, else `undecided`."""

    outcome: str
    gain: float
    low: float
    high: float
    ratios: tuple[float, ...]


def paired_ratios(
    baselines: Sequence[SliceFigures], candidates: Sequence[SliceFigures]
) -> list[float]:
    """Each candidate slice's score over the geometric mean of the baselines around it:
    candidate i lies between baselines i and i+1 (a candidate without its following baseline
    yet is compared with the one before)."""
    ratios = []
    for i, candidate in enumerate(candidates):
        around = [b.score() for b in baselines[i : i + 2]]
        if not around or min(around) <= 0:
            ratios.append(0.0 if candidate.score() <= 0 else math.inf)
            continue
        reference = math.exp(statistics.fmean(math.log(s) for s in around))
        ratios.append(candidate.score() / reference)
    return ratios


def interval(ratios: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(gain, low, high): the geometric mean of the ratios and its paired-t interval.
    With one ratio there is no estimate of the noise: the interval is (0, inf)."""
    logs = [math.log(max(r, 1e-9)) if math.isfinite(r) else math.log(1e9) for r in ratios]
    if not logs:
        return 1.0, 0.0, math.inf
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), 0.0, math.inf
    se = statistics.stdev(logs) / math.sqrt(len(logs))
    t = t_quantile(level, len(logs) - 1)
    return math.exp(mean), math.exp(mean - t * se), math.exp(mean + t * se)


def t_quantile(level: float, freedom: int) -> float:
    """Student's t for a two-sided `level` interval with `freedom` degrees of freedom."""
    if level == 0.95 and 1 <= freedom <= len(T_975):
        return T_975[freedom - 1]
    from scipy import stats  # only here: see T_975

    return float(stats.t.ppf(1 - (1 - level) / 2, freedom))


def verdict(
    baselines: Sequence[SliceFigures], candidates: Sequence[SliceFigures], level: float = 0.95
) -> Verdict:
    """The candidate's gain over the setting in force, from its paired slices."""
    ratios = paired_ratios(baselines, candidates)
    gain, low, high = interval(ratios, level)
    outcome = "better" if low > 1.0 else "worse" if high < 1.0 else "undecided"
    return Verdict(outcome, gain, low, high, tuple(ratios))


def tail_excess(
    candidate: SliceFigures, baselines: Sequence[SliceFigures], bound: float
) -> float | None:
    """The rise of the candidate's p99 over the baselines' in the worst size class where the
    rise is significant, or None: significant when more of its requests lie above
    (1 + bound) x the baselines' p99 than the 1 % a p99 allows, by TAIL_Z binomial standard
    deviations. Classes as in latency_rise."""
    worst = None
    for size, times in candidate.latencies.items():
        before = [b.p99_ms[size] for b in baselines if size in b.p99_ms]
        if not before or len(before) != len(baselines) or size not in candidate.p99_ms:
            continue
        reference = statistics.fmean(before)
        n = len(times)
        above = sum(1 for t in times if t > (1 + bound) * reference)
        if reference > 0 and above > 0.01 * n + TAIL_Z * math.sqrt(0.0099 * n):
            rise = candidate.p99_ms[size] / reference - 1.0
            worst = rise if worst is None else max(worst, rise)
    return worst


def latency_rise(
    candidate: SliceFigures | Mapping[int, float], baselines: Sequence[SliceFigures]
) -> float | None:
    """How much the candidate's p99 latency rose over the baselines' (0.25: 25 % higher), the
    worst size class both have; None when they share no class with enough requests.

    Requests are compared by size class: a setting that makes requests larger (readahead,
    max_sectors_kb) makes each take longer, and that is not what the bound is about."""
    p99s = candidate.p99_ms if isinstance(candidate, SliceFigures) else candidate
    rises = []
    for size, ms in p99s.items():
        before = [b.p99_ms[size] for b in baselines if size in b.p99_ms]
        if before and len(before) == len(baselines) and statistics.fmean(before) > 0:
            rises.append(ms / statistics.fmean(before) - 1.0)
    return max(rises) if rises else None


def queue_rise(candidate: SliceFigures, baselines: Sequence[SliceFigures]) -> float | None:
    """The rise of time in queue per request (diskstats) over the baselines', where no traced
    latency is there to compare and the requests are of similar size; else None."""
    if not baselines or candidate.iops <= 0 or any(b.iops <= 0 for b in baselines):
        return None
    size = candidate.mbps / candidate.iops
    sizes = [b.mbps / b.iops for b in baselines]
    if any(not (1 / SIMILAR_REQUESTS <= size / s <= SIMILAR_REQUESTS) for s in sizes if s > 0):
        return None
    before = statistics.fmean(b.queue_ms for b in baselines)
    return candidate.queue_ms / before - 1.0 if before > 0 else None


def harm(
    candidate: SliceFigures, baselines: Sequence[SliceFigures], bound: float, traced: bool
) -> str | None:
    """Why the candidate's slice broke the latency bound against the baselines, or None.
    `traced`: per-request latencies are sampled; without them, time in queue per request."""
    rise = tail_excess(candidate, baselines, bound) if traced else None
    what = "p99 latency"
    if not traced:
        rise, what = queue_rise(candidate, baselines), "time in queue per request"
    if rise is not None and rise > bound:
        return f"{what} rose {rise * 100:.0f} % over the baseline (bound {bound * 100:.0f} %)"
    return None
