"""A tune that meets a fault of its device: the fault ends it, numbered; a slow period neither
sets the baseline nor teaches the search that a good point is bad.

The search runs through the real Tune loop (optimiser, guards, confirmation) over
tests/search/synthetic.py's landscape; only the trial is synthetic (the lab tests in
tests/commands/test_tune_faults.py run the same on a modelled disk).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from tests.search.synthetic import CURRENT, RA, RECOMMENDED, true_mbps
from tests.sysfs_tree import SysTree
from tests.tune.test_guards import tune
from tuner.search.optimizer import SkoptOptimizer
from tuner.search.space import Point
from tuner.trials.faults import IO_ERROR, TrialFault
from tuner.trials.trial import TrialResult
from tuner.tune.session import SLOW_BELOW, PointTrial


def trials(
    slow: frozenset[int] = frozenset(), fault_at: int | None = None, factor: float = 4
) -> Callable[[Point], PointTrial]:
    """The noise-free landscape; the calls numbered in `slow` run slower (the lab's
    `slow` fault, `factor` times slower), the call `fault_at` meets an I/O error."""
    calls = [0]

    def run(point: Point) -> PointTrial:
        calls[0] += 1
        if calls[0] == fault_at:
            detail = "fio: io_u error on file /dev/loop0: Input/output error: read offset=0"
            raise TrialFault("loop0", IO_ERROR, detail)
        mbps = true_mbps(point) / (factor if calls[0] in slow else 1)
        return PointTrial(TrialResult(mbps, mbps * 64, 1000.0, 1, 1, 0.1), dict(point))

    return run


def test_a_fault_ends_the_tune_naming_the_device_and_the_trial(tree: SysTree) -> None:
    session = tune(tree, trials(fault_at=6))
    with pytest.raises(TrialFault) as err:
        session.run(dict(CURRENT), [RECOMMENDED])
    message = str(err.value.reported("tune", "settings restored"))
    assert message.startswith("tune: loop0: I/O error during trial 6 (search) (fio: io_u error")
    assert message.endswith("; settings restored") and "\n" not in message
    assert err.value.exit_code == 1
    assert len(session.records) == 5, "nothing measured after the fault"


def test_a_slow_period_neither_sets_the_baseline_nor_poisons_a_point(
    tree: SysTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Call 2 (a baseline repeat) and call 5 (the rule's point: calls 1-3 are the baseline, 4
    its slow repeat measured again) run 4 times slower. The baseline the optimiser hears is
    its honest repeats; the rule's point, 3.9 x the baseline, measured 0.97 x in the slow
    period: not far enough below to be re-run, so the search hears a poor figure, but the
    rule's point still reaches confirmation (_with_rules), whose rounds measure it honestly."""
    told: list[tuple[Point, float]] = []
    real_tell = SkoptOptimizer.tell

    def spy(self: SkoptOptimizer, point: Point, value: float) -> None:
        told.append((dict(point), value))
        real_tell(self, point, value)

    monkeypatch.setattr(SkoptOptimizer, "tell", spy)
    slow = trials(slow=frozenset({2, 5}))
    result = tune(tree, slow, budget=6).run(dict(CURRENT), [RECOMMENDED])
    base = true_mbps(CURRENT)
    assert [t.mbps for t in result.trials[:4]] == pytest.approx([base, base / 4, base, base])
    assert [t.phase for t in result.trials[:4]] == ["baseline"] * 4
    assert [v for p, v in told[:3]] == [pytest.approx(-math.log(base))] * 3
    rule = {**CURRENT, **RECOMMENDED}
    assert result.trials[4].settings == rule and result.trials[4].phase == "initial"
    confirmed = [t.mbps for t in result.trials if t.phase == "confirm" and t.settings == rule]
    assert confirmed == pytest.approx([true_mbps(rule)] * len(confirmed))
    assert result.chosen and result.gain > 2.5


def test_a_slow_trial_far_below_the_baseline_is_measured_again(tree: SysTree) -> None:
    """A slow period of factor 10 (the lab's `slow` takes 1-1000) over the rule's point: below
    half the baseline, so measured again, and the search hears the second, honest figure."""
    result = tune(tree, trials(slow=frozenset({4}), factor=10), budget=4).run(
        dict(CURRENT), [RECOMMENDED]
    )
    rule = {**CURRENT, **RECOMMENDED}
    honest = true_mbps(rule)
    assert [(t.phase, t.settings, t.mbps) for t in result.trials[3:5]] == [
        ("initial", rule, pytest.approx(honest / 10)),
        ("again", rule, pytest.approx(honest)),
    ]
    assert honest / 10 < SLOW_BELOW * true_mbps(CURRENT)


def test_a_point_that_is_really_bad_is_measured_twice_and_stays_bad(tree: SysTree) -> None:
    """No slow period: a point below half the baseline is re-run once and measures the same."""

    def run(point: Point) -> PointTrial:
        mbps = true_mbps(point) * (0.1 if int(point[RA]) == 8192 else 1)
        return PointTrial(TrialResult(mbps, mbps * 64, 1000.0, 1, 1, 0.1), dict(point))

    result = tune(tree, run, budget=4).run(dict(CURRENT), [RECOMMENDED])
    bad = [t for t in result.trials if int(t.settings[RA]) == 8192 and t.phase != "confirm"]
    assert len(bad) == 2 and bad[0].mbps == bad[1].mbps
    assert int(result.best_settings[RA]) != 8192


def test_a_slow_baseline_measured_again_keeps_the_better_of_its_two_figures(
    tree: SysTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline repeat 4 times slow, measured again 8 times slow: the bar stays at the
    better of the two, since a lower one would flatter every trial compared with it."""
    told: list[float] = []
    real_tell = SkoptOptimizer.tell

    def spy(self: SkoptOptimizer, point: Point, value: float) -> None:
        told.append(value)
        real_tell(self, point, value)

    monkeypatch.setattr(SkoptOptimizer, "tell", spy)
    calls = [0]
    slower = {2: 4.0, 4: 8.0}

    def run(point: Point) -> PointTrial:
        calls[0] += 1
        mbps = true_mbps(point) / slower.get(calls[0], 1.0)
        return PointTrial(TrialResult(mbps, mbps * 64, 1000.0, 1, 1, 0.1), dict(point))

    tune(tree, run, budget=4).run(dict(CURRENT), [RECOMMENDED])
    base = true_mbps(CURRENT)
    assert told[:3] == pytest.approx([-math.log(base), -math.log(base / 4), -math.log(base)])
