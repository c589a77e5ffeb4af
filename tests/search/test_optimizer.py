"""The optimisers on a synthetic landscape with a known optimum, and the stop rule."""

from __future__ import annotations

import math
import random

import pytest

from tests.search.synthetic import (
    CURRENT,
    NR,
    PEAK_MBPS,
    RA,
    RECOMMENDED,
    SCHED,
    SPACE,
    noisy_trial,
    true_mbps,
)
from tuner.search.optimizer import (
    RandomOptimizer,
    SkoptOptimizer,
    SpaceExhausted,
    Step,
    should_stop,
    throughput_value,
)
from tuner.search.replay import run_search, trials_to_reach
from tuner.search.space import Dimension, SearchSpace, point_key

SEEDS = range(20)
BUDGET = 15


@pytest.fixture(scope="module")
def runs() -> dict[str, list[tuple[int | None, float]]]:
    """Per optimiser and seed: the trials it took to try a point worth 95% of the optimum
    (None: not within the budget), and the best true fraction of the optimum it tried.

    Both start as a tune does: the current settings measured three times and told (the
    first of the 15 trials), then a rule's recommendation.
    """
    out: dict[str, list[tuple[int | None, float]]] = {"skopt": [], "random": []}
    for seed in SEEDS:
        for name, cls in (("skopt", SkoptOptimizer), ("random", RandomOptimizer)):
            optimizer = cls(SPACE, seed, [CURRENT, RECOMMENDED])
            trial = noisy_trial(random.Random(seed))
            asked = run_search(optimizer, trial, BUDGET, baseline=SPACE.snap(CURRENT))
            reached = trials_to_reach(asked, true_mbps, 0.95 * PEAK_MBPS)
            out[name].append((reached, max(map(true_mbps, asked)) / PEAK_MBPS))
    for name, rows in out.items():
        hits = sum(r is not None for r, _ in rows)
        print(f"{name}: {hits}/{len(rows)} within {BUDGET} trials")
    return out


def test_skopt_reaches_95_percent_within_15_trials_in_18_of_20_seeds(
    runs: dict[str, list[tuple[int | None, float]]],
) -> None:
    assert sum(r is not None for r, _ in runs["skopt"]) >= 18


def test_skopt_beats_random_search_on_average(
    runs: dict[str, list[tuple[int | None, float]]],
) -> None:
    def mean_best(rows: list[tuple[int | None, float]]) -> float:
        return sum(best for _, best in rows) / len(rows)

    def hits(rows: list[tuple[int | None, float]]) -> int:
        return sum(r is not None for r, _ in rows)

    assert mean_best(runs["skopt"]) > mean_best(runs["random"])
    assert hits(runs["skopt"]) > hits(runs["random"])


@pytest.mark.parametrize("cls", [SkoptOptimizer, RandomOptimizer])
def test_initial_points_come_first_in_order_completed_from_the_first(cls: type) -> None:
    recommendation = {RA: 4096}  # a rule's recommendation names only what it changes
    other = {RA: 8192, NR: 32, SCHED: "mq-deadline"}
    optimizer = cls(SPACE, 1, [CURRENT, recommendation, CURRENT, other])
    asked = [optimizer.ask() for _ in range(3)]
    assert asked == [CURRENT, {**CURRENT, RA: 4096}, other]


@pytest.mark.parametrize("cls", [SkoptOptimizer, RandomOptimizer])
def test_no_point_is_asked_twice_until_the_space_runs_out(cls: type) -> None:
    space = SearchSpace(
        (
            Dimension("block.nr_requests", "loop0", "int", 4, 16, log=True, step=4),
            Dimension("block.scheduler", "loop0", "categorical", choices=("none", "bfq")),
        )
    )
    optimizer = cls(space, 2, [{("block.nr_requests", "loop0"): 8, SCHED: "bfq"}])
    # Measured before the search (the baseline): never asked again.
    optimizer.tell({("block.nr_requests", "loop0"): 4, SCHED: "none"}, 1.0)
    seen = set()
    for _ in range(7):  # 4, 8, 12 or 16 with either scheduler; one already measured
        point = optimizer.ask()
        assert point_key(point) not in seen
        seen.add(point_key(point))
        optimizer.tell(point, -float(point[("block.nr_requests", "loop0")]))
    with pytest.raises(SpaceExhausted):
        optimizer.ask()
    best, value = optimizer.best()
    assert (best[("block.nr_requests", "loop0")], value) == (16, -16.0)


def test_expected_improvement_is_none_before_the_model_then_in_log_units() -> None:
    optimizer = SkoptOptimizer(SPACE, 3, [CURRENT], n_random=3)
    trial = noisy_trial(random.Random(3))
    eis = []
    for _ in range(8):
        eis.append(optimizer.expected_improvement())
        point = optimizer.ask()
        optimizer.tell(point, throughput_value(trial(point)))
    assert eis[:4] == [None] * 4
    assert all(ei is not None and 0 <= ei < 5 for ei in eis[4:])
    assert RandomOptimizer(SPACE, 3).expected_improvement() is None


def test_the_stop_rule_stops_on_noise_when_nothing_is_left_to_gain() -> None:
    # A flat landscape: every setting gives 200 MB/s with 3% noise.
    rng = random.Random(4)
    optimizer = SkoptOptimizer(SPACE, 4, [CURRENT], n_random=3)
    history: list[Step] = []
    reason = None
    while reason is None:
        ei = optimizer.expected_improvement()
        point = optimizer.ask()
        value = throughput_value(200.0 * math.exp(rng.gauss(0, 0.03)))
        optimizer.tell(point, value)
        history.append(Step(point, value, ei))
        reason = should_stop(history, noise_cv=0.03, budget=30)
    assert "below the noise" in reason
    assert len(history) < 15


def test_the_stop_rule_on_budget_time_and_interrupted_noise() -> None:
    def steps(*eis: float | None) -> list[Step]:
        return [Step({}, 0.0, ei) for ei in eis]

    assert should_stop(steps(None, None), 0.02, budget=2) == "trial budget spent (2 of 2)"
    assert "time budget" in (should_stop(steps(None), 0.02, deadline=10.0, now=11.0) or "")
    assert should_stop(steps(None), 0.02, deadline=10.0, now=9.0) is None
    # Below the noise three times in a row stops; an interruption starts the count again.
    assert should_stop(steps(None, 0.01, 0.01, 0.01), 0.02) is not None
    assert should_stop(steps(0.01, 0.05, 0.01, 0.01), 0.02) is None
    assert should_stop(steps(0.01, 0.01, 0.01), 0.005) is None
