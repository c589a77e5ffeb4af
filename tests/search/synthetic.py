"""A synthetic landscape with a known optimum, for the optimisers' tests.

Throughput is a smooth unimodal function of read_ahead_kb and nr_requests (a bell on log
scales, peaking at 4096 KB and 64 requests) times a factor per scheduler with one best choice
(mq-deadline). The sizes follow what streaming reads show: readahead matters most (128 KB gives
a quarter of the peak), the queue depth little, the scheduler a few percent except bfq. Trials
see it through multiplicative noise of 3%, as real trials do.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from tuner.search.space import Dimension, Point, SearchSpace

DEV = "loop0"
RA, NR, SCHED = ("block.read_ahead_kb", DEV), ("block.nr_requests", DEV), ("block.scheduler", DEV)
PEAK_MBPS = 400.0
SCHEDULERS = {"mq-deadline": 1.0, "none": 0.98, "kyber": 0.96, "bfq": 0.85}
RA_WIDTH, NR_WIDTH = 3.0, 8.0  # octaves (standard deviation of the bell)

SPACE = SearchSpace(
    (
        Dimension(RA[0], DEV, "int", 128, 65536, log=True, step=4),
        Dimension(NR[0], DEV, "int", 4, 1024, log=True),
        Dimension(SCHED[0], DEV, "categorical", choices=tuple(SCHEDULERS)),
    ),
    {DEV: 128},
)
CURRENT: Point = {RA: 128, NR: 128, SCHED: "none"}  # a loop device's defaults
# What a rule recommends for streaming reads ("readahead at least 4096 KB"): the other settings
# come from CURRENT. Worth 92% of the optimum: the search still has to refine.
RECOMMENDED: Point = {RA: 8192}


def true_mbps(point: Point) -> float:
    """The noise-free throughput at `point`."""
    ra = math.log2(int(point[RA]) / 4096) / RA_WIDTH
    nr = math.log2(int(point[NR]) / 64) / NR_WIDTH
    return PEAK_MBPS * math.exp(-(ra**2 + nr**2) / 2) * SCHEDULERS[str(point[SCHED])]


def noisy_trial(rng: random.Random, cv: float = 0.03) -> Callable[[Point], float]:
    """measure(point): the true throughput times log-normal noise of coefficient `cv`."""
    return lambda point: true_mbps(point) * math.exp(rng.gauss(0.0, cv))
