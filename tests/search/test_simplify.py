"""Backward elimination: the changes that buy nothing go back, the ones that matter stay."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from functools import partial

from tests.search.synthetic import CURRENT, NR, RA, RECOMMENDED, SCHED, noisy_trial, true_mbps
from tuner.search.optimizer import SkoptOptimizer, throughput_value
from tuner.search.replay import run_search
from tuner.search.simplify import changes_from, simplest
from tuner.search.space import Dimension, Point, SearchSpace

MS = ("block.max_sectors_kb", "loop0")
# The synthetic landscape plus max_sectors_kb, which it ignores: a setting that rides along.
SPACE = SearchSpace(
    (
        Dimension(RA[0], "loop0", "int", 128, 65536, log=True, step=4),
        Dimension(NR[0], "loop0", "int", 4, 1024, log=True),
        Dimension(MS[0], "loop0", "int", 64, 1280, log=True, step=4),
        Dimension(SCHED[0], "loop0", "categorical", choices=("mq-deadline", "none", "kyber")),
    ),
    {"loop0": 128},
)
BASELINE: Point = {**CURRENT, MS: 1280}


def exact(points: Sequence[Point]) -> list[float]:
    """A model that knows the landscape: -log of the true MB/s."""
    return [throughput_value(true_mbps(p)) for p in points]


def test_puts_back_what_costs_nothing_and_keeps_what_matters() -> None:
    best: Point = {RA: 4096, NR: 64, MS: 256, SCHED: "mq-deadline"}
    simple = simplest(best, BASELINE, exact, SPACE, within=0.02)
    # max_sectors_kb costs nothing and nr_requests 64 -> 128 under 1 %: both go back; the
    # scheduler's 2 % and the readahead's factor of 4 stay.
    assert simple == {RA: 4096, NR: 128, MS: 1280, SCHED: "mq-deadline"}
    assert changes_from(simple, BASELINE) == 2
    assert true_mbps(simple) >= math.exp(-0.02) * true_mbps(best)


def test_the_losses_do_not_add_up_past_within() -> None:
    # Each put-back alone costs under 2 %, both together more: only one goes.
    best: Point = {RA: 4096, NR: 64, MS: 1280, SCHED: "mq-deadline"}
    simple = simplest(best, BASELINE, exact, SPACE, within=0.015)
    assert changes_from(simple, BASELINE) == 2
    assert true_mbps(simple) >= math.exp(-0.015) * true_mbps(best)
    assert simplest(best, BASELINE, exact, SPACE, within=0.0) == best


def test_a_put_back_scheduler_none_takes_its_depth_cap() -> None:
    best: Point = {RA: 4096, NR: 512, MS: 1280, SCHED: "kyber"}

    def flat_but_readahead(points: Sequence[Point]) -> list[float]:
        return [-math.log(int(p[RA])) for p in points]

    simple = simplest(best, BASELINE, flat_but_readahead, SPACE, within=0.02)
    assert simple == {RA: 4096, NR: 128, MS: 1280, SCHED: "none"}


def _model(optimizer: SkoptOptimizer, points: Sequence[Point]) -> list[float]:
    return optimizer.predict(points) or []


def test_the_fitted_model_drops_the_setting_the_landscape_ignores() -> None:
    # The real GP after a 15-trial search, over six seeds: max_sectors_kb never mattered and
    # goes back to the baseline's; the readahead that made a factor of four stays, and the
    # point proposed keeps 95 % of the best's true throughput (confirmation checks the rest).
    put_back = 0
    for seed in range(6):
        optimizer = SkoptOptimizer(SPACE, seed, [BASELINE, RECOMMENDED])
        asked = run_search(optimizer, noisy_trial(random.Random(seed)), 15,
                           baseline=SPACE.snap(BASELINE))  # fmt: skip
        best = max(asked, key=true_mbps)
        assert best[MS] != BASELINE[MS]  # the search did move it: there is something to drop
        simple = simplest(best, BASELINE, partial(_model, optimizer), SPACE, within=0.02)
        put_back += simple[MS] == BASELINE[MS]
        assert simple[RA] == best[RA]
        assert true_mbps(simple) >= 0.95 * true_mbps(best)
    assert put_back >= 5
