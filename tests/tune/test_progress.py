"""Trial n of about N and the time left, from the plan; piped, one plain line per trial."""

from __future__ import annotations

import io

from rich.console import Console

from tuner.search.budget import plan_budget
from tuner.search.fidelity import Fidelity, TrialLength
from tuner.tune.progress import TrialProgress, duration, remaining, seconds_left
from tuner.tune.result import TrialRecord
from tuner.tune.view import TuneView

SCREEN, DECIDE = TrialLength(1.0, 3.0), TrialLength(2.0, 6.0)
PLAN = plan_budget(165, Fidelity(SCREEN, DECIDE), budget=16, points=4, rounds=3,
                   baseline_left=3, min_search=8, overhead_s=1.0)  # fmt: skip


def test_the_search_counts_what_its_time_allows_not_its_whole_budget() -> None:
    # The plan: 3 points of 9 s (81 s) reserved, the search to end at 75.75 s.
    assert (PLAN.points, PLAN.search_trials) == (3, 12)
    start = remaining(PLAN, 0.0, baseline_left=3, searched=0, confirmed=0, searching=True)
    assert (start.baseline, start.search, start.confirm) == (3, 12, 9)
    # 60 s in with 5 search trials done and steps of 6 s: (75.75 - 60) // 6 = 2 left.
    later = remaining(PLAN, 60.0, baseline_left=0, searched=5, confirmed=0, searching=True,
                      step_s=6.0)  # fmt: skip
    assert later.search == 2
    assert seconds_left(PLAN, later, 6.0) == 2 * 6 + 9 * 9


def test_confirmation_counts_down_to_nothing() -> None:
    left = remaining(PLAN, 100.0, baseline_left=0, searched=9, confirmed=4, searching=False)
    assert (left.search, left.confirm, left.trials) == (0, 5, 5)
    done = remaining(PLAN, 150.0, baseline_left=0, searched=9, confirmed=11, searching=False)
    assert done.trials == 0 and seconds_left(PLAN, done) == 0


def progress(number: int, phase: str, note: str = "") -> TrialProgress:
    return TrialProgress(number, 24, phase, DECIDE if phase == "confirm" else SCREEN, 4.93,
                         "68.2 MB/s", 100.4, note)  # fmt: skip


def test_a_line_says_n_of_n_the_length_and_the_time_left() -> None:
    assert progress(5, "search").line() == (
        "trial 5 of ~24 (search, 1 s + 3 s, took 4.9 s): 68.2 MB/s; about 1 min 40 s left"
    )
    assert "[set aside]" in progress(6, "search", "set aside").line()
    assert (duration(59.6), duration(-3), duration(3600)) == ("1 min 0 s", "0 s", "60 min 0 s")


def test_piped_the_view_prints_one_plain_line_per_trial() -> None:
    out = io.StringIO()
    console = Console(file=out, width=40, force_terminal=False)
    with TuneView(console, 16, enabled=console.is_terminal, lines=True) as view:
        for number, phase in enumerate(("baseline", "search", "confirm"), start=1):
            view.trial(TrialRecord(number, {("block.read_ahead_kb", "loop0"): 4096}, 68.2, None,
                                   4.9, phase))  # fmt: skip
            view.progress(progress(number, phase))
    lines = out.getvalue().splitlines()
    # Whole lines at 40 columns (no wrapping), nothing but printable text.
    assert [line.split(" (")[0] for line in lines] == ["trial 1 of ~24", "trial 2 of ~24",
                                                       "trial 3 of ~24"]  # fmt: skip
    assert all(line.isprintable() for line in lines)
    assert "confirm, 2 s + 6 s" in lines[2]


def test_on_a_terminal_the_view_prints_no_lines_and_without_either_nothing() -> None:
    out = io.StringIO()
    quiet = Console(file=out, force_terminal=False)
    with TuneView(quiet, 16, enabled=False) as view:
        view.progress(progress(1, "baseline"))
    assert out.getvalue() == ""
