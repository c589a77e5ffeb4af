"""A baseline that did not settle within the length the tune chose is measured longer, and
every later trial with it; the tune refuses only when the longest window does not settle.

The trials are synthetic (tests/search/synthetic.py's landscape) and instant; what is under
test is the search loop: the lengths it asks for and what it makes of a trending baseline.
"""

from __future__ import annotations

import pytest

from tests.search.synthetic import CURRENT, RECOMMENDED, SPACE, true_mbps
from tuner.search.fidelity import TrialLength
from tuner.search.space import Point
from tuner.trials.steady import MAX_CEILING_S, unsettled, window_bounds
from tuner.trials.trial import TrialResult
from tuner.tune.guards import Unmeasurable
from tuner.tune.session import PointTrial, Search, SizedRunner, TuneConfig


def _runner(settles_after_s: float, told: list[TrialLength]) -> SizedRunner:
    """Trials whose throughput trends until their window may reach `settles_after_s`: fio's
    steady-state test passes only in a window whose ceiling reaches that far."""

    def run(point: Point, length: TrialLength) -> PointTrial:
        told.append(length)
        bounds = window_bounds(length.runtime_s, length.ramp_s, ceiling_s=length.ceiling_s)
        mbps = true_mbps(point)
        settled = bounds.ceiling_s >= settles_after_s
        flags = () if settled else (unsettled(bounds, bounds.ceiling_s),)
        seconds = bounds.ceiling_s
        result = TrialResult(mbps, mbps * 64, 1000.0, 1, 1, seconds, flags=flags,
                             measured_s=seconds, settled=settled, length=bounds)  # fmt: skip
        return PointTrial(result, dict(point))

    return run


def _never(point: Point) -> PointTrial:
    raise AssertionError("a search given a sized runner runs every trial through it")


CONFIG = TuneConfig(budget=6, seed=1, runtime_s=3.0, ramp_s=0.0)


def test_a_slowly_settling_baseline_is_measured_longer_and_so_is_every_trial_after() -> None:
    told: list[TrialLength] = []
    result = Search("/dev/loop0", "concurrent-streams", SPACE, CONFIG, _never,
                    sized=_runner(12.0, told)).run(dict(CURRENT), [RECOMMENDED])  # fmt: skip
    # 3 s floor: ceiling 8 s, trending; 8 s floor: ceiling 16 s, settled.
    assert [t.runtime_s for t in told[:2]] == [3.0, 8.0]
    assert all(t.runtime_s >= 8.0 for t in told[1:])
    first = result.trials[0]
    assert first.phase == "baseline" and first.set_aside
    assert not any(t.set_aside for t in result.trials[1:])
    assert result.best_mbps > 0


def test_a_baseline_that_never_settles_is_refused_at_the_longest_window() -> None:
    told: list[TrialLength] = []
    search = Search("/dev/loop0", "concurrent-streams", SPACE, CONFIG, _never,
                    sized=_runner(10 * MAX_CEILING_S, told))  # fmt: skip
    with pytest.raises(Unmeasurable, match="cannot be measured honestly"):
        search.run(dict(CURRENT), [RECOMMENDED])
    # 3 -> 8 -> 16 s floors (ceilings 8, 16, 30), then the longest window: no further.
    assert [t.runtime_s for t in told] == [3.0, 8.0, 16.0]
