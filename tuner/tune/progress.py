"""Where a tune is: trial n of about N, the trial's length, and the time left.

N and the time left are estimates from the budget plan (tuner/search/budget.py) and the
trials' measured costs: the search may stop early (its expected improvement below the noise),
a trial far below the baseline is measured again, and confirmation may add a round, so both
move as the tune goes. On a terminal they feed a rich progress bar; piped, one plain line per
trial (tuner/tune/view.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tuner.search.budget import BudgetPlan
from tuner.search.fidelity import TrialLength


@dataclass(frozen=True)
class Remaining:
    """What a tune still has to run: trials of each kind."""

    baseline: int
    search: int
    confirm: int

    @property
    def trials(self) -> int:
        """All trials still to run."""
        return self.baseline + self.search + self.confirm


def remaining(
    plan: BudgetPlan,
    elapsed_s: float,
    *,
    baseline_left: int,
    searched: int,
    confirmed: int,
    searching: bool,
    step_s: float | None = None,
) -> Remaining:
    """The trials left after `searched` search and `confirmed` confirmation trials, at
    `elapsed_s` seconds into the tune. While `searching`, the search runs until its budget
    or its end in the plan, a trial costing `step_s` (default: the plan's screen cost); after
    it, none is left."""
    search = 0
    if searching:
        search = plan.search_trials - searched
        if math.isfinite(plan.search_end_s):
            step = step_s or plan.screen_cost_s
            start = max(elapsed_s, 0.0) + baseline_left * plan.screen_cost_s
            search = min(search, int(max(plan.search_end_s - start, 0.0) // step))
        search = max(search, 0)
    confirm = max(plan.points * plan.rounds - confirmed, 0)
    return Remaining(baseline_left, search, confirm)


def seconds_left(plan: BudgetPlan, left: Remaining, step_s: float | None = None) -> float:
    """The seconds `left` takes at the plan's costs (a search trial at `step_s` when known)."""
    search = step_s or plan.screen_cost_s
    return (left.baseline * plan.screen_cost_s + left.search * search
            + left.confirm * plan.decide_cost_s)  # fmt: skip


@dataclass(frozen=True)
class TrialProgress:
    """One finished trial as progress: its number, the estimated total, its phase and length,
    the seconds it took, what it measured (`figure`, in the objective's terms) and the
    estimated seconds left."""

    number: int
    total: int
    phase: str
    length: TrialLength
    took_s: float
    figure: str
    left_s: float
    note: str = ""

    def line(self) -> str:
        """The trial in one plain line: 'trial 5 of ~24 (search, 1 s + 3 s, took 4.9 s):
        68.2 MB/s; about 1 min 40 s left'."""
        text = (f"trial {self.number} of ~{self.total} ({self.phase}, {self.length.describe()}, "
                f"took {self.took_s:.1f} s): {self.figure}")  # fmt: skip
        if self.note:
            text += f" [{self.note}]"
        return f"{text}; about {duration(self.left_s)} left"


def duration(seconds: float) -> str:
    """'1 min 40 s', '45 s', '0 s'."""
    whole = max(round(seconds), 0)
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"
