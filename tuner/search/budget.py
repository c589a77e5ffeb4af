"""A tune's time, planned: the baseline, the screening search, then confirmation's long trials.

With a time bound (`tune --time T`, the main job's three minutes) the plan reserves
confirmation first, since its figures are the claim, and gives the search what is left: the
search stops when its next trial would eat into the reserve. What does not fit gives way in
this order: the runner-up candidate (each fewer point saves `rounds` long trials), then the
decide length (shortened towards the screen length: the search needs some trials to find
anything), then the search, down to one trial. Without a bound the budget of trials decides
and nothing is cut.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tuner.search.fidelity import Fidelity, TrialLength

OVERHEAD_S = 1.0
"""What a trial costs beyond its length before any was measured: writing and reading back the
settings, dropping caches, fio's start and end. Measured 0.5-1.7 s on the 2-core VM (4 s
trials took 4.5-5.7 s); the plan is made again with the baseline's measured figure."""

MARGIN = 0.05
"""The share of the time bound kept for what follows the last trial (simplifying and rounding
on the model, restoring the settings, the summary) and for trials that run over their
estimate: the promise is to end within 10 % of the bound."""


@dataclass(frozen=True)
class BudgetPlan:
    """How a tune spends its time.

    `search_end_s`: seconds after the tune's start by which the search's last trial should
    end (inf: no bound); `search_trials`: how many the search expects to run; `points`: how
    many points confirmation measures, the baseline included; `decide`: the length of its
    trials; `end_s`: when the whole tune should end (inf: no bound); `fits`: False when even
    the least tune (two points, screen-length confirmation, one search trial) overruns.
    """

    search_end_s: float
    search_trials: int
    points: int
    rounds: int
    decide: TrialLength
    end_s: float
    screen_cost_s: float
    decide_cost_s: float
    fits: bool = True
    gave_way: str = ""

    def confirm_s(self) -> float:
        """The seconds reserved for confirmation's first `rounds` rounds."""
        return self.points * self.rounds * self.decide_cost_s

    def describe(self) -> str:
        """One line for people: how the time is split and what gave way."""
        line = (f"{self.search_trials} search trials of {self.screen_cost_s:.1f} s, then "
                f"{self.rounds} rounds of {self.points} points of {self.decide_cost_s:.1f} s "
                f"({self.decide.describe()})")  # fmt: skip
        if math.isfinite(self.end_s):
            line += f", within {self.end_s:.0f} s"
        if self.gave_way:
            line += f"; {self.gave_way}"
        return line


def plan_budget(
    total_s: float | None,
    fidelity: Fidelity,
    *,
    budget: int,
    points: int,
    rounds: int,
    baseline_left: int,
    min_search: int,
    overhead_s: float = OVERHEAD_S,
    spent_s: float = 0.0,
) -> BudgetPlan:
    """The plan for a tune bounded by `total_s` seconds (None: by `budget` trials only).

    `points`: the most points confirmation would measure (the baseline and its candidates);
    `budget`: search trials still allowed; `baseline_left`: baseline repeats still to run;
    `spent_s`: seconds already spent (a plan made again mid-search counts from the start, its
    `search_trials` those still to run);
    `min_search`: the fewest search trials worth keeping before the decide length gives way
    (the rules' points and a few of the model's own). Each trial is taken to cost its length
    plus `overhead_s`.
    """
    if points < 2 or rounds < 2 or budget < 0:
        raise ValueError("a plan needs two points and two rounds")
    screen = fidelity.screen.seconds + overhead_s

    def cost(length: TrialLength) -> float:
        return length.seconds + overhead_s

    if total_s is None:
        return BudgetPlan(math.inf, budget, points, rounds, fidelity.decide, math.inf, screen,
                          cost(fidelity.decide))  # fmt: skip
    end = total_s * (1 - MARGIN)
    room = end - spent_s - baseline_left * screen  # for the search and confirmation
    least = min(min_search, budget)
    for k in range(points, 1, -1):
        search = room - k * rounds * cost(fidelity.decide)
        if search >= least * screen:
            trials = min(budget, int(search // screen))
            gave = "" if k == points else f"confirmation measures {k} points, not {points}"
            return BudgetPlan(end - k * rounds * cost(fidelity.decide), trials, k, rounds,
                              fidelity.decide, end, screen, cost(fidelity.decide), True,
                              gave)  # fmt: skip
    # Two points: the decide length shrinks to leave the search its least.
    fit = (room - least * screen) / (2 * rounds) - overhead_s
    if fit >= fidelity.screen.seconds and fidelity.multi:
        decide = shortened(fidelity.decide, fit)
        return BudgetPlan(end - 2 * rounds * cost(decide), least, 2, rounds, decide, end, screen,
                          cost(decide), True,
                          f"confirmation measures 2 points at {decide.describe()}, "
                          f"not {fidelity.decide.describe()}")  # fmt: skip
    # The least tune: screen-length confirmation of one candidate and what search is left
    # (a bound shorter than that, `--time 1` for a quick look, gets the least tune).
    search = room - 2 * rounds * screen
    trials = min(budget, max(1, int(search // screen)))
    gave = "the least tune: 2 points confirmed at the screen length"
    if search < screen:
        needed = end - room + (2 * rounds + 1) * screen
        gave += f", longer than the bound: about {needed:.0f} s"
    return BudgetPlan(end - 2 * rounds * screen, trials, 2, rounds, fidelity.screen, end, screen,
                      screen, search >= screen, gave)  # fmt: skip


def shortened(length: TrialLength, seconds: float) -> TrialLength:
    """`length` scaled down to `seconds`, ramp and measured part alike (never longer)."""
    if seconds >= length.seconds or length.seconds <= 0:
        return length
    scale = seconds / length.seconds
    return replace(length, ramp_s=round(length.ramp_s * scale, 1),
                   runtime_s=round(length.runtime_s * scale, 1),
                   why=f"{length.why}; shortened to fit the time bound".lstrip("; "))  # fmt: skip


def recosted(plan: BudgetPlan, screen: TrialLength, overhead_s: float) -> BudgetPlan:
    """`plan` with a trial's cost beyond its length now `overhead_s`: the same points, rounds
    and decide length, the search's end moved to keep their reserve.

    The shape is chosen once, after the baseline: a plan made afresh mid-search would find the
    search already had its least trials and let it eat the reserve point by point (the main
    job's search ran on until confirmation had 2 points, not 3, and its best lost its
    simplified form).
    """
    screen_cost = screen.seconds + overhead_s
    decide_cost = plan.decide.seconds + overhead_s
    end = plan.end_s - plan.points * plan.rounds * decide_cost
    return replace(plan, search_end_s=end, screen_cost_s=screen_cost, decide_cost_s=decide_cost)
