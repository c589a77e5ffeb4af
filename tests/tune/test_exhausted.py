"""A search space smaller than the budget: the search stops when every point is measured."""

from __future__ import annotations

from tuner.search.fidelity import TrialLength
from tuner.search.space import Dimension, Point, SearchSpace
from tuner.trials.trial import TrialResult
from tuner.tune.session import PointTrial, Search, TuneConfig

SCHED = ("block.scheduler", "loop0")
TWO_POINTS = SearchSpace((Dimension(SCHED[0], "loop0", "categorical", choices=("none", "bfq")),))


def trial(point: Point, length: TrialLength) -> PointTrial:
    mbps = 100.0 if point[SCHED] == "none" else 120.0
    return PointTrial(TrialResult(mbps, mbps * 64, 1000.0, 1, 1, length.seconds), dict(point))


def never(point: Point) -> PointTrial:
    raise AssertionError("a search given a sized runner runs every trial through it")


def test_a_space_of_two_points_under_a_budget_of_ten_ends_the_search_not_the_tune() -> None:
    """unseen seed 40: a transfer tune's space was measured through before its budget ran out,
    and the optimiser's SpaceExhausted ended `iotuner tune` in a traceback."""
    config = TuneConfig(budget=10, seed=1, runtime_s=1.0, ramp_s=0.0)
    search = Search("/dev/loop0", "stream-read", TWO_POINTS, config, never, sized=trial)
    result = search.run({SCHED: "none"}, [])
    assert result.best_settings == {SCHED: "bfq"}
    assert "no unmeasured point" in (result.stop_reason or "")
