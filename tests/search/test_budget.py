"""The time plan: confirmation's long trials reserved first, the search gets the rest, and what
gives way when the bound is tight comes in the documented order."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuner.search.budget import MARGIN, plan_budget, recosted, shortened
from tuner.search.fidelity import Fidelity, TrialLength

SCREEN = TrialLength(1.0, 3.0)
DECIDE = TrialLength(2.0, 6.0)
TWO = Fidelity(SCREEN, DECIDE)


def plan(total: float | None, fidelity: Fidelity = TWO, **kw: int | float):  # type: ignore[no-untyped-def]
    args = {"budget": 16, "points": 4, "rounds": 3, "baseline_left": 3, "min_search": 8,
            "overhead_s": 1.0, **kw}  # fmt: skip
    return plan_budget(total, fidelity, **args)  # type: ignore[arg-type]


def used(p, baseline_left: int = 3, spent: float = 0.0) -> float:  # type: ignore[no-untyped-def]
    """The seconds the plan's trials take: baseline, search, confirmation's first rounds."""
    return (spent + baseline_left * p.screen_cost_s + p.search_trials * p.screen_cost_s
            + p.confirm_s())  # fmt: skip


def test_without_a_bound_the_budget_decides_and_nothing_gives_way() -> None:
    p = plan(None)
    assert (p.search_trials, p.points, p.decide, p.gave_way) == (16, 4, DECIDE, "")
    assert math.isinf(p.search_end_s) and math.isinf(p.end_s)
    assert p.decide_cost_s == 9.0 and p.screen_cost_s == 5.0


def test_a_roomy_bound_keeps_every_point_at_the_decide_length() -> None:
    # 3 baseline x 5 s + 4 points x 3 rounds x 9 s = 123 s; 300 s leaves 162 s of search.
    p = plan(300)
    assert (p.points, p.decide, p.gave_way) == (4, DECIDE, "")
    assert p.search_trials == 16  # the budget, not the time, bounds it
    assert p.search_end_s == pytest.approx(300 * (1 - MARGIN) - 108)
    assert used(p) <= 300 * (1 - MARGIN)


def test_the_runner_up_gives_way_before_the_decide_length() -> None:
    # The main job's 165 s: 4 points leave 157 - 15 - 108 = 34 s, under 8 search trials;
    # 3 points leave 61 s, 12 trials.
    p = plan(165)
    assert (p.points, p.decide) == (3, DECIDE)
    assert p.search_trials == 12
    assert "3 points, not 4" in p.gave_way
    assert used(p) <= 165 * (1 - MARGIN)


def test_then_the_decide_length_shortens_towards_the_screen_length() -> None:
    # 100 s: two points at 9 s cost 54 s, leaving 26 s, under 8 search trials of 5 s.
    p = plan(100)
    assert p.points == 2
    assert SCREEN.seconds <= p.decide.seconds < DECIDE.seconds
    assert p.decide.ramp_s / p.decide.runtime_s == pytest.approx(DECIDE.ramp_s / DECIDE.runtime_s,
                                                                 rel=0.1)  # fmt: skip
    assert p.search_trials == 8
    assert "not 2 s + 6 s" in p.gave_way
    assert used(p) <= 100 * (1 - MARGIN) + 1


def test_a_bound_below_the_least_tune_gets_the_least_tune_and_says_so() -> None:
    p = plan(1)
    assert (p.points, p.decide, p.search_trials, p.fits) == (2, SCREEN, 1, False)
    assert "longer than the bound: about 50 s" in p.gave_way  # (3 + 1 + 6) trials of 5 s


def test_the_plan_counts_what_was_spent_and_the_baseline_measured() -> None:
    fresh = plan(165)
    later = plan(165, baseline_left=0, spent_s=20.0)
    assert later.search_end_s == fresh.search_end_s  # the same end, counted from the start
    assert later.search_trials == fresh.search_trials - 1  # 20 s spent, not 15: one trial less


def test_one_fidelity_never_shortens_a_decide_length_it_does_not_have() -> None:
    one = Fidelity(SCREEN, SCREEN)
    p = plan(80, one)
    assert p.decide == SCREEN and p.decide_cost_s == p.screen_cost_s


@given(total=st.floats(20, 2000), overhead=st.floats(0, 5), budget=st.integers(1, 60),
       points=st.integers(2, 5), least=st.integers(1, 20))  # fmt: skip
def test_a_plan_that_fits_ends_within_the_bound(
    total: float, overhead: float, budget: int, points: int, least: int
) -> None:
    p = plan(total, budget=budget, points=points, min_search=least, overhead_s=overhead)
    assert 2 <= p.points <= points and 1 <= p.search_trials <= budget
    assert SCREEN.seconds <= p.decide.seconds <= DECIDE.seconds + 0.1
    if p.fits:
        assert used(p) <= total * (1 - MARGIN) + 1e-6 + 0.1 * 6 * 2  # rounding of the length


def test_shortened_keeps_the_shape_and_never_lengthens() -> None:
    assert shortened(DECIDE, 20) == DECIDE
    half = shortened(DECIDE, 4.0)
    assert (half.ramp_s, half.runtime_s) == (1.0, 3.0)
    assert "shortened" in half.why


def test_recosted_keeps_the_shape_and_moves_the_searchs_end() -> None:
    """Trials costing 2 s beyond their length, not 1: the same 3 points at the same length,
    the search ending 3 x 3 s earlier to keep their reserve."""
    p = plan(165)
    dearer = recosted(p, SCREEN, 2.0)
    assert (dearer.points, dearer.decide, dearer.rounds) == (p.points, p.decide, p.rounds)
    assert (dearer.screen_cost_s, dearer.decide_cost_s) == (6.0, 10.0)
    assert dearer.search_end_s == pytest.approx(p.search_end_s - 9.0)
    assert math.isinf(recosted(plan(None), SCREEN, 2.0).search_end_s)
